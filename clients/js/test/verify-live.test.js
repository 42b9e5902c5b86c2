// Verification against a real server: an hour ingested with the server's clock shifted
// back an hour, then sealed and signed once the server runs on the real clock; the
// client with the published key verifies it, its chain and the checkpoint, and with a
// key the server's key list does not name refuses the list, naming that key.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client, VerificationError } from "../bloomcast.js";
import { startServer, binary, skipUnless, NO_BINARY, TOKEN } from "../support/server.js";

const skip = skipUnless(binary(), NO_BINARY);
const OTHER_KEY = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"; // RFC 8032 test 2
const ids = Array.from({ length: 50 }, (_, i) => `signed:${i}`);
let server;
let sealed;
let publicKey;

before(async () => {
  if (skip) return;
  const past = await startServer({ env: { BLOOMCAST_CLOCK_OFFSET_SECONDS: "-3600" } });
  sealed = (await new Client(past.base, { token: TOKEN }).ingest(ids)).hour;
  await past.stop({ keep: true });
  // Restarted an hour past its last heartbeat on purpose: a tolerance above that lets the
  // start follow the clock (further past, a start is held as a jump: docs/RELIABILITY.md).
  server = await startServer({ dir: past.dir, env: { BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS: "7200" } });
  publicKey = (await (await fetch(`${server.base}/.well-known/bloomcast.json`)).json()).public_key;
});

after(async () => {
  await server?.stop({ purge: true });
});

test("a sealed hour verifies under the published key, in every representation", { skip }, async () => {
  for (const repr of ["json", "hex", "bin"]) {
    const fetched = await new Client(server.base, { repr, pubkey: publicKey }).hour(sealed);
    assert.equal(fetched.meta.complete, true, repr);
    for (const id of ids) assert.ok(await fetched.mayContain(id), `${repr}: ${id}`);
  }
});

test("verifyChain verifies the sealed hour's chain and filter, and the checkpoint naming it", { skip }, async () => {
  const verified = await new Client(server.base, { pubkey: publicKey }).verifyChain(sealed);
  assert.equal(verified[0], sealed);
  assert.equal(verified.checkpoint.hour, sealed);
  assert.ok(Math.abs(Date.now() / 1000 - verified.checkpoint.made) < 120, JSON.stringify(verified.checkpoint));
  assert.equal(verified.stale, null);
});

test("a client given a key the server's list does not name refuses the list, naming that key", { skip }, async () => {
  const client = new Client(server.base, { pubkey: OTHER_KEY });
  await assert.rejects(client.hour(sealed), (e) => e instanceof VerificationError && e.message.includes("does not list the key you trust (39f713d0a644253f)"));
});

// examples/verify.js, as its usage line runs it: exit 0 and the hours it verified; with
// another key, exit 1 naming it.
test("examples/verify.js verifies the chain, and refuses another key naming it", { skip }, async () => {
  const { execFile } = await import("node:child_process");
  const run = (key) =>
    new Promise((resolve) => {
      const script = new URL("../examples/verify.js", import.meta.url).pathname;
      execFile(process.execPath, [script, server.base, key, sealed], (error, stdout, stderr) =>
        resolve({ code: error ? error.code : 0, stdout, stderr }),
      );
    });
  const good = await run(publicKey);
  assert.equal(good.code, 0, good.stderr);
  assert.match(good.stdout, new RegExp(`^verified \\d+ hours, ${sealed} \\.\\. `));
  const bad = await run(OTHER_KEY);
  assert.equal(bad.code, 1, bad.stdout);
  assert.match(bad.stderr, /^VerificationError: the publisher's key list is refused: it does not list the key you trust \(39f713d0a644253f\)/);
});
