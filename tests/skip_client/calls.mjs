// Drives weaver's router with the real @skip-go/client SDK (as a wallet would): chains,
// assets, route, messages and an error. Prints one JSON summary for the Rust test to check.
//   usage: node calls.mjs http://127.0.0.1:PORT L2_DENOM
import { setApiOptions, chains, assets, route, messages } from '@skip-go/client';

const [apiUrl, l2Denom] = process.argv.slice(2);
setApiOptions({ apiUrl });
const summary = {};

const chainList = await chains({});
summary.chainIds = chainList.map((c) => c.chainId).sort();

const assetMap = await assets({ chainIds: ['cabal-1'] });
summary.assetChains = Object.keys(assetMap);
summary.cabalSymbols = assetMap['cabal-1'].map((a) => a.symbol).sort();

const found = await route({
  amountIn: '1000000',
  sourceAssetChainId: 'interwoven-1',
  sourceAssetDenom: 'uinit',
  destAssetChainId: 'civitia-1',
  destAssetDenom: l2Denom,
});
summary.route = {
  amountOut: found.amountOut,
  txsRequired: found.txsRequired,
  requiredChainAddresses: found.requiredChainAddresses,
  operationKeys: found.operations.map((op) => Object.keys(op).filter((k) => !['txIndex', 'amountIn', 'amountOut'].includes(k))),
  bridgeId: found.operations[0].opInitTransfer?.opInitBridgeId,
};

const user = 'init1qyqszqgpqyqszqgpqyqszqgpqyqszqgpu9pdx7';
const signable = await messages({
  amountIn: found.amountIn,
  amountOut: found.amountOut,
  sourceAssetChainId: 'interwoven-1',
  sourceAssetDenom: 'uinit',
  destAssetChainId: 'civitia-1',
  destAssetDenom: l2Denom,
  addressList: found.requiredChainAddresses.map(() => user),
  operations: found.operations,
  slippageTolerancePercent: '1',
});
const tx = signable.txs[0];
summary.msgs = {
  chainId: tx.cosmosTx?.chainId,
  signer: tx.cosmosTx?.signerAddress,
  typeUrls: tx.cosmosTx?.msgs.map((m) => m.msgTypeUrl),
  msg: JSON.parse(tx.cosmosTx?.msgs[0].msg ?? '{}'),
  minAmountOut: signable.minAmountOut,
};

try {
  await route({ amountIn: '1', sourceAssetChainId: 'nowhere-1', sourceAssetDenom: 'x', destAssetChainId: 'civitia-1', destAssetDenom: l2Denom });
  summary.error = 'no error';
} catch (e) {
  summary.error = { message: e.message, code: e.code };
}
console.log(JSON.stringify(summary));
