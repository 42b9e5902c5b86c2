// Starts the real `bloomcast serve` binary for a test: a temporary data directory, a
// chosen ingest token, a free port (BLOOMCAST_LISTEN=127.0.0.1:0; the port is read from
// the "listening addr=" log line). The binary is $BLOOMCAST_BIN or the workspace's
// target/debug (then target/release) build; without one the tests skip, unless CI=true.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const TOKEN = "js-client-test-token";
const root = fileURLToPath(new URL("../../../", import.meta.url));

/** The binary to run, or null. */
export function binary() {
  const candidates = [process.env.BLOOMCAST_BIN, join(root, "target/debug/bloomcast"), join(root, "target/release/bloomcast")];
  return candidates.find((p) => p && existsSync(p)) ?? null;
}

/** The path of the workspace's example `name` (target/debug/examples, then release), or null. */
export function example(name) {
  const candidates = ["debug", "release"].map((profile) => join(root, `target/${profile}/examples/${name}`));
  return candidates.find((p) => existsSync(p)) ?? null;
}

/** `false`, or why the test must skip (with how to enable it). Under CI=true it throws instead. */
export function skipUnless(requirement, reason) {
  if (requirement) return false;
  if (process.env.CI === "true") throw new Error(`${reason} (CI=true: required)`);
  return reason;
}

export const NO_BINARY =
  "no bloomcast binary: run `cargo build` first (or set BLOOMCAST_BIN=/path/to/bloomcast)";

/**
 * Runs `bloomcast serve`; resolves to `{base, stop(), dir}` once it listens.
 * `dir` reuses a data directory (to restart over the same store); `env` adds variables.
 * `stop()` removes the data directory it made, unless `{ keep: true }`; one it was given
 * only with `{ purge: true }` (the last server over a store started by another).
 */
export async function startServer({ dir, env = {} } = {}) {
  const bin = binary();
  if (!bin) throw new Error(NO_BINARY);
  const data = dir ?? mkdtempSync(join(tmpdir(), "bloomcast-js-"));
  const child = spawn(bin, ["serve"], {
    env: {
      ...process.env,
      BLOOMCAST_LISTEN: "127.0.0.1:0",
      BLOOMCAST_DATA_DIR: data,
      BLOOMCAST_INGEST_TOKENS: TOKEN,
      RUST_LOG: "info",
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const base = await new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${seen}`)), 30000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      seen += chunk;
      const m = /listening addr=(\S+)/.exec(seen);
      if (m) {
        clearTimeout(timer);
        resolve(`http://${m[1]}`);
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${seen}`));
    });
  });
  child.stderr.resume();
  const stop = async ({ keep = false, purge = false } = {}) => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    if (purge || (!keep && !dir)) rmSync(data, { recursive: true, force: true });
  };
  return { base, stop, dir: data };
}
