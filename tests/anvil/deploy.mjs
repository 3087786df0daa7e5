// Compiles contracts/*.sol with the pinned solc, deploys them to a running Anvil node with its
// unlocked dev accounts, sends the txs weaver's EthClient test reads, and prints one JSON line:
// addresses, tx hashes and blocks, the balances expected after each block, and the call
// trees expected from the callTracer.
//
//   node deploy.mjs http://127.0.0.1:PORT
//
// Blocks are mined by hand (automine off), so a block holds several txs:
//   deploy:    Token, Vault, Hop, Router (creations)
//   transfers: ERC-20 transfers (one from a second dev account), a plain ether send
//   routes:    Router.route (an inner revert caught), Router.strict (reverts as a whole,
//              sent with an explicit gas limit), one more transfer after it

import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import solc from 'solc'

const url = process.argv[2]
if (!url) {
  console.error('usage: node deploy.mjs http://127.0.0.1:PORT')
  process.exit(2)
}
const here = dirname(fileURLToPath(import.meta.url))

// --- compile ---------------------------------------------------------------------------

function compile() {
  const dir = join(here, 'contracts')
  const sources = {}
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.sol')).sort()) {
    sources[file] = { content: readFileSync(join(dir, file), 'utf8') }
  }
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      evmVersion: 'cancun',
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.methodIdentifiers'] } },
    },
  }
  const output = JSON.parse(solc.compile(JSON.stringify(input)))
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error')
  if (errors.length > 0) {
    throw new Error('solc: ' + errors.map((e) => e.formattedMessage).join('\n'))
  }
  const contracts = {}
  for (const file of Object.keys(output.contracts)) {
    for (const [name, c] of Object.entries(output.contracts[file])) {
      contracts[name] = { bytecode: '0x' + c.evm.bytecode.object, selectors: c.evm.methodIdentifiers }
    }
  }
  return contracts
}

// --- ABI encoding (address, uint256, string: all these contracts take) ------------------

const word = (n) => BigInt(n).toString(16).padStart(64, '0')
const addressWord = (a) => a.toLowerCase().replace(/^0x/, '').padStart(64, '0')

function encode(types, values) {
  const heads = []
  const tails = []
  let tailBytes = types.length * 32
  types.forEach((type, i) => {
    const v = values[i]
    if (type === 'address') heads.push(addressWord(v))
    else if (type === 'uint256') heads.push(word(v))
    else if (type === 'string') {
      const bytes = Buffer.from(v, 'utf8')
      const padded = bytes.toString('hex').padEnd(Math.ceil(bytes.length / 32) * 64, '0')
      heads.push(word(tailBytes))
      tails.push(word(bytes.length) + padded)
      tailBytes += 32 + padded.length / 2
    } else throw new Error(`cannot encode ${type}`)
  })
  return heads.join('') + tails.join('')
}

function callData(contract, signature, values) {
  const selector = contract.selectors[signature]
  if (!selector) throw new Error(`no ${signature}`)
  const types = signature.slice(signature.indexOf('(') + 1, -1).split(',').filter(Boolean)
  return '0x' + selector + encode(types, values)
}

// --- JSON-RPC ---------------------------------------------------------------------------

let id = 0
async function rpc(method, params = []) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
    signal: AbortSignal.timeout(30_000),
  })
  const answer = await response.json()
  if (answer.error) throw new Error(`${method}: ${JSON.stringify(answer.error)}`)
  return answer.result
}

const hex = (n) => '0x' + BigInt(n).toString(16)
const nonces = {}
async function send(from, to, data, gas, value = 0n) {
  nonces[from] ??= BigInt(await rpc('eth_getTransactionCount', [from, 'pending']))
  const tx = { from, data, gas: hex(gas), value: hex(value), nonce: hex(nonces[from]++) }
  if (to) tx.to = to
  return rpc('eth_sendTransaction', [tx])
}

/// Mines the pending txs into one block; their receipts, in the order given.
async function mine(hashes) {
  const before = BigInt(await rpc('eth_blockNumber'))
  await rpc('evm_mine')
  const block = await rpc('eth_getBlockByNumber', [hex(before + 1n), false])
  const wanted = JSON.stringify(hashes)
  if (JSON.stringify(block.transactions) !== wanted) {
    throw new Error(`block ${before + 1n} holds ${JSON.stringify(block.transactions)}, not ${wanted}`)
  }
  return Promise.all(hashes.map((h) => rpc('eth_getTransactionReceipt', [h])))
}

// --- the scenario -----------------------------------------------------------------------

const E18 = 10n ** 18n
const TOO_MUCH = 10n ** 30n // more than the vault ever holds
const compiled = compile()
const accounts = (await rpc('eth_accounts')).map((a) => a.toLowerCase())
const [deployer, holder1, holder2] = accounts
// Accounts that only ever receive: no key, seen only in logs and call inputs.
const holder3 = '0x00000000000000000000000000000000c0ffee01'
const holder4 = '0x00000000000000000000000000000000c0ffee02'
await rpc('evm_setAutomine', [false])

