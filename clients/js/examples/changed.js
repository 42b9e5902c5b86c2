// Which of these IDs may have changed in the last hours? Usage:
//   node clients/js/examples/changed.js [server] [id ...]
// (server defaults to $BLOOMCAST_SERVER or http://127.0.0.1:8080; IDs to user:1 user:2 nobody)
import { Client, StatusError } from "../bloomcast.js";

const [server = process.env.BLOOMCAST_SERVER ?? "http://127.0.0.1:8080", ...args] = process.argv.slice(2);
const ids = args.length ? args : ["user:1", "user:2", "nobody"];
const client = new Client(server);

try {
  // The last three hours, but never before the server's first hour (that would be a 404).
  const { since, clamped } = await client.window(3);
  if (clamped) console.error(`note: the server has hours from ${since} on`);
  for (const change of await client.changedSince(ids, since)) {
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
