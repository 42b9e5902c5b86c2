// Open-hour deltas in a real browser (headless Chromium over the DevTools protocol)
// against a real server whose open hour has a 2-second max-age, polled every 5 seconds:
// the poll interval outlives the response's max-age, as a page polling every minute
// outlives the default 30 seconds. A poll response's own dictionary has expired by the
// next poll; the dictionary it links (`Link: rel="compression-dictionary"`, its own URL
// and lifetime) has not, so later polls arrive as `Content-Encoding: dcz` and decode to
// the server's current bytes.
//
// Chromium follows a compression-dictionary `Link` only on documents (not on `fetch`
// responses), so the polling script fetches the linked URL itself, as a page would.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Client, hourPath } from "../bloomcast.js";
import { startServer, binary, skipUnless, NO_BINARY, TOKEN } from "../support/server.js";
import { launch, chromiumPath, noWebSocket, NO_CHROMIUM } from "../support/browser.js";

const noWs = await noWebSocket();
const skip = skipUnless(binary(), NO_BINARY) || skipUnless(chromiumPath(), NO_CHROMIUM) || skipUnless(!noWs, noWs);
const OPEN_MAX_AGE = 2;
const POLL_MS = 5000;
let server;
let browser;
let client;
/** The `.bin` poll responses as DevTools saw them, in order: `{status, headers, fromCache}`. */
const polls = [];
let binPath;

before(async () => {
  if (skip) return;
  // The server's clock at ten past an hour, so that the open hour cannot close mid-test.
  const now = Math.floor(Date.now() / 1000);
  const offset = 600 - (now % 3600);
  server = await startServer({
    env: { BLOOMCAST_OPEN_MAX_AGE: String(OPEN_MAX_AGE), BLOOMCAST_CLOCK_OFFSET_SECONDS: String(offset) },
  });
  client = new Client(server.base, { token: TOKEN });
  await client.ingest(Array.from({ length: 200 }, (_, i) => `first:${i}`));
  binPath = `${hourPath((await client.index()).current.hour)}.bin`;
  browser = await launch();
  const { page } = browser;
  page.on("Network.responseReceived", ({ response }) => {
    if (new URL(response.url).pathname !== binPath) return;
    const headers = Object.fromEntries(Object.entries(response.headers).map(([k, v]) => [k.toLowerCase(), v]));
    polls.push({ status: response.status, headers, fromCache: Boolean(response.fromDiskCache || response.fromMemoryCache) });
  });
  await page.send("Network.enable");
  await page.send("Page.enable");
  // A document of the server's origin for the script to run in (the index, as JSON).
  await page.send("Page.navigate", { url: `${server.base}/` });
  await page.waitFor(`document.readyState === "complete" && location.origin === ${JSON.stringify(server.base)}`, "the page");
  await page.eval(`(() => {
    const followed = new Set();
    const hex = (buffer) => [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, "0")).join("");
    // One poll: the body as the page reads it (decoded by the browser), then the linked
    // dictionary when it is one not fetched yet.
    window.poll = async (path, follow) => {
      const response = await fetch(path);
      const body = await response.arrayBuffer();
      const link = /<([^>]+)>;\\s*rel="compression-dictionary"/.exec(response.headers.get("link") ?? "");
      if (follow && link && !followed.has(link[1])) {
        followed.add(link[1]);
        const dictionary = await fetch(link[1]);
        if (!dictionary.ok) throw new Error(link[1] + ": " + dictionary.status);
        await dictionary.arrayBuffer();
      }
      return { status: response.status, sha256: hex(await crypto.subtle.digest("SHA-256", body)), link: link?.[1] ?? null };
    };
    return true;
  })()`);
});

after(async () => {
  try {
    await browser?.close();
  } finally {
    await server?.stop();
  }
});

/** The SHA-256 of the server's current `.bin` bytes, fetched whole. */
async function current() {
  const response = await fetch(server.base + binPath, { headers: { "accept-encoding": "identity" } });
  assert.equal(response.status, 200);
  return createHash("sha256").update(Buffer.from(await response.arrayBuffer())).digest("hex");
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test("polls slower than the max-age still arrive as dcz deltas, which decode to the current bytes", { skip }, async () => {
  const { page } = browser;
  const poll = async () => {
    const seen = polls.length;
    const result = await page.eval(`poll(${JSON.stringify(binPath)}, true)`);
    const deadline = Date.now() + 5000;
    while (polls.length === seen && Date.now() < deadline) await sleep(50);
    assert.equal(polls.length, seen + 1, "DevTools saw the poll's response");
    return { ...result, network: polls[polls.length - 1] };
  };

  const first = await poll();
  assert.equal(first.status, 200);
  assert.equal(first.sha256, await current());
  assert.match(first.link ?? "", /^\/dictionaries\/.+\.bin\/[0-9a-f]{20}$/, "a linked dictionary");
  const maxAge = Number(/max-age=(\d+)/.exec(first.network.headers["cache-control"])?.[1]);
  assert.ok(maxAge <= OPEN_MAX_AGE, `the poll's max-age (${maxAge}) is at most ${OPEN_MAX_AGE}`);
  assert.ok(POLL_MS / 1000 > maxAge, "the poll interval outlives the response's max-age");

  let deltas = 0;
  for (let i = 0; i < 3; i++) {
    await sleep(POLL_MS);
    await client.ingest(Array.from({ length: 20 }, (_, j) => `poll${i}:${j}`));
    const later = await poll();
    assert.equal(later.status, 200);
    assert.equal(later.network.fromCache, false, "past its max-age, from the server");
    assert.equal(later.network.headers["content-encoding"], "dcz", `poll ${i + 2}: ${JSON.stringify(later.network.headers)}`);
    assert.equal(later.sha256, await current(), `poll ${i + 2} decodes to the server's current bytes`);
    deltas++;
  }
  assert.equal(deltas, 3);
  const sizes = polls.map((p) => `${p.headers["content-encoding"] ?? "identity"} ${p.headers["content-length"] ?? "?"} B`);
  console.log(`# .bin polls as sent: ${sizes.join(", ")}`);
});
