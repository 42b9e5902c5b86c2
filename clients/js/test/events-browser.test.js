// `GET /events` in a real browser (headless Chromium over the DevTools protocol): a page
// served by the test, on an origin of its own (another port), opens `new EventSource(server + "/events")`
// cross-origin (the stream's CORS) and receives the open hour's `version` event after an
// ingest; the same page follows the hour with `Client#watch` from this checkout's
// bloomcast.js, which takes the browser's EventSource, and reports the ID ingested.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { Client, hourPath, versionOf } from "../bloomcast.js";
import { startServer, binary, skipUnless, NO_BINARY, TOKEN } from "../support/server.js";
import { launch, chromiumPath, collectErrors, noWebSocket, NO_CHROMIUM } from "../support/browser.js";

const noWs = await noWebSocket();
const skip = skipUnless(binary(), NO_BINARY) || skipUnless(chromiumPath(), NO_CHROMIUM) || skipUnless(!noWs, noWs);
let server;
let site;
let browser;
const errors = [];

/** The page's origin: `/` (the page) and `/bloomcast.js` (this checkout's module). */
async function servePage(serverBase) {
  const page = `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>events</title>
<script type="module">
  import { Client } from "/bloomcast.js";
  window.received = [];
  window.watched = [];
  window.opened = false;
  // Counts the EventSources made (the page's own and the watch's).
  window.made = [];
  const Native = window.EventSource;
  window.EventSource = class extends Native { constructor(url, init) { super(url, init); window.made.push(url); } };
  const source = new EventSource(${JSON.stringify(serverBase)} + "/events");
  source.addEventListener("open", () => { window.opened = true; });
  for (const type of ["version", "sealed", "reset"]) {
    source.addEventListener(type, (e) => window.received.push({ type, id: e.lastEventId, origin: e.origin, data: JSON.parse(e.data) }));
  }
  window.stop = new AbortController();
  window.watching = new Client(${JSON.stringify(serverBase)}).watch(["browser:1", "browser:never"], {
    onEvent: (e) => window.watched.push(e), onError: (e) => console.error("watch:", e.message), signal: window.stop.signal, every: 3600,
  });
</script>`;
  const srv = createServer(async (req, res) => {
    if (req.url === "/bloomcast.js") {
      res.writeHead(200, { "content-type": "text/javascript" });
      return res.end(await readFile(new URL("../bloomcast.js", import.meta.url)));
    }
    if (req.url === "/") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      return res.end(page);
    }
    res.writeHead(404);
    return res.end();
  });
  await new Promise((ok) => srv.listen(0, "127.0.0.1", ok));
  return { base: `http://127.0.0.1:${srv.address().port}`, close: () => { srv.closeAllConnections(); return new Promise((ok) => srv.close(ok)); } };
}

before(async () => {
  if (skip) return;
  server = await startServer();
  // Another origin than the server's: another port.
  site = await servePage(server.base);
  browser = await launch();
  const { page } = browser;
  await collectErrors(page, errors);
  await page.send("Page.navigate", { url: `${site.base}/` });
  await page.waitFor("window.opened && window.received?.length >= 1 && window.watched?.length >= 1", "the stream's opening version and the watch's first");
});

after(async () => {
  try {
    await browser?.close();
  } finally {
    await site?.close();
    await server?.stop();
  }
});

test("a cross-origin EventSource receives the version event of an ingest", { skip }, async () => {
  const { page } = browser;
  assert.notEqual(new URL(site.base).origin, new URL(server.base).origin);
  const [opening] = await page.eval("window.received");
  assert.equal(opening.type, "version");
  const receipt = await new Client(server.base, { token: TOKEN }).ingest(["browser:1", "browser:2", "browser:3"]);
  const seen = await page.waitFor(`window.received.find((e) => e.type === "version" && e.data.count === ${opening.data.count + 3})`, "the version event of the ingest");
  const path = hourPath(receipt.hour);
  assert.equal(seen.data.hour, receipt.hour);
  assert.equal(seen.data.path, path);
  assert.equal(seen.id, `${path.slice(1).replaceAll("/", "")}-${opening.data.count + 3}`);
  assert.equal(seen.origin, new URL(server.base).origin);
  // The event's etag names the .bin form's version, as fetched after it.
  const bin = await fetch(server.base + path + ".bin");
  assert.equal(versionOf(seen.data.etag), versionOf(bin.headers.get("etag")));
  assert.match(seen.data.etag, /^"[^"]+"$/);
});

test("Client#watch in the page follows the stream with EventSource and reports the ID", { skip }, async () => {
  const { page } = browser;
  const hit = await page.waitFor(`window.watched.find((e) => e.event === "changed" && e.id === "browser:1")`, "browser:1 reported by watch");
  const bin = await fetch(server.base + hourPath(hit.hour) + ".bin");
  assert.equal(hit.version, versionOf(bin.headers.get("etag")));
  assert.ok(!(await page.eval(`window.watched.some((e) => e.id === "browser:never")`)));
  // The watch's stream is an EventSource of the browser's, not a fetch reader.
  const events = `${server.base}/events`;
  assert.deepEqual(await page.eval("window.made"), [events, events]);
  // The watch stops on abort, resolving to the hour it followed.
  assert.equal(await page.eval("window.stop.abort(), window.watching"), hit.hour);
  assert.deepEqual(errors, []);
});
