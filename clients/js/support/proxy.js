// A proxy in front of a real server, for tests that play a hostile mirror or cache: each
// request is forwarded (identity encoding, so bodies can be read and changed), and
// `rewrite(path, reply, request)` may return another reply: `{status, headers, body}`
// (headers a plain object, lowercase names; body a Uint8Array), or null to pass it on.
// A rewrite that changes a body drops its `repr-digest` itself, as a careful forger would.
import { createServer } from "node:http";

const HOP = ["connection", "content-encoding", "content-length", "keep-alive", "transfer-encoding"];

/** Starts the proxy to `upstream`; resolves to `{ base, seen, close() }` (`seen`: requests, as `{path, headers}`). */
export async function startProxy(upstream, rewrite = async () => null) {
  const seen = [];
  const server = createServer(async (req, res) => {
    seen.push({ path: req.url, headers: req.headers });
    try {
      const headers = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (name !== "host" && !HOP.includes(name)) headers[name] = value;
      }
      headers["accept-encoding"] = "identity";
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      const up = await fetch(upstream + req.url, {
        method: req.method,
        headers,
        body: chunks.length ? Buffer.concat(chunks) : undefined,
        redirect: "manual",
      });
      let reply = { status: up.status, headers: {}, body: new Uint8Array(await up.arrayBuffer()) };
      for (const [name, value] of up.headers) if (!HOP.includes(name)) reply.headers[name] = value;
      reply = (await rewrite(req.url, reply, req)) ?? reply;
      res.writeHead(reply.status, reply.headers);
      res.end(reply.status === 304 ? undefined : reply.body);
    } catch (e) {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end(`proxy: ${e.stack}`);
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    base: `http://127.0.0.1:${server.address().port}`,
    seen,
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections?.();
        server.close(ok);
      }),
  };
}

/** A reply with a JSON body. */
export function jsonReply(value, status = 200, headers = {}) {
  return { status, headers: { "content-type": "application/json", ...headers }, body: new TextEncoder().encode(JSON.stringify(value)) };
}

/** The JSON of a reply's body. */
export function jsonOf(reply) {
  return JSON.parse(new TextDecoder().decode(reply.body));
}
