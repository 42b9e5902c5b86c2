// A file server for a static mirror (`bloomcast mirror DIR`, PROTOCOL.md section 13) in
// tests, as nginx serves one (deploy/nginx-mirror.conf) minus gzip: `/` is index.json,
// query strings are ignored, a missing file or a directory is 404, and nothing else is
// sent but the body and its type; a single `Range` (`bytes=FIRST-LAST`, `FIRST-`) is a
// 206 of those bytes with `Content-Range` (416 past the end), any other the whole body.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { join, normalize } from "node:path";

const TYPES = [
  [/\.pages$/, "application/vnd.bloomcast.pages"],
  [/\.ribbon2$/, "application/vnd.bloomcast.ribbon; v=2"],
  [/\.ribbon$/, "application/vnd.bloomcast.ribbon"],
  [/\.ribbon\.json$/, "application/vnd.bloomcast.ribbon+json"],
  [/\.bin$/, "application/octet-stream"],
  [/\.hex$/, "text/plain; charset=utf-8"],
];

/** Serves `dir` on a free port; resolves to `{ base, seen, close() }` (`seen`: the URLs asked). */
export async function serveMirror(dir) {
  const seen = [];
  const server = createServer(async (req, res) => {
    seen.push(req.url);
    const path = decodeURIComponent(new URL(req.url, "http://mirror").pathname);
    const file = normalize(join(dir, path === "/" ? "index.json" : path));
    try {
      if (!file.startsWith(normalize(dir))) throw new Error("outside the mirror");
      const body = await readFile(file);
      const type = TYPES.find(([pattern]) => pattern.test(file))?.[1] ?? "application/json";
      const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
      if (range) {
        const first = Number(range[1]);
        const last = Math.min(range[2] === "" ? body.length - 1 : Number(range[2]), body.length - 1);
        if (first > last) {
          res.writeHead(416, { "content-range": `bytes */${body.length}`, "access-control-allow-origin": "*" });
          return res.end();
        }
        res.writeHead(206, { "content-type": type, "content-range": `bytes ${first}-${last}/${body.length}`, "access-control-allow-origin": "*" });
        return res.end(body.subarray(first, last + 1));
      }
      res.writeHead(200, { "content-type": type, "access-control-allow-origin": "*" });
      res.end(body);
    } catch {
      res.writeHead(404, { "content-type": "text/html" });
      res.end("<html><body>404 Not Found</body></html>");
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { base: `http://127.0.0.1:${server.address().port}`, seen, close: () => new Promise((ok) => server.close(ok)) };
}
