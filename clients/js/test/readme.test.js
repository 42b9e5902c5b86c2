// clients/js/README.md cannot rot: each of its `js` blocks runs, in order, as a module of
// its own (`bloomcast-client` imports rewritten to this checkout's files) against a real
// server whose publisher registered a universe (user:1, user:2, user:5) and published
// user:1, user:2 and user:3 in an hour since sealed, and against a static mirror of it
// (`bloomcast mirror`, served as files). A line `//> PATTERN` is output the block must
// print: its stdout must have lines matching the patterns in order, `...` matching any
// text. Skipped without the bloomcast binary (`cargo build`), unless CI=true.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, binary, skipUnless, NO_BINARY, TOKEN } from "../support/server.js";
import { serveMirror } from "../support/static.js";

const skip = skipUnless(binary(), NO_BINARY);
const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const moduleUrl = (name) => new URL(`../${name}`, import.meta.url).href;

/** The README's fenced `js` blocks, with the line each starts on. */
function jsBlocks(markdown) {
  const blocks = [];
  let open = null;
  markdown.split("\n").forEach((line, n) => {
    const fence = /^```(.*)$/.exec(line.trim());
    if (fence && open) {
      if (open.info.split(/\s+/)[0] === "js") blocks.push(open);
      open = null;
    } else if (fence) open = { info: fence[1].trim(), line: n + 1, code: "" };
    else if (open) open.code += `${line}\n`;
  });
  assert.equal(open, null, "an unclosed code fence");
  return blocks;
}

/** Whether `line` matches `pattern`, in which `...` matches any text. */
function matches(pattern, line) {
  const source = pattern.split("...").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*");
  return new RegExp(`^${source}$`).test(line);
}

const run = (file, env) =>
  new Promise((resolve) =>
    execFile(process.execPath, [file], { env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      resolve({ code: error ? error.code : 0, stdout, stderr }),
    ),
  );

let server;
let mirror;
let work;
let env;

before(async () => {
  if (skip) return;
  work = mkdtempSync(join(tmpdir(), "bloomcast-js-readme-"));
  const past = await startServer({ env: { BLOOMCAST_CLOCK_OFFSET_SECONDS: "-3600" } });
  const post = (path, ids) =>
    fetch(`${past.base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ ids }),
    }).then((r) => r.json());
  await post("/universe", ["user:1", "user:2", "user:5"]);
  await post("/updates", ["user:1", "user:2", "user:3"]);
  await past.stop({ keep: true });
  // Restarted an hour past its last heartbeat on purpose: the hour is sealed.
  server = await startServer({ dir: past.dir, env: { BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS: "7200" } });
  const { public_key: pubkey } = await (await fetch(`${server.base}/.well-known/bloomcast.json`)).json();
  const dir = join(work, "mirror");
  await new Promise((resolve, reject) =>
    execFile(binary(), ["mirror", dir, "--url", server.base], (error, _out, stderr) => (error ? reject(new Error(stderr)) : resolve())),
  );
  mirror = await serveMirror(dir);
  env = { BLOOMCAST_SERVER: server.base, BLOOMCAST_TOKEN: TOKEN, BLOOMCAST_PUBKEY: pubkey, BLOOMCAST_MIRROR: mirror.base };
});

after(async () => {
  await mirror?.close();
  await server?.stop({ purge: true });
  if (work) rmSync(work, { recursive: true, force: true });
});

test("the README has js blocks, each importing the package", () => {
  const blocks = jsBlocks(readme);
  assert.ok(blocks.length >= 6, `${blocks.length} blocks`);
  for (const block of blocks) assert.match(block.code, /from "bloomcast-client"/, `README.md:${block.line}`);
});

test("every js block of the README runs and prints what it says", { skip }, async () => {
  for (const block of jsBlocks(readme)) {
    const code = block.code
      .replaceAll('"bloomcast-client/verify"', JSON.stringify(moduleUrl("verify.js")))
      .replaceAll('"bloomcast-client"', JSON.stringify(moduleUrl("bloomcast.js")));
    const file = join(work, `block-${block.line}.mjs`);
    writeFileSync(file, code);
    const { code: exit, stdout, stderr } = await run(file, env);
    const where = `README.md:${block.line}`;
    assert.equal(exit, 0, `${where} failed:\n${stderr}`);
    const lines = stdout.split("\n");
    let at = 0;
    for (const pattern of block.code.split("\n").filter((l) => l.trim().startsWith("//> ")).map((l) => l.trim().slice(4))) {
      while (at < lines.length && !matches(pattern, lines[at])) at++;
      assert.ok(at < lines.length, `${where}: no line matching ${JSON.stringify(pattern)} in:\n${stdout}`);
      at++;
    }
  }
});
