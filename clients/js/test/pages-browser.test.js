// Reading an hour by the page in a real browser (headless Chromium over the DevTools
// protocol), from a page on another origin than the server's: `Range` requests are what
// a browser sends across origins without a preflight (a single range, CORS-safelisted),
// the answer is read without `Content-Range` (not exposed), and each page is verified
// with the browser's WebCrypto Ed25519. The hour is seeded before the server starts
// (examples/seed_closed_hour). Skipped without the binary, the example or Chromium,
// unless CI=true.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, binary, example, skipUnless, NO_BINARY } from "../support/server.js";
import { launch, chromiumPath, collectErrors, noWebSocket, NO_CHROMIUM } from "../support/browser.js";

const noWs = await noWebSocket();
const skip =
  skipUnless(binary(), NO_BINARY) ||
  skipUnless(example("seed_closed_hour"), "no examples/seed_closed_hour: run `cargo build --bins --examples` first") ||
  skipUnless(chromiumPath(), NO_CHROMIUM) ||
  skipUnless(!noWs, noWs);
let work;
let server;
let site;
let browser;
let hour;
const errors = [];

/** The page's origin: `/` (the page) and `/bloomcast.js`, `/verify.js` (this checkout's modules). */
async function servePage(serverBase, pubkey, hour) {
  const page = `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>pages</title>
<script type="module">
  import { Client } from "/bloomcast.js";
  const client = new Client(${JSON.stringify(serverBase)}, { pubkey: ${JSON.stringify(pubkey)} });
  const ids = ["paged:1", "paged:2999", "nobody"];
  client.pages(${JSON.stringify(hour)}, ids)
    .then(async (pages) => { window.result = { answers: await Promise.all(ids.map((id) => pages.contains(id))), read: pages.pages.size, stats: client.stats }; })
    .catch((e) => { window.result = { error: e.name + ": " + e.message }; });
</script>`;
  const srv = createServer(async (req, res) => {
    for (const name of ["bloomcast.js", "verify.js"]) {
      if (req.url === `/${name}`) {
        res.writeHead(200, { "content-type": "text/javascript" });
        return res.end(await readFile(new URL(`../${name}`, import.meta.url)));
      }
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
  work = mkdtempSync(join(tmpdir(), "bloomcast-js-pages-browser-"));
  const dir = join(work, "data");
  const path = await new Promise((resolve, reject) =>
    execFile(example("seed_closed_hour"), [dir, "3000", "2", "paged"], (error, stdout, stderr) => (error ? reject(new Error(stderr)) : resolve(stdout.trim()))),
  );
  hour = `${path.slice(1, 11).replaceAll("/", "-")}T${path.slice(12, 14)}:00:00Z`;
  server = await startServer({ dir });
  const pubkey = (await (await fetch(`${server.base}/.well-known/bloomcast.json`)).json()).public_key;
  site = await servePage(server.base, pubkey, hour);
  browser = await launch();
  await collectErrors(browser.page, errors);
});

after(async () => {
  try {
    await browser?.close();
  } finally {
    await site?.close();
    await server?.stop({ purge: true });
    if (work) rmSync(work, { recursive: true, force: true });
  }
});

test("a page of another origin reads an hour by the page, verified", { skip }, async () => {
  const { page } = browser;
  assert.notEqual(new URL(site.base).origin, new URL(server.base).origin);
  await page.send("Page.navigate", { url: `${site.base}/` });
  const result = await page.waitFor("window.result", "the pages read");
  assert.equal(result.error, undefined, result.error);
  assert.deepEqual(result.answers.slice(0, 2), [true, true]);
  // The index is not read: the header, the key list, one page for each ID (or two on one).
  assert.ok(result.read >= 2 && result.read <= 3, JSON.stringify(result));
  assert.equal(result.stats.requests, 2 + result.read);
  assert.deepEqual(errors, []);
});
