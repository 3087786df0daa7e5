// Re-encodes the real txs of a fixture file to their raw bytes with @initia/initia.js, the
// encoder wallets sign with: `Tx.fromData(tx_response.tx).toBytes()`. The LCD answers carry no
// raw bytes; a tx whose re-encoding hashes (sha256) to its recorded txhash can be served by
// a replay node as the block bytes the chain really held.
//
//   node encode_txs.mjs FIXTURES.json OUT.json
//
// OUT: [{file, export, txhash, raw, signer}] with `raw` the base64 bytes, or null (and `why`)
// for a tx that does not re-encode to its hash, and `signer` the address of the first signer
// info's public key as initia.js derives it (secp256k1 and eth_secp256k1 keys).
import { readFileSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { Tx } from "@initia/initia.js";

const [input, output] = process.argv.slice(2);
const fixtures = JSON.parse(readFileSync(input, "utf8"));
const out = [];
for (const [file, exports] of Object.entries(fixtures)) {
  for (const [name, value] of Object.entries(exports)) {
    if (!value || typeof value !== "object" || !value.txhash || !value.tx) continue;
    const entry = { file, export: name, txhash: value.txhash, raw: null, signer: null };
    try {
      const tx = Tx.fromData(value.tx);
      const key = tx.auth_info.signer_infos[0]?.public_key;
      entry.signer = key && typeof key.address === "function" ? key.address() : null;
      const bytes = tx.toBytes();
      const hash = createHash("sha256").update(bytes).digest("hex").toUpperCase();
      if (hash === value.txhash.toUpperCase()) {
        entry.raw = Buffer.from(bytes).toString("base64");
      } else {
        entry.why = `re-encodes to ${hash}`;
      }
    } catch (e) {
      entry.why = String(e && e.message ? e.message : e).slice(0, 200);
    }
    out.push(entry);
  }
}
writeFileSync(output, JSON.stringify(out));
console.log(`${out.filter((e) => e.raw).length} of ${out.length} txs re-encode to their hash`);
