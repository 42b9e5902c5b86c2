// Headless Chromium driven over the DevTools protocol, for the dashboard test: the
// system `chromium` (Debian's package; $CHROMIUM to override), no browser download.
// WebSocket: the global one (Node 22+) or the `ws` devDependency (Node 20).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const NO_CHROMIUM =
  "no chromium: install it (Debian: apt-get install chromium) or set CHROMIUM=/path/to/chromium";

/** The Chromium executable, or null. */
export function chromiumPath() {
  for (const candidate of [process.env.CHROMIUM, "chromium", "chromium-browser", "google-chrome"]) {
    if (!candidate) continue;
    try {
      execFileSync(candidate, ["--version"], { stdio: "ignore" });
      return candidate;
    } catch {
      // try the next one
    }
  }
  return null;
}

/** `null` when a WebSocket client is at hand (Node 22+, or `ws` after `npm ci`), else why not. */
export async function noWebSocket() {
  try {
    await webSocketClass();
    return null;
  } catch {
    return "no WebSocket client: use Node 22+, or run `npm ci` in clients/js (installs ws)";
  }
}

async function webSocketClass() {
  if (typeof globalThis.WebSocket === "function") return globalThis.WebSocket;
  return (await import("ws")).default;
}

/** One page's DevTools session: `send(method, params)` and `on(event, fn)`. */
class Session {
  constructor(socket) {
    this.socket = socket;
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = new Map();
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(typeof event.data === "string" ? event.data : event.data.toString());
      if (message.id && this.pending.has(message.id)) {
        const { resolve, reject } = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.error) reject(new Error(`${message.error.message} (${message.error.code})`));
        else resolve(message.result);
      } else if (message.method) {
        for (const fn of this.listeners.get(message.method) ?? []) fn(message.params);
      }
    });
  }

  send(method, params = {}) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  on(method, fn) {
    if (!this.listeners.has(method)) this.listeners.set(method, []);
    this.listeners.get(method).push(fn);
  }

  /** Evaluates an expression in the page (awaiting promises) and returns its value. */
  async eval(expression) {
    const { result, exceptionDetails } = await this.send("Runtime.evaluate", {
      expression,
      awaitPromise: true,
      returnByValue: true,
    });
    if (exceptionDetails) throw new Error(`in page: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
    return result.value;
  }

  /** Polls `expression` until it is truthy; returns its value. */
  async waitFor(expression, what, timeoutMs = 15000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await this.eval(expression);
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Records into `errors` (strings) what `page` reports as an error (console errors and
 * failed asserts, uncaught exceptions, error log entries), and turns on the domains that
 * report them and the page's events. */
export async function collectErrors(page, errors) {
  page.on("Runtime.consoleAPICalled", (e) => {
    if (e.type === "error" || e.type === "assert") errors.push(`console.${e.type}: ${e.args.map((a) => a.value ?? a.description).join(" ")}`);
  });
  page.on("Runtime.exceptionThrown", (e) => errors.push(`exception: ${e.exceptionDetails.exception?.description ?? e.exceptionDetails.text}`));
  page.on("Log.entryAdded", (e) => {
    if (e.entry.level === "error") errors.push(`log: ${e.entry.text} ${e.entry.url ?? ""}`);
  });
  await page.send("Runtime.enable");
  await page.send("Log.enable");
  await page.send("Page.enable");
}

/** Launches headless Chromium; resolves to `{page, close()}` with one blank page open. */
export async function launch() {
  const exe = chromiumPath();
  if (!exe) throw new Error(NO_CHROMIUM);
  const profile = mkdtempSync(join(tmpdir(), "bloomcast-chromium-"));
  const child = spawn(
    exe,
    [
      "--headless=new",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-extensions",
      "--hide-scrollbars",
      "--remote-debugging-port=0",
      `--user-data-dir=${profile}`,
      "about:blank",
    ],
    // A process group of its own, so that closing can stop the helper processes too.
    { stdio: ["ignore", "ignore", "pipe"], detached: true },
  );
  const port = await new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`chromium did not start:\n${seen}`)), 30000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      seen += chunk;
      const m = /DevTools listening on ws:\/\/[^:]+:(\d+)\//.exec(seen);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.on("exit", (code) => reject(new Error(`chromium exited with ${code}:\n${seen}`)));
  });
  child.stderr.resume();
  const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const target = targets.find((t) => t.type === "page");
  const WebSocketImpl = await webSocketClass();
  const socket = new WebSocketImpl(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve);
    socket.addEventListener("error", reject);
  });
  const page = new Session(socket);
  const close = async () => {
    socket.close();
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    // Chromium's helper processes can outlive the browser process and still write the
    // profile: stop the whole group, then remove the profile, retrying for a while
    // (ENOTEMPTY). A profile left in the temporary directory is not a test failure.
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // The group is already gone.
    }
    try {
      rmSync(profile, { recursive: true, force: true, maxRetries: 50, retryDelay: 100 });
    } catch (e) {
      console.warn(`# left the browser profile ${profile}: ${e.message}`);
    }
  };
  return { page, close };
}
