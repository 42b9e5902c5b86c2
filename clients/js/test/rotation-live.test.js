// Keys that rotate, on a real server: H0 signed by key 1; `bloomcast rotate-key`, so H1 is
// signed by key 2, which key 1 vouched for and which acknowledged it; then the key file
// replaced by hand, so H2 (and the open hour) are signed by key 3, which acknowledged key
// 2 but was never vouched for. A client given any key of the signed succession verifies
// its hours; key 3's are refused, naming it, to a client given key 1 or 2; one given key
// 3 trusts back through the acknowledgements and verifies everything. Skipped without
// the binary.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client, VerificationError, hourPath } from "../bloomcast.js";
import { binary, skipUnless, NO_BINARY } from "../support/server.js";
import { startHistory, bloomcast } from "../support/history.js";

const skip = skipUnless(binary(), NO_BINARY);
const BATCHES = [0, 1, 2].map((h) => Array.from({ length: 20 }, (_, i) => `r${h}:${i}`));
const OPEN_IDS = ["r:open"];
const ALL = [...BATCHES.flat(), ...OPEN_IDS];
let history;
let keys;
let H0;
let H1;
let H2;

before(async () => {
  if (skip) return;
  history = await startHistory(BATCHES, OPEN_IDS, {
    between: async (i, dir) => {
      // After H0 is sealed (by the start that published H1): a real rotation.
      if (i === 1) await bloomcast(["rotate-key"], dir);
      // After H1 is sealed: the key file replaced by hand.
      if (i === 2) {
        assert.ok(existsSync(join(dir, "signing-key")));
        writeFileSync(join(dir, "signing-key"), `${randomBytes(32).toString("hex")}\n`, { mode: 0o600 });
      }
    },
  });
  [H0, H1, H2] = history.sealed;
  keys = (await (await fetch(`${history.server.base}/.well-known/bloomcast.json`)).json()).keys;
});

after(async () => {
  await history?.stop();
});

const refusedNaming = (id) => (e) => e instanceof VerificationError && e.message.includes(`listed under key ${id}, which is refused: no key you trust vouched for it`);

test("the key list carries the rotation's succession signed both ways, and the hand-made one acknowledged only", { skip }, async () => {
  assert.equal(keys.length, 3);
  assert.deepEqual(keys.map((k) => [k.first_hour, k.last_hour]), [[H0, H0], [H1, H1], [H2, null]]);
  assert.ok(/^[0-9a-f]{128}$/.test(keys[1].vouch) && /^[0-9a-f]{128}$/.test(keys[1].ack));
  assert.deepEqual([keys[2].vouch, /^[0-9a-f]{128}$/.test(keys[2].ack)], [null, true]);
  // Old hours keep their signatures, by the key listed for them.
  for (const [hour, k] of [[H0, keys[0]], [H1, keys[1]], [H2, keys[2]]]) {
    const [entry] = await (await fetch(`${history.server.base}/chain${hourPath(hour)}?limit=1`)).json();
    assert.equal(entry.key_id, k.id, hour);
  }
});

test("from the old key, the rotated key's hours verify through its vouch; the hand-made key's are refused naming it", { skip }, async () => {
  for (const given of [keys[0], keys[1]]) {
    const client = new Client(history.server.base, { pubkey: given.public_key });
    for (const [i, hour] of [H0, H1].entries()) {
      const fetched = await client.hour(hour);
      assert.equal(fetched.verified, true, `${given.id}: ${hour}`);
      for (const id of BATCHES[i]) assert.ok(await fetched.mayContain(id), id);
    }
    await assert.rejects(client.hour(H2), refusedNaming(keys[2].id), given.id);
    await assert.rejects(new Client(history.server.base, { pubkey: given.public_key }).changedSince(ALL, H0), refusedNaming(keys[2].id), given.id);
    await assert.rejects(new Client(history.server.base, { pubkey: given.public_key }).verifyChain(H0), refusedNaming(keys[2].id), given.id);
  }
});

test("from the newest key, every hour verifies back through the acknowledgements, with nothing unverified", { skip }, async () => {
  const client = new Client(history.server.base, { pubkey: keys[2].public_key });
  for (const options of [{}, { strategy: "hourly", fetchCost: 0 }]) {
    const changes = await new Client(history.server.base, { pubkey: keys[2].public_key }).changedSince(ALL, H0, options);
    const found = new Set(changes.flatMap((c) => c.ids));
    assert.ok(ALL.every((id) => found.has(id)), JSON.stringify(options));
    assert.deepEqual([changes.from, changes.unverified, changes.checkpoint.hour, changes.checkpoint.keyId, changes.stale], [H0, [], H2, keys[2].id, null]);
  }
  assert.deepEqual([...(await client.verifyChain(H0))], [H0, H1, H2]);
});
