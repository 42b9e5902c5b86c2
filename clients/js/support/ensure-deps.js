// Run by `npm test` first (the `pretest` script). The dashboard test drives Chromium over a
// WebSocket, which Node 22+ has built in; on Node 20 it needs the `ws` devDependency, so
// when neither is there this installs the locked devDependencies (`npm ci`), and `npm test`
// works on a fresh checkout without a separate install step.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
if (typeof globalThis.WebSocket !== "function" && !existsSync(join(root, "node_modules", "ws"))) {
  console.error("npm test: installing the devDependencies first (ws, for the dashboard test on Node 20)");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  execFileSync(npm, ["ci", "--no-audit", "--no-fund"], { cwd: root, stdio: "inherit" });
}
