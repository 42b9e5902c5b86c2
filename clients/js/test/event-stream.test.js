// The `text/event-stream` parser of the fetch-based reader (WHATWG HTML, "Server-sent
// events": interpreting an event stream) on handmade input: chunks cut anywhere (a CRLF
// between two reads included), CR, LF and CRLF line ends, comments, multi-line data,
// fields without a colon or space, `retry`, ids kept across events and connections.
import { test } from "node:test";
import assert from "node:assert/strict";
import { EventStreamParser, versionOf } from "../bloomcast.js";

function parse(chunks, parser = null) {
  const events = [];
  const retries = [];
  parser ??= new EventStreamParser((e) => events.push(e), { onRetry: (ms) => retries.push(ms) });
  for (const chunk of chunks) parser.push(chunk);
  return { events, retries, parser };
}

/** Every way of cutting `text` into two or three reads gives the same events. */
function allCuts(text) {
  const whole = parse([text]).events;
  for (let i = 0; i <= text.length; i++) {
    for (let j = i; j <= text.length; j += 3) {
      assert.deepEqual(parse([text.slice(0, i), text.slice(i, j), text.slice(j)]).events, whole, `cut at ${i}, ${j}`);
    }
  }
  return whole;
}

test("the server's opening: retry, then a version event with its id", () => {
  const text = 'retry: 2000\n\nid: 2026112908-2\nevent: version\ndata: {"count":2,"etag":"\\"864c\\"","hour":"2026-11-29T08:00:00Z"}\n\n';
  const { events, retries, parser } = parse([text]);
  assert.deepEqual(retries, [2000]);
  assert.equal(parser.retry, 2000);
  assert.deepEqual(events, [{ type: "version", data: '{"count":2,"etag":"\\"864c\\"","hour":"2026-11-29T08:00:00Z"}', lastEventId: "2026112908-2" }]);
  assert.equal(JSON.parse(events[0].data).count, 2);
  assert.equal(parser.lastEventId, "2026112908-2");
  assert.deepEqual(allCuts(text), events);
});

test("CRLF, CR and LF line ends, a CRLF cut between two reads", () => {
  const lf = "event: sealed\ndata: a\n\nevent: version\ndata: b\n\n";
  const expected = parse([lf]).events;
  assert.equal(expected.length, 2);
  assert.deepEqual(allCuts(lf.replaceAll("\n", "\r\n")), expected);
  assert.deepEqual(allCuts(lf.replaceAll("\n", "\r")), expected);
  // A CR at the end of one read and the LF at the start of the next end one line, not two.
  assert.deepEqual(parse(["data: x\r", "\ndata: y\r\n\r", "\n"]).events, [{ type: "message", data: "x\ny", lastEventId: "" }]);
  // A lone CR then a blank line (CR) dispatches.
  assert.deepEqual(parse(["data: z\r", "\r"]).events, [{ type: "message", data: "z", lastEventId: "" }]);
});

test("comments (heartbeats) are ignored, multi-line data joins with LF", () => {
  const text = ": heartbeat\n\n:\ndata: first\n: in between\ndata:second\ndata\ndata:  two spaces\n\n";
  assert.deepEqual(allCuts(text), [{ type: "message", data: "first\nsecond\n\n two spaces", lastEventId: "" }]);
  // Only comments and blank lines: nothing.
  assert.deepEqual(parse([": a\n\n: b\r\n\r\n"]).events, []);
});

test("fields: no value, unknown names, event without data, a BOM, NUL in an id", () => {
  const { events, parser } = parse(["\uFEFFevent: version\n\n", "id: 7\nfoo: bar\nevent\ndata: d\n\n", "id: a\0b\ndata: e\n\n", "id\ndata: f\n\n"]);
  assert.deepEqual(events, [
    { type: "message", data: "d", lastEventId: "7" },
    { type: "message", data: "e", lastEventId: "7" },
    { type: "message", data: "f", lastEventId: "" },
  ]);
  assert.equal(parser.lastEventId, "");
});

test("retry: digits only; the id persists across events and a new connection", () => {
  const { retries, events, parser } = parse(["retry: 1500\nretry: 1.5\nretry: x\nretry:250\n\n", "id: 2026112908-sealed\nevent: sealed\ndata: {}\n\nevent: version\ndata: {}\n\n"]);
  assert.deepEqual(retries, [1500, 250]);
  assert.equal(parser.retry, 250);
  assert.deepEqual(events.map((e) => [e.type, e.lastEventId]), [["sealed", "2026112908-sealed"], ["version", "2026112908-sealed"]]);
  // The connection ends in the middle of an event: it is discarded; the id of the last
  // dispatched one is what the next connection sends.
  parser.push("id: 2026112909-3\nevent: version\ndata: {\"partial\":");
  parser.end();
  assert.equal(parser.lastEventId, "2026112908-sealed");
  parse(["\uFEFFdata: next\n\n"], parser);
  assert.deepEqual(events.at(-1), { type: "message", data: "next", lastEventId: "2026112908-sealed" });
  // An id then the stream's end without a blank line: not taken.
  parser.push("id: never\n");
  parser.end();
  assert.equal(parser.lastEventId, "2026112908-sealed");
});

test("versionOf: what a version event's etag and a response's ETag have in common", () => {
  assert.equal(versionOf('"864c2a88eccfc28e3d3b"'), "864c2a88eccfc28e3d3b");
  assert.equal(versionOf('"864c2a88eccfc28e3d3b-gz"'), "864c2a88eccfc28e3d3b");
  assert.equal(versionOf('W/"864c2a88eccfc28e3d3b-dcz"'), "864c2a88eccfc28e3d3b");
  assert.equal(versionOf(null), "");
});
