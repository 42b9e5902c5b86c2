// Which of these IDs may have changed in the last hours? Usage:
//   node clients/js/examples/changed.js [server] [id ...]
// (server defaults to $BLOOMCAST_SERVER or http://127.0.0.1:8080; IDs to user:1 user:2 nobody)
import { Client, StatusError } from "../bloomcast.js";

const [server = process.env.BLOOMCAST_SERVER ?? "http://127.0.0.1:8080", ...args] = process.argv.slice(2);
const ids = args.length ? args : ["user:1", "user:2", "nobody"];
const client = new Client(server);

try {
  const index = await client.index();
  // Three hours back, but never before the server's first hour (that would be a 404).
  const threeHoursAgo = Date.parse(index.current.hour) - 3 * 3600e3;
  const since = new Date(Math.max(threeHoursAgo, Date.parse(index.genesis)));
  for (const change of await client.changedSince(ids, since)) {
    console.log(`${change.from} .. ${change.to}: ${change.ids.join(" ")}`);
  }
  const hour = await client.hour(index.current.hour);
  console.log(`current hour: ${hour.meta.count} IDs, m=${hour.meta.m}, k=${hour.meta.k}, fpp=${hour.meta.fpp.toExponential(2)}`);
} catch (e) {
  if (e instanceof StatusError) console.error(`server said ${e.status} ${e.code}: ${e.serverMessage}`);
  else console.error(e.message);
  process.exitCode = 1;
}
