// Query time per key of the JavaScript client's ribbon decoder, on the bodies that
// `examples/cheapest_bytes --write-bodies DIR` wrote: node ribbon_query.mjs DIR.
// "ID" includes SHA-1 through WebCrypto (async, one digest per call).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Ribbon, keyOf } from "../../clients/js/bloomcast.js";

const KEYS = 50_000;
const dir = process.argv[2];
const files = readdirSync(dir)
  .filter((f) => /^n\d+-r\d+\.ribbon$/.test(f))
  .sort((a, b) => parseInt(a.slice(1)) - parseInt(b.slice(1)));
for (const file of files) {
  const ribbon = Ribbon.fromBytes(readFileSync(join(dir, file)));
  const ids = Array.from({ length: KEYS }, (_, i) => `absent:${i}`);
  let started = performance.now();
  let hits = 0;
  for (const id of ids) if (await ribbon.mayContain(id)) hits++;
  const withHash = ((performance.now() - started) / KEYS) * 1e6;
  const keys = await Promise.all(ids.map(keyOf));
  for (const key of keys) ribbon.containsKey(key); // warm-up: the JIT's optimised code
  started = performance.now();
  let again = 0;
  for (const key of keys) if (ribbon.containsKey(key)) again++;
  const preHashed = ((performance.now() - started) / KEYS) * 1e6;
  if (hits !== again) throw new Error(`${file}: ${hits} != ${again}`);
  console.log(`| JavaScript (Node ${process.versions.node}) | ${ribbon.n} | ${ribbon.r} | ${withHash.toFixed(0)} | ${preHashed.toFixed(0)} |`);
}
