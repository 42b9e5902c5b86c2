// `Client#watch`: following the open hour, told by the server's push stream (`GET
// /events`, PROTOCOL.md "Following changes"), polling where there is none.
// - Live: against the real server with polls an hour apart, an ID is reported within
//   seconds of its ingest (only the stream can have said so).
// - Fallback: the real server behind a front that answers 404 for /events (a static
//   mirror, an older server): the watch polls, still reports, and tries the stream again.
// - A handmade server whose stream the test writes: a `sealed` event has the hour's final
//   bytes read and the next hour followed; a dropped stream is polled meanwhile and
//   reconnected with Last-Event-ID after the stream's `retry`; a `reset` has it read again.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Client, Filter, Watcher, hourPath, optimalParams, versionOf } from "../bloomcast.js";
import { startServer, binary, skipUnless, NO_BINARY, TOKEN } from "../support/server.js";

const skip = skipUnless(binary(), NO_BINARY);
let server;

before(async () => {
  if (!skip) server = await startServer();
});

after(async () => {
  await server?.stop();
});

/** Resolves once `predicate(events)` holds (checked as events come), else rejects after `ms`. */
function collector() {
  const events = [];
  const waiters = [];
  const onEvent = (event) => {
    events.push({ ...event, at: Date.now() });
    for (const w of [...waiters]) if (w.predicate(events)) w.resolve(events);
  };
  const until = (predicate, what, ms = 8000) =>
    new Promise((resolve, reject) => {
      if (predicate(events)) return resolve(events);
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}: ${JSON.stringify(events)}`)), ms);
      waiters.push({ predicate, resolve: (v) => (clearTimeout(timer), resolve(v)) });
    });
  return { events, onEvent, until };
}

const changed = (id) => (events) => events.some((e) => e.event === "changed" && e.id === id);

test("live: an ID is reported within seconds of its ingest while polls are an hour apart", { skip }, async () => {
  const publisher = new Client(server.base, { token: TOKEN });
  const client = new Client(server.base);
  const { events, onEvent, until } = collector();
  const errors = [];
  const stop = new AbortController();
  const done = client.watch(["live:watched", "live:later", "live:never"], { onEvent, onError: (e) => errors.push(e), signal: stop.signal, every: 3600 });
  try {
    await until((es) => es.some((e) => e.event === "version"), "the first version");
    // The stream's opening version event is read (a 304 or nothing), then no poll comes
    // by time: every fetch of the hour from here on is one the stream asked for.
    await new Promise((r) => setTimeout(r, 500));
    const quiet = client.stats.requests;
    const sent = Date.now();
    const receipt = await publisher.ingest(["live:watched", "live:other"]);
    const [hit] = (await until(changed("live:watched"), "live:watched")).filter((e) => e.event === "changed");
    assert.ok(hit.at - sent < 4000, `reported ${hit.at - sent} ms after the ingest`);
    assert.equal(hit.hour, receipt.hour);
    assert.ok(client.stats.requests - quiet <= 2, `${client.stats.requests - quiet} requests for one change`);
    // The version reported is the .bin form's, the one a version event names.
    const version = events.filter((e) => e.event === "version").at(-1);
    assert.equal(version.version, hit.version);
    assert.equal(version.count, 2 + events.filter((e) => e.event === "version")[0].count);
    const bin = await fetch(server.base + hourPath(receipt.hour) + ".bin");
    assert.equal(versionOf(bin.headers.get("etag")), hit.version);
    assert.ok(version.bytes > 0 && version.delta === false, JSON.stringify(version));
    // A second change: reported once, the first never again.
    await publisher.ingest(["live:later", "live:watched"]);
    await until(changed("live:later"), "live:later");
    assert.equal(events.filter((e) => e.id === "live:watched").length, 1);
    assert.ok(!events.some((e) => e.id === "live:never"));
  } finally {
    stop.abort();
  }
  assert.equal(await done, events[0].hour);
  assert.deepEqual(errors, []);
});

/** The real server behind a front that has no stream: `/events` is 404, as from a static
 * mirror or a server before it; the rest is forwarded. */
async function withoutEvents(upstream) {
  const seen = [];
  const front = createServer(async (req, res) => {
    seen.push(req.url);
    if (req.url.startsWith("/events")) {
      res.writeHead(404, { "content-type": "application/json" });
      return res.end('{"error":"not_found","message":"no such resource"}');
    }
    const up = await fetch(upstream + req.url, { headers: { ...(req.headers["if-none-match"] && { "if-none-match": req.headers["if-none-match"] }) } });
    const headers = {};
    for (const [name, value] of up.headers) if (!["content-encoding", "content-length", "transfer-encoding", "connection"].includes(name)) headers[name] = value;
    res.writeHead(up.status, headers);
    res.end(up.status === 304 ? undefined : Buffer.from(await up.arrayBuffer()));
  });
  await new Promise((ok) => front.listen(0, "127.0.0.1", ok));
  return { base: `http://127.0.0.1:${front.address().port}`, seen, close: () => new Promise((ok) => front.close(ok)) };
}

test("fallback: where /events is 404 it polls, still reports, and tries the stream again", { skip }, async () => {
  const front = await withoutEvents(server.base);
  const publisher = new Client(server.base, { token: TOKEN });
  const client = new Client(front.base);
  const { onEvent, until } = collector();
  const stop = new AbortController();
  const done = client.watch(["fallback:1"], { onEvent, signal: stop.signal, every: 0.3, retryStream: 0.5 });
  try {
    await until((es) => es.some((e) => e.event === "version"), "the first version");
    await publisher.ingest(["fallback:1"]);
    await until(changed("fallback:1"), "fallback:1 by polling", 5000);
    await new Promise((r) => setTimeout(r, 700));
    const streams = front.seen.filter((u) => u === "/events").length;
    const polls = front.seen.filter((u) => u.endsWith(".bin")).length;
    assert.ok(streams >= 2, `the stream was asked for ${streams} times`);
    assert.ok(polls >= 3, `${polls} polls`);
  } finally {
    stop.abort();
    await done;
    await front.close();
  }
  // Nothing is asked once stopped.
  const asked = front.seen.length;
  await new Promise((r) => setTimeout(r, 800));
  assert.equal(front.seen.length, asked);
});

const HOUR = Date.UTC(2026, 0, 2, 3);
const NEXT = HOUR + 3600e3;

/** A handmade server: two hours (the first open, then sealed when the test says), each
 * served as `.bin` with its Bloom-* headers and ETag; `/events` written by the test
 * (`send(text)`, `drop()`), each stream's Last-Event-ID recorded in `streams`. */
async function handmade() {
  const { m, k } = optimalParams(100, 0.01);
  const hours = new Map([
    [HOUR, { ids: [], complete: false }],
    [NEXT, { ids: [], complete: false }],
  ]);
  const state = { hours, streams: [], polls: [], open: null };
  const body = async (hour) => {
    const f = Filter.empty(m, k);
    for (const id of hour.ids) await f.insert(id);
    return f.bytes;
  };
  const srv = createServer(async (req, res) => {
    if (req.url === "/events") {
      state.streams.push(req.headers["last-event-id"] ?? null);
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
      res.write("retry: 150\n\n");
      state.open = res;
      return undefined;
    }
    const hour = [...hours.entries()].find(([h]) => req.url === `${hourPath(h)}.bin`);
    if (!hour) {
      res.writeHead(404, { "content-type": "application/json" });
      return res.end('{"error":"not_found","message":""}');
    }
    const [h, doc] = hour;
    state.polls.push(new Date(h).toISOString());
    const etag = `"v${h}-${doc.ids.length}-${doc.complete}"`;
    if (req.headers["if-none-match"] === etag) {
      res.writeHead(304, { etag });
      return res.end();
    }
    res.writeHead(200, {
      "content-type": "application/octet-stream", etag,
      "bloom-m": m, "bloom-k": k, "bloom-hash": "sha1-km32", "bloom-count": doc.ids.length,
      "bloom-complete": String(doc.complete), "bloom-fpp": "0.01", "bloom-hour": new Date(h).toISOString(),
    });
    return res.end(await body(doc));
  });
  await new Promise((ok) => srv.listen(0, "127.0.0.1", ok));
  return {
    base: `http://127.0.0.1:${srv.address().port}`,
    state,
    send: (text) => state.open.write(text),
    drop: () => state.open.destroy(),
    close: () => {
      srv.closeAllConnections();
      return new Promise((ok) => srv.close(ok));
    },
  };
}

const event = (type, id, data) => `${id ? `id: ${id}\n` : ""}event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

test("a sealed event: the hour's final bytes, then the next hour; a dropped stream is polled and resumed", async () => {
  const fake = await handmade();
  const client = new Client(fake.base);
  const { events, onEvent, until } = collector();
  const stop = new AbortController();
  const hourName = new Date(HOUR).toISOString().replace(".000Z", "Z");
  const nextName = new Date(NEXT).toISOString().replace(".000Z", "Z");
  const done = client.watch(["a", "b", "c"], { onEvent, signal: stop.signal, every: 3600, hour: hourName });
  try {
    await until((es) => es.length === 1, "the first version");
    for (let i = 0; !fake.state.open; i++) {
      assert.ok(i < 250, "no stream opened");
      await new Promise((r) => setTimeout(r, 20));
    }
    // A version event: the hour is fetched.
    fake.state.hours.get(HOUR).ids.push("a");
    fake.send(`: heartbeat\n\n${event("version", "2026010203-1", { hour: hourName, path: hourPath(HOUR), count: 1, etag: `"v${HOUR}-1-false"` })}`);
    await until(changed("a"), "a");
    // The hour is sealed with one more ID: its final bytes are read, then the next hour.
    fake.state.hours.get(HOUR).ids.push("b");
    fake.state.hours.get(HOUR).complete = true;
    fake.send(event("sealed", "2026010203-sealed", { hour: hourName, path: hourPath(HOUR), count: 2 }));
    await until(changed("b"), "b, in the sealed hour");
    await until((es) => es.some((e) => e.event === "version" && e.hour === nextName), "the next hour");
    assert.deepEqual(events.filter((e) => e.event === "changed").map((e) => [e.id, e.hour]), [["a", hourName], ["b", hourName]]);
    // The stream drops: the hour is polled at once, and the stream reconnected after its
    // retry (150 ms) with the id of the last event read.
    const polls = fake.state.polls.length;
    fake.drop();
    const deadline = Date.now() + 5000;
    while (fake.state.streams.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(fake.state.streams, [null, "2026010203-sealed"]);
    assert.ok(fake.state.polls.length > polls, "polled while the stream was down");
    // A reset on the new stream: the hour is read again, and what changed reported.
    fake.state.hours.get(NEXT).ids.push("c");
    fake.send('event: reset\ndata: {"reason":"test","index":"/"}\n\n');
    await until(changed("c"), "c after a reset");
    assert.equal(events.find((e) => e.id === "c").hour, nextName);
  } finally {
    stop.abort();
  }
  assert.equal(await done, nextName);
  await fake.close();
});

test("Watcher.poll alone, as the CLIs' watchers: one version event, each ID once per hour", async () => {
  const fake = await handmade();
  try {
    const watcher = new Watcher(new Client(fake.base), ["a", "zzz"], new Date(HOUR));
    fake.state.hours.get(HOUR).ids.push("a");
    const first = await watcher.poll();
    assert.deepEqual(first.map((e) => e.event + (e.id ?? "")), ["version", "changeda"]);
    assert.equal(first[0].version, `v${HOUR}-1-false`);
    assert.deepEqual(await watcher.poll(), []);
    assert.equal(watcher.hourName, new Date(HOUR).toISOString().replace(".000Z", "Z"));
    await assert.rejects(new Client(fake.base).watch(["a"], { every: 0 }), TypeError);
    await assert.rejects(new Client(fake.base).watch(["a"], {}), TypeError);
  } finally {
    await fake.close();
  }
});

test("a static mirror (files, no /events, a .bin without Bloom-* headers): polled as JSON documents", async () => {
  const { mkdtempSync, mkdirSync, writeFileSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { serveMirror } = await import("../support/static.js");
  const dir = mkdtempSync(join(tmpdir(), "bloomcast-js-watch-mirror-"));
  const { m, k } = optimalParams(10, 0.01);
  const filter = Filter.empty(m, k);
  await filter.insert("mirrored");
  const hourName = new Date(HOUR).toISOString().replace(".000Z", "Z");
  const path = hourPath(HOUR);
  mkdirSync(join(dir, path.slice(0, -3)), { recursive: true });
  // As `bloomcast mirror` lays them out: the document as /HH and /HH.json, the raw form alone.
  const doc = JSON.stringify({ hour: hourName, complete: true, count: 1, m, k, hash: "sha1-km32", fpp: filter.fpp(), filter: filter.toHex() });
  for (const name of [path, `${path}.json`]) writeFileSync(join(dir, name), doc);
  writeFileSync(join(dir, `${path}.bin`), filter.bytes);
  const mirror = await serveMirror(dir);
  const { events, onEvent, until } = collector();
  const errors = [];
  const stop = new AbortController();
  const done = new Client(mirror.base).watch(["mirrored", "absent"], { onEvent, onError: (e) => errors.push(e), signal: stop.signal, hour: hourName, every: 0.2, retryStream: 0.3 });
  try {
    await until(changed("mirrored"), "mirrored");
    // The hour is complete: the next one is followed, not there yet (404), polled again.
    const deadline = Date.now() + 5000;
    const count = (url) => mirror.seen.filter((u) => u === url).length;
    while ((count(hourPath(NEXT)) < 2 || count("/events") < 2) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  } finally {
    stop.abort();
  }
  assert.equal(await done, new Date(NEXT).toISOString().replace(".000Z", "Z"));
  await mirror.close();
  rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(events.map((e) => [e.event, e.id ?? e.count]), [["version", 1], ["changed", "mirrored"]]);
  assert.ok(mirror.seen.includes(`${path}.bin`) && mirror.seen.includes(path), mirror.seen.join(" "));
  assert.ok(mirror.seen.filter((u) => u === "/events").length >= 2, "the stream asked for again");
  assert.ok(mirror.seen.filter((u) => u === hourPath(NEXT)).length >= 2, "the next hour polled");
  assert.ok(errors.length >= 2 && errors.every((e) => e.status === 404), errors.map((e) => e.message).join("; "));
});
