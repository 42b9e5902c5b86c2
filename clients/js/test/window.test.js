// Client.window(hours): the last hours as far back as the server has them, as
// `bloomcast check --hours` does, against a server whose index says what it has.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Client } from "../bloomcast.js";

async function withIndex(index, body) {
  const server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(index));
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  try {
    return await body(new Client(`http://127.0.0.1:${server.address().port}`));
  } finally {
    server.close();
  }
}

const current = { hour: "2026-11-27T05:00:00Z", url: "/2026/11/27/05" };

test("a window reaching before the server's first hour starts there, and says so", async () => {
  const index = { genesis: "2026-11-27T05:00:00Z", retention_hours: 720, current };
  assert.deepEqual(await withIndex(index, (c) => c.window(3)), { since: "2026-11-27T05:00:00Z", clamped: true });
});

test("a window the server has whole is the last hours, the current one included", async () => {
  const index = { genesis: "2026-11-01T00:00:00Z", retention_hours: 720, current };
  assert.deepEqual(await withIndex(index, (c) => c.window(3)), { since: "2026-11-27T03:00:00Z", clamped: false });
  assert.deepEqual(await withIndex(index, (c) => c.window(1)), { since: "2026-11-27T05:00:00Z", clamped: false });
});

test("a window past the retention starts at the oldest hour kept", async () => {
  const index = { genesis: "2026-11-01T00:00:00Z", retention_hours: 2, current };
  assert.deepEqual(await withIndex(index, (c) => c.window(24)), { since: "2026-11-27T04:00:00Z", clamped: true });
});
