// Checks weaver's generated messages with an independent real encoder, @initia/initia.js
// (pinned in package.json): each {msg_type_url, msg} is built through the SDK's amino and
// data routes, packed into a TxBody, encoded, decoded and compared with our JSON with strict
// types. Because the SDK silently drops unknown keys and accepts numbers, bad amounts and bad
// addresses, the schema is checked here too: required and allowed keys, uint64/Int as digit
// strings, bech32 prefixes, a non-zero timeout on every transfer, canonical base64 `data`.
//
// usage: node check.mjs FILE   (FILE: JSON array of {name, msg_type_url, msg, prefixes, data})
import { readFileSync } from 'node:fs';
import * as sdk from '@initia/initia.js';
import txProto from '@initia/initia.proto/cosmos/tx/v1beta1/tx.js';
import { bech32 } from 'bech32';

const SPEC = {
  '/ibc.applications.transfer.v1.MsgTransfer': {
    amino: 'cosmos-sdk/MsgTransfer',
    keys: ['source_port', 'source_channel', 'token', 'sender', 'receiver', 'timeout_height', 'timeout_timestamp', 'memo'],
    required: ['source_port', 'source_channel', 'token', 'sender', 'receiver', 'timeout_timestamp'],
    uints: ['timeout_timestamp', 'token.amount'],
    positive: ['token.amount', 'timeout_timestamp'],
    addresses: ['sender', 'receiver'],
  },
  '/opinit.ophost.v1.MsgInitiateTokenDeposit': {
    amino: 'ophost/MsgInitiateTokenDeposit',
    keys: ['sender', 'bridge_id', 'to', 'amount', 'data'],
    required: ['sender', 'bridge_id', 'to', 'amount'],
    uints: ['bridge_id', 'amount.amount'],
    positive: ['amount.amount', 'bridge_id'],
    addresses: ['sender', 'to'],
  },
  '/opinit.opchild.v1.MsgInitiateTokenWithdrawal': {
    amino: 'opchild/MsgInitiateTokenWithdrawal',
    keys: ['sender', 'to', 'amount'],
    required: ['sender', 'to', 'amount'],
    uints: ['amount.amount'],
    positive: ['amount.amount'],
    addresses: ['sender', 'to'],
  },
  '/initia.move.v1.MsgExecute': {
    amino: 'move/MsgExecute',
    keys: ['sender', 'module_address', 'module_name', 'function_name', 'type_args', 'args'],
    required: ['sender', 'module_address', 'module_name', 'function_name', 'args'],
    uints: [],
    positive: [],
    addresses: ['sender'],
  },
};

const DIGITS = /^(0|[1-9][0-9]*)$/;
const get = (obj, path) => path.split('.').reduce((o, k) => (o == null ? undefined : o[k]), obj);

// Drops proto3 defaults so a JSON form and its round trip compare equal: "", "0", [], {}.
function normalize(value) {
  if (Array.isArray(value)) return value.length ? value.map(normalize) : undefined;
  if (value && typeof value === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(value)) {
      const n = normalize(v);
      if (n !== undefined) out[k] = n;
    }
    return Object.keys(out).length ? out : undefined;
  }
  if (value === '' || value === '0') return undefined;
  return value;
}

// Strict deep equality: a number where a string belongs is a difference.
function diff(a, b, path = '') {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b)) return `${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  if (a && typeof a === 'object') {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      if (!(k in a)) return `${path}.${k}: added by the SDK (${JSON.stringify(b[k])})`;
      if (!(k in b)) return `${path}.${k}: DROPPED by the SDK (unknown or renamed key?)`;
      const d = diff(a[k], b[k], `${path}.${k}`);
      if (d) return d;
    }
    return null;
  }
  return a === b ? null : `${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
}

function checkAddress(text, prefix, where) {
  let decoded;
  try {
    decoded = bech32.decode(text, 100);
  } catch (e) {
    throw new Error(`${where}: ${JSON.stringify(text)} is not bech32 (${e.message})`);
  }
  if (prefix && decoded.prefix !== prefix) throw new Error(`${where}: prefix ${decoded.prefix}, expected ${prefix}`);
  const bytes = bech32.fromWords(decoded.words);
  if (bytes.length !== 20 && bytes.length !== 32) throw new Error(`${where}: ${bytes.length}-byte address`);
}

