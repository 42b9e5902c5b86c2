// The dashboard in a real browser (headless Chromium over the DevTools protocol) against
// a real server with a few hours of history: no console errors, the plots follow
// ingestion, the ID box answers with the JavaScript client, and screenshots at 1280x800
// and phone size are written to target/ for review.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Client } from "../bloomcast.js";
import { startServer, binary, skipUnless, NO_BINARY, TOKEN } from "../support/server.js";
import { launch, chromiumPath, collectErrors, noWebSocket, NO_CHROMIUM } from "../support/browser.js";

const noWs = await noWebSocket();
const skip = skipUnless(binary(), NO_BINARY) || skipUnless(chromiumPath(), NO_CHROMIUM) || skipUnless(!noWs, noWs);
const targetDir = fileURLToPath(new URL("../../../target/", import.meta.url));
/** Distinct IDs ingested in each past hour, oldest first (the server's clock is shifted back). */
const HISTORY = [40, 120, 75];
let server;
let browser;
let client;
const errors = [];

before(async () => {
  if (skip) return;
  // A few sealed hours: run the server with its clock shifted back, restarting each hour.
  // Each start is an hour past the last heartbeat on purpose: a tolerance above that lets
  // it follow the clock (further past, a start is held as a jump: docs/RELIABILITY.md).
  const tolerance = { BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS: "7200" };
  let dir;
  for (const [i, n] of HISTORY.entries()) {
    const offset = -3600 * (HISTORY.length - i);
    const past = await startServer({ dir, env: { ...tolerance, BLOOMCAST_CLOCK_OFFSET_SECONDS: String(offset) } });
    dir = past.dir;
    const ids = Array.from({ length: n }, (_, j) => `past${i}:${j}`);
    await new Client(past.base, { token: TOKEN }).ingest(ids);
    await past.stop({ keep: true });
  }
  server = await startServer({ dir, env: tolerance });
  client = new Client(server.base, { token: TOKEN });
  await client.ingest(Array.from({ length: 30 }, (_, j) => `open:${j}`));
  browser = await launch();
  const { page } = browser;
  await collectErrors(page, errors);
  await page.send("Emulation.setDeviceMetricsOverride", { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });
  await page.send("Page.navigate", { url: `${server.base}/dashboard` });
  await page.waitFor("document.body?.dataset.refreshed", "the first refresh");
});

after(async () => {
  try {
    await browser?.close();
  } finally {
    await server?.stop({ purge: true });
  }
});

const openBar = `document.querySelector("#plot-count rect.bar.open")?.dataset.value`;

test("the page loads without console errors and plots every hour", { skip }, async () => {
  const { page } = browser;
  const bars = await page.eval(`[...document.querySelectorAll("#plot-count rect.bar")].map((b) => Number(b.dataset.value))`);
  assert.deepEqual(bars, [...HISTORY, 30]);
  const marks = await page.eval(`["size", "fill", "fpp"].map((p) => document.querySelectorAll("#plot-" + p + " [data-hour]").length)`);
  assert.deepEqual(marks, [4, 4, 4]);
  assert.ok(await page.eval(`!!document.querySelector("#plot-fpp line.target")`), "target fpp line");
  // A rate is a difference between two samples whole seconds apart, and the server
  // takes its first when it starts: a page loaded within that second has no rate yet.
  // Refresh until it has one (a refresh a second later always does).
  const readLine = `!!document.querySelector("#plot-reads path.line")`;
  for (let i = 0; i < 20 && !(await page.eval(readLine)); i++) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    await page.eval(`document.getElementById("refresh").click()`);
  }
  assert.ok(await page.eval(readLine), "read-rate line");
  assert.deepEqual(errors, []);
});

test("after ingesting, the plots show the new counts", { skip }, async () => {
  const { page } = browser;
  await client.ingest(Array.from({ length: 170 }, (_, j) => `dash:${j}`));
  await page.eval(`document.getElementById("refresh").click()`);
  assert.equal(await page.waitFor(`${openBar} === "200" && ${openBar}`, "the open hour's bar to show 200"), "200");
  const row = await page.eval(`document.querySelector("#hours-table tbody tr").textContent`);
  assert.match(row, /200/);
  const ingestNow = await page.eval(`document.querySelector("#plot-ingest .value").textContent`);
  assert.match(ingestNow, /^now: /);
});

