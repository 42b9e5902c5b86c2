// A real server with sealed hours behind it, for live tests: batch i of IDs is published
// by a start with the clock shifted back (batches.length - i) hours, each start sealing
// (and signing) the hour before; the last start runs on the real clock and publishes
// `open` into its open hour. `between(i, dir)` runs after start i stops (e.g. `bloomcast
// rotate-key`, or a key file replaced by hand). Each restart is an hour past the last
// heartbeat, on purpose (BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS above that).
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { binary, startServer, TOKEN } from "./server.js";

const TOLERANCE = { BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS: "7200" };

/** POSTs `{ids}` to `path` (`/updates`, `/universe`) of the server at `base` with its
 * ingest token; resolves to its answer. */
async function postIds(base, path, ids) {
  const response = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ ids }),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** Publishes `ids` to the server at `base`; resolves to the receipt's hour. */
export async function ingest(base, ids) {
  return (await postIds(base, "/updates", ids)).hour;
}

/** Runs `bloomcast <args>` configured as the server over `dir`; resolves to its output. */
export function bloomcast(args, dir) {
  return new Promise((resolve, reject) =>
    execFile(binary(), args, { env: { ...process.env, BLOOMCAST_DATA_DIR: dir, BLOOMCAST_INGEST_TOKENS: TOKEN } }, (error, stdout, stderr) =>
      error ? reject(new Error(`bloomcast ${args.join(" ")}: ${error.message}\n${stderr}`)) : resolve({ stdout, stderr }),
    ),
  );
}

/** Registers `ids` in the universe of the server at `base` (`POST /universe`, PROTOCOL.md
 * section 14); resolves to its answer. */
export function register(base, ids) {
  return postIds(base, "/universe", ids);
}

/**
 * Resolves to `{server, sealed, open, dir, stop()}`: `sealed` the hours of `batches` (RFC
 * 3339, oldest first), `open` the current hour, `server` running on the real clock.
 * `env`: more variables for every start (e.g. `BLOOMCAST_CAPACITY`). `universe`: IDs
 * registered (`POST /universe`) in the first hour, before its batch: every sealed hour
 * then has an exact body.
 */
export async function startHistory(batches, open = [], { between = async () => {}, env = {}, universe = null } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "bloomcast-js-history-"));
  const sealed = [];
  try {
    for (const [i, ids] of batches.entries()) {
      const offset = String(-3600 * (batches.length - i));
      const past = await startServer({ dir, env: { ...env, BLOOMCAST_CLOCK_OFFSET_SECONDS: offset, ...TOLERANCE } });
      if (i === 0 && universe) await register(past.base, universe);
      sealed.push(await ingest(past.base, ids));
      await past.stop();
      await between(i, dir);
    }
    const server = await startServer({ dir, env: { ...env, ...TOLERANCE } });
    const current = open.length ? await ingest(server.base, open) : (await (await fetch(`${server.base}/`)).json()).current.hour;
    const stop = async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    };
    return { server, sealed, open: current, dir, stop };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}