function checkForward(memo, where) {
  if (memo === '' || memo === undefined) return;
  const parsed = JSON.parse(memo);
  let node = parsed.forward;
  if (!node) throw new Error(`${where}: memo is not a packet-forward memo`);
  for (let depth = 0; node; depth += 1) {
    for (const key of ['receiver', 'port', 'channel', 'timeout', 'retries']) {
      if (node[key] === undefined) throw new Error(`${where}: forward[${depth}] lacks ${key}`);
    }
    if (typeof node.port !== 'string' || !/^channel-[0-9]+$/.test(node.channel)) throw new Error(`${where}: forward[${depth}] bad port/channel`);
    checkAddress(node.receiver, undefined, `${where}: forward[${depth}].receiver`);
    node = node.next ? (typeof node.next === 'string' ? JSON.parse(node.next) : node.next).forward : undefined;
  }
}

function checkOne(entry) {
  const spec = SPEC[entry.msg_type_url];
  if (!spec) throw new Error(`no SDK message for ${entry.msg_type_url}`);
  if (typeof entry.msg !== 'string') throw new Error('msg must be a JSON string');
  const msg = JSON.parse(entry.msg);
  for (const key of Object.keys(msg)) if (!spec.keys.includes(key)) throw new Error(`unknown key ${key}`);
  for (const key of spec.required) if (msg[key] === undefined) throw new Error(`missing required key ${key}`);
  for (const path of spec.uints) {
    const v = get(msg, path);
    if (typeof v !== 'string' || !DIGITS.test(v)) throw new Error(`${path} must be a digit string, got ${JSON.stringify(v)}`);
  }
  for (const path of spec.positive) if (get(msg, path) === '0') throw new Error(`${path} must be positive`);
  for (const field of spec.addresses) checkAddress(msg[field], entry.prefixes?.[field], field);
  if (entry.msg_type_url.endsWith('MsgTransfer')) checkForward(msg.memo, 'memo');
  if (msg.data !== undefined) {
    const bytes = Buffer.from(msg.data, 'base64');
    if (bytes.toString('base64') !== msg.data) throw new Error('data is not canonical base64');
    if (entry.data !== undefined && msg.data !== entry.data) throw new Error('data does not carry the expected payload');
  }
  if (msg.args) {
    for (const [i, arg] of msg.args.entries()) {
      if (Buffer.from(arg, 'base64').toString('base64') !== arg) throw new Error(`args[${i}] is not canonical base64`);
    }
  }

  // Amino route: build, encode in a TxBody, decode, compare.
  const built = sdk.Msg.fromAmino({ type: spec.amino, value: msg });
  if (!built) throw new Error(`the SDK does not know amino type ${spec.amino}`);
  const bytes = new sdk.TxBody([built], 'weaver').toBytes();
  const decoded = txProto.TxBody.decode(bytes);
  if (decoded.messages[0].typeUrl !== entry.msg_type_url) throw new Error(`encoded as ${decoded.messages[0].typeUrl}`);
  const back = sdk.TxBody.fromProto(decoded).messages[0];
  const amino = back.toAmino();
  if (amino.type !== spec.amino) throw new Error(`decoded as amino ${amino.type}`);
  const d1 = diff(normalize(msg), normalize(amino.value));
  if (d1) throw new Error(`amino round trip: ${d1}`);

  // Data route (explicit zero height instead of {}), which takes another code path.
  const data = { '@type': entry.msg_type_url, ...msg };
  if (data.timeout_height !== undefined) data.timeout_height = { revision_number: '0', revision_height: '0' };
  const viaData = sdk.Msg.fromData(data);
  if (!viaData) throw new Error('the SDK does not know the type URL (data route)');
  const again = sdk.TxBody.fromProto(txProto.TxBody.decode(new sdk.TxBody([viaData]).toBytes())).messages[0].toData();
  delete again['@type'];
  delete data['@type'];
  const d2 = diff(normalize(data), normalize(again));
  if (d2) throw new Error(`data round trip: ${d2}`);
}

const entries = JSON.parse(readFileSync(process.argv[2], 'utf8'));
let failed = 0;
for (const entry of entries) {
  try {
    checkOne(entry);
    console.log(`ok    ${entry.name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL  ${entry.name}: ${e.message}`);
  }
}
console.log(`${entries.length - failed} of ${entries.length} messages accepted`);
process.exit(failed ? 1 : 0);