test("the ID box answers with the JavaScript client", { skip }, async () => {
  const { page } = browser;
  const index = await client.index();
  const open = await client.hour(index.current.hour);
  // Absent IDs the filter itself rules out (so a false positive cannot flake the test).
  const absent = [];
  for (let i = 0; absent.length < 3; i++) if (!(await open.mayContain(`nobody:${i}`))) absent.push(`nobody:${i}`);
  const ask = async (ids, hour, mode) => {
    await page.eval(`(() => {
      document.getElementById("test-ids").value = ${JSON.stringify(ids.join("\n"))};
      document.getElementById("test-hour").value = ${JSON.stringify(hour)};
      document.querySelector('input[name=mode][value=${mode}]').checked = true;
      document.getElementById("test-result").replaceChildren();
      document.querySelector("#test-form button[type=submit]").click();
    })()`);
    await page.waitFor(`document.querySelectorAll("#test-result tr").length === ${ids.length}`, "the answer");
    return page.eval(`Object.fromEntries([...document.querySelectorAll("#test-result tr")].map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent]))`);
  };
  const answers = await ask(["dash:7", ...absent], index.current.hour, "hour");
  assert.equal(answers["dash:7"], "may have changed");
  for (const id of absent) assert.equal(answers[id], "not changed", id);
  const oldest = (await (await fetch(`${server.base}/stats`)).json()).hours[0].hour;
  const since = await ask(["past0:1", "dash:9"], oldest, "since");
  assert.deepEqual(since, { "past0:1": "may have changed", "dash:9": "may have changed" });
  assert.deepEqual(errors, []);
});

test("controls are labelled and reachable by keyboard", { skip }, async () => {
  const { page } = browser;
  const unlabelled = await page.eval(`[...document.querySelectorAll("input, select, textarea")].filter((c) => c.labels.length === 0).map((c) => c.id || c.name)`);
  assert.deepEqual(unlabelled, []);
  const plots = await page.eval(`[...document.querySelectorAll(".plot svg")].filter((s) => s.getAttribute("role") === "img" && s.getAttribute("aria-label")).length`);
  assert.equal(plots, 8);
  const focused = [];
  for (let i = 0; i < 3; i++) {
    await page.send("Input.dispatchKeyEvent", { type: "keyDown", key: "Tab", code: "Tab", windowsVirtualKeyCode: 9 });
    await page.send("Input.dispatchKeyEvent", { type: "keyUp", key: "Tab", code: "Tab", windowsVirtualKeyCode: 9 });
    focused.push(await page.eval(`document.activeElement.id`));
  }
  assert.deepEqual(focused, ["window", "auto", "refresh"]);
});

test("screenshots at 1280x800 and phone size", { skip }, async () => {
  const { page } = browser;
  mkdirSync(targetDir, { recursive: true });
  // Some reads, then a fresh refresh, so the traffic plots have something to show.
  for (let i = 0; i < 20; i++) await new Client(server.base).hour((await client.index()).current.hour);
  await page.eval(`delete document.body.dataset.refreshed; document.getElementById("refresh").click()`);
  await page.waitFor("document.body.dataset.refreshed", "a refresh");
  await page.eval(`window.scrollTo(0, 0)`);
  const wide = await page.send("Page.captureScreenshot", { format: "png" });
  writeFileSync(`${targetDir}dashboard.png`, Buffer.from(wide.data, "base64"));
  await page.send("Emulation.setDeviceMetricsOverride", { width: 390, height: 844, deviceScaleFactor: 2, mobile: true });
  await page.eval(`new Promise((r) => requestAnimationFrame(() => r(true)))`);
  const overflow = await page.eval(`document.documentElement.scrollWidth - window.innerWidth`);
  assert.ok(overflow <= 0, `the phone layout scrolls sideways by ${overflow}px`);
  const phone = await page.send("Page.captureScreenshot", { format: "png" });
  writeFileSync(`${targetDir}dashboard-phone.png`, Buffer.from(phone.data, "base64"));
  console.log(`# screenshots: ${targetDir}dashboard.png, ${targetDir}dashboard-phone.png`);
  assert.deepEqual(errors, []);
});