const txs = []
const record = (name, block, receipt, expect) => {
  if (receipt.status !== (expect.reverted ? '0x0' : '0x1')) {
    throw new Error(`${name}: status ${receipt.status}, expected ${expect.reverted ? 'a revert' : 'success'}`)
  }
  txs.push({ name, hash: receipt.transactionHash, block, from: receipt.from.toLowerCase(), status: receipt.status, trace: expect.trace })
}
const frame = (type, from, to, extra = {}) => ({ type, from, to, reverted: false, calls: [], ...extra })

// Block 1: the contracts.
const supply = 1_000_000n * E18
const order = ['Token', 'Vault', 'Hop', 'Router']
const creations = []
for (const name of order) {
  const args = name === 'Token' ? encode(['string', 'string', 'uint256'], ['Weaver Test', 'WVT', supply]) : ''
  creations.push(await send(deployer, null, compiled[name].bytecode + args, 3_000_000))
}
let receipts = await mine(creations)
const deployBlock = Number(BigInt(receipts[0].blockNumber))
const contracts = {}
order.forEach((name, i) => {
  contracts[name.toLowerCase()] = receipts[i].contractAddress.toLowerCase()
  record(`deploy ${name}`, deployBlock, receipts[i], { trace: frame('CREATE', deployer, contracts[name.toLowerCase()]) })
})
const { token, vault, hop, router } = contracts
const Token = compiled.Token
const Router = compiled.Router

// The ledger the node must end up with, kept here by plain arithmetic.
const ledger = new Map([[deployer, supply]])
const move = (from, to, value) => {
  ledger.set(from, (ledger.get(from) ?? 0n) - value)
  ledger.set(to, (ledger.get(to) ?? 0n) + value)
}
const holders = [deployer, holder1, holder2, holder3, holder4, vault, hop, router]
const snapshot = () => Object.fromEntries(holders.map((h) => [h, (ledger.get(h) ?? 0n).toString()]))
const balances = {}

// Block 2: transfers.
const transfers = [
  [deployer, holder1, 1000n * E18],
  [deployer, holder2, 250n * E18],
  [deployer, vault, 5000n * E18],
  [holder1, holder3, 100n * E18],
]
const hashes = []
for (const [from, to, value] of transfers) {
  hashes.push(await send(from, token, callData(Token, 'transfer(address,uint256)', [to, value]), 200_000))
}
const etherSent = 3n * E18
hashes.push(await send(deployer, holder3, '0x', 21_000, etherSent))
receipts = await mine(hashes)
const transferBlock = deployBlock + 1
transfers.forEach(([from, to, value], i) => {
  move(from, to, value)
  record(`transfer ${i}`, transferBlock, receipts[i], { trace: frame('CALL', from, token) })
})
record('ether send', transferBlock, receipts[4], { trace: frame('CALL', deployer, holder3, { value: hex(etherSent) }) })
balances[transferBlock] = snapshot()

// Block 3: the router, one inner revert caught, then a tx that reverts as a whole.
const paid = 300n * E18
const routeValue = 2n * E18
const routeArgs = [hop, vault, token, holder4, paid, TOO_MUCH]
const strictArgs = [hop, vault, token, holder1, 7n * E18, TOO_MUCH]
const sig = '(address,address,address,address,uint256,uint256)'
const routeHash = await send(holder2, router, callData(Router, 'route' + sig, routeArgs), 1_000_000, routeValue)
const strictHash = await send(deployer, router, callData(Router, 'strict' + sig, strictArgs), 1_000_000)
const lastHash = await send(holder1, token, callData(Token, 'transfer(address,uint256)', [holder4, 50n * E18]), 200_000)
receipts = await mine([routeHash, strictHash, lastHash])
const routeBlock = transferBlock + 1

// hop -> vault -> token, every frame reverted or none.
const relay = (reverted) =>
  frame('CALL', router, hop, {
    reverted,
    calls: [frame('CALL', hop, vault, { reverted, calls: [frame('CALL', vault, token, { reverted })] })],
  })
record('route (inner revert caught)', routeBlock, receipts[0], {
  trace: frame('CALL', holder2, router, {
    value: hex(routeValue),
    calls: [
      frame('STATICCALL', router, token),
      relay(false),
      relay(true),
      frame('CALL', router, holder4, { value: hex(routeValue) }),
    ],
  }),
})
move(vault, holder4, paid)
record('strict (reverts as a whole)', routeBlock, receipts[1], {
  reverted: true,
  trace: frame('CALL', deployer, router, { reverted: true, calls: [relay(false), relay(true)] }),
})
record('transfer after the revert', routeBlock, receipts[2], { trace: frame('CALL', holder1, token) })
move(holder1, holder4, 50n * E18)
balances[routeBlock] = snapshot()

await rpc('evm_setAutomine', [true])

console.log(
  JSON.stringify({
    chainId: Number(BigInt(await rpc('eth_chainId'))),
    accounts: { deployer, holder1, holder2, holder3, holder4 },
    contracts,
    blocks: { deploy: deployBlock, transfers: transferBlock, routes: routeBlock },
    holders,
    txs,
    balances,
    caughtReason: 'Token: balance too low',
  }),
)
