// Hours as the CLIs take them: `bloomcast check --since 2026-11-28T17` and
// `bloomcast-py ... 2026/11/28/17` name UTC hours, and so does every client method
// and example (examples/verify.js SINCE) that takes an hour.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { hourPath } from "../bloomcast.js";

test("the CLIs' hour forms name the UTC hour", () => {
  for (const form of ["2026-11-28T17", "2026-11-28t17", "2026/11/28/17", "/2026/11/28/17", "2026-11-28T17:00:00Z", "2026-11-28T17:59:59Z"]) {
    assert.equal(hourPath(form), "/2026/11/28/17", form);
  }
});

test("an hour form naming no hour is refused, not rolled over", () => {
  for (const bad of ["2026-13-01T00", "2026-02-30T05", "2026-11-28T24", "2026-11-28T7", "yesterday"]) {
    assert.throws(() => hourPath(bad), TypeError, bad);
  }
});

test("examples/verify.js takes SINCE as the CLIs do", () => {
  // A server that is not there: the hour is accepted, and the failure is the connection's.
  const example = fileURLToPath(new URL("../examples/verify.js", import.meta.url));
  const run = spawnSync(process.execPath, [example, "http://127.0.0.1:9", "00".repeat(32), "2026-11-28T17"], { encoding: "utf8" });
  assert.equal(run.status, 1, run.stderr);
  assert.doesNotMatch(run.stderr, /not a time/, run.stderr);
});
