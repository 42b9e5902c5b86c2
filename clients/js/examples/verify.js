// Verify the hour chain from an hour on, and every listed hour's filter, against the
// publisher's key (as `bloomcast verify` and `bloomcast-py verify`). Usage:
//   node clients/js/examples/verify.js SERVER PUBKEY SINCE
// (PUBKEY: 64 hex digits, `public_key` of SERVER/.well-known/bloomcast.json; SINCE: an
// RFC 3339 hour). Exits 1 naming the first hour that fails.
import { Client, BloomcastError } from "../bloomcast.js";

const [server, pubkey, since] = process.argv.slice(2);
if (!server || !pubkey || !since) {
  console.error("usage: node verify.js SERVER PUBKEY SINCE");
  process.exit(2);
}
try {
  const hours = await new Client(server, { pubkey }).verifyChain(since);
  console.log(hours.length ? `verified ${hours.length} hours, ${hours[0]} .. ${hours.at(-1)}` : "no sealed hour to verify");
} catch (e) {
  if (!(e instanceof BloomcastError || e instanceof TypeError)) throw e;
  console.error(`${e.name}: ${e.message}`);
  process.exitCode = 1;
}
