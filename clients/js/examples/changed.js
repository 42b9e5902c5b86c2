// Which of these IDs may have changed in the last hours? Usage:
//   node clients/js/examples/changed.js [--accept-stale] [server] [id ...]
// (server defaults to $BLOOMCAST_SERVER or http://127.0.0.1:8080; IDs to user:1 user:2 nobody)
// Exit status: 0 answered, 1 error, 3 answered but stale (the source's newest hour is more
// than the publication lag bound behind this machine's clock: newer changes were not seen),
// unless --accept-stale (then 0, and the note on stderr all the same).
import { Client, StatusError, StaleError } from "../bloomcast.js";

const argv = process.argv.slice(2);
const acceptStale = argv.includes("--accept-stale");
const [server = process.env.BLOOMCAST_SERVER ?? "http://127.0.0.1:8080", ...args] = argv.filter((a) => a !== "--accept-stale");
const ids = args.length ? args : ["user:1", "user:2", "nobody"];
const client = new Client(server);

try {
  // The last three hours, but never before the server's first hour (that would be a 404).
  const { since, clamped } = await client.window(3);
  if (clamped) console.error(`note: the server has hours from ${since} on`);
  let changes;
  let stale;
  try {
    changes = await client.changedSince(ids, since, { acceptStale });
    stale = changes.stale;
  } catch (e) {
    if (!(e instanceof StaleError)) throw e;
    [changes, stale] = [e.answer, e];
    process.exitCode = 3;
  }
  if (stale) console.error(`stale: ${stale.message}`);
  console.error(`hours read: ${changes.from} .. ${changes.to}`);
  for (const change of changes) {
    console.log(`${change.from} .. ${change.to}: ${change.ids.join(" ")}`);
  }
  const index = await client.index();
  const hour = await client.hour(index.current.hour);
  console.log(`current hour: ${hour.meta.count} IDs, m=${hour.meta.m}, k=${hour.meta.k}, fpp=${hour.meta.fpp.toExponential(2)}`);
} catch (e) {
  if (e instanceof StatusError) console.error(`server said ${e.status} ${e.code}: ${e.serverMessage}`);
  else console.error(e.message);
  process.exitCode = 1;
}
