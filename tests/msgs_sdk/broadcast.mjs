// Signs a cosmos_tx of weaver's /v2/fungible/msgs with the real @initia/initia.js (pinned in
// package.json) and broadcasts it to a chain's REST endpoint, as a wallet would: the messages
// go through the SDK's amino route (as in check.mjs), the wallet fetches the account, the
// gas price (opchild params on a rollup, /initia/tx/v1/gas_prices on the L1) and simulates,
// signs (SIGN_MODE_DIRECT) and broadcasts in sync mode, then polls until the tx is included.
//
// usage: node broadcast.mjs FILE
//   FILE: JSON {rest, chain_id, mnemonic, key: "eth"|"classic", msgs: [{msg_type_url, msg}],
//               gas_prices (optional, e.g. "0.015uinit"),
//               gas (optional: a fixed gas limit, no simulation — for a tx meant to fail in
//                    DeliverTx, which a simulation would refuse),
//               sign_only (optional: sign as an op hook — fee {amount: [], gas: 1} — and
//               print {tx_bytes} (base64) without broadcasting),
//               sync (optional: return once CheckTx accepted the tx, height 0, as a wallet
//                     that tracks the tx itself does)}
// prints one JSON line {txhash, code, height, raw_log, fee: [{denom, amount}]} and exits 0;
// on an exception, the error on stderr and a non-zero exit.
import { readFileSync } from 'node:fs';
import * as sdk from '@initia/initia.js';
import { bech32 } from 'bech32';

// The amino types of the messages weaver builds (check.mjs's SPEC).
const AMINO = {
  '/ibc.applications.transfer.v1.MsgTransfer': 'cosmos-sdk/MsgTransfer',
  '/opinit.ophost.v1.MsgInitiateTokenDeposit': 'ophost/MsgInitiateTokenDeposit',
  '/opinit.opchild.v1.MsgInitiateTokenWithdrawal': 'opchild/MsgInitiateTokenWithdrawal',
  '/initia.move.v1.MsgExecute': 'move/MsgExecute',
};

function buildMsg({ msg_type_url: url, msg }) {
  const amino = AMINO[url];
  if (!amino) throw new Error(`no amino type for ${url}`);
  const built = sdk.Msg.fromAmino({ type: amino, value: JSON.parse(msg) });
  if (!built) throw new Error(`the SDK does not know amino type ${amino}`);
  return built;
}

// The key's account on the chain of `sender` (initia.js always says `init1…`; Noble says
// `noble1…` for the same bytes). Refuses a sender the key does not sign for.
function accountOn(key, sender) {
  if (!sender) return key.accAddress;
  const theirs = bech32.decode(sender, 100);
  const ours = bech32.decode(key.accAddress, 100);
  if (Buffer.compare(Buffer.from(theirs.words), Buffer.from(ours.words)) !== 0) {
    throw new Error(`the ${sender} of the messages is not the key's address (${key.accAddress})`);
  }
  return bech32.encode(theirs.prefix, ours.words, 100);
}

async function main() {
  const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
  if (!['eth', 'classic'].includes(input.key)) throw new Error(`key must be eth or classic, got ${input.key}`);
  const key = input.key === 'eth'
    ? new sdk.MnemonicKey({ mnemonic: input.mnemonic })
    : new sdk.MnemonicKey({ mnemonic: input.mnemonic, coinType: 118, eth: false });
  const msgs = input.msgs.map(buildMsg);
  const config = { chainId: input.chain_id };
  if (input.gas_prices) config.gasPrices = input.gas_prices;
  const rest = new sdk.RESTClient(input.rest, config);
  const wallet = rest.wallet(key);
  wallet.setAccountAddress(accountOn(key, JSON.parse(input.msgs[0].msg).sender));

  const options = { msgs };
  if (input.gas) options.gas = String(input.gas);
  if (input.sign_only) {
    // An op hook, as InterwovenKit signs it: fee {amount: [], gas: 1}, not broadcast.
    options.fee = new sdk.Fee(1, []);
    const hook = await wallet.createAndSignTx(options);
    console.log(JSON.stringify({ tx_bytes: Buffer.from(hook.toBytes()).toString("base64") }));
    return;
  }
  const tx = await wallet.createAndSignTx(options);
  const result = input.sync ? await rest.tx.broadcastSync(tx) : await rest.tx.broadcast(tx);
  console.log(JSON.stringify({
    txhash: result.txhash,
    code: result.code ?? 0,
    height: result.height ?? 0,
    raw_log: result.raw_log,
    fee: tx.auth_info.fee.amount.toData(),
  }));
}

main().catch((e) => {
  const body = e?.response?.data ? ` (${JSON.stringify(e.response.data)})` : '';
  console.error(`broadcast failed: ${e?.stack ?? e}${body}`);
  process.exit(1);
});
