// Verify the hour chain from an hour on, and every listed hour's filter, against the
// publisher's key (as `bloomcast verify` and `bloomcast-py verify`), with the keys its
// signed successions lead to and its checkpoint. Usage:
//   node clients/js/examples/verify.js SERVER PUBKEY SINCE
// (PUBKEY: 64 hex digits, `public_key` of SERVER/.well-known/bloomcast.json, obtained out
// of band; SINCE: an hour as the CLIs take it, 2008-09-03T05, 2008/09/03/05 or RFC 3339). Exit status: 0 verified, 1 refused (naming the first
// hour or the key that fails), 2 usage, 3 verified but stale (the source's newest hour is
// more than the publication lag bound behind this machine's clock, or it withholds hours
// its publisher's checkpoint names).
import { Client, BloomcastError, StaleError } from "../bloomcast.js";

const [server, pubkey, since] = process.argv.slice(2);
if (!server || !pubkey || !since) {
  console.error("usage: node verify.js SERVER PUBKEY SINCE");
  process.exit(2);
}
try {
  let hours;
  try {
    hours = await new Client(server, { pubkey }).verifyChain(since);
  } catch (e) {
    if (!(e instanceof StaleError)) throw e;
    console.error(`stale: ${e.message}`);
    hours = e.answer;
    process.exitCode = 3;
  }
  console.log(hours.length ? `verified ${hours.length} hours, ${hours[0]} .. ${hours.at(-1)}` : "no sealed hour to verify");
  if (hours.checkpoint) console.log(`checkpoint: ${hours.checkpoint.hour}, made ${new Date(hours.checkpoint.made * 1000).toISOString()}`);
} catch (e) {
  if (!(e instanceof BloomcastError || e instanceof TypeError)) throw e;
  console.error(`${e.name}: ${e.message}`);
  process.exitCode = 1;
}
