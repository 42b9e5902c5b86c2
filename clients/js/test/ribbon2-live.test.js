// Version 2 against a real server: its clock is set so that its hour ends a few seconds
// after start, 3,000 IDs go into that hour, and once it closes every precision asked for
// comes back within 1.05x of the floor, decoded by this client with every ID found.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, StatusError, Ribbon2 } from "../bloomcast.js";
import { startServer, binary, skipUnless, NO_BINARY, TOKEN } from "../support/server.js";

const skip = skipUnless(binary(), NO_BINARY);
const ids = Array.from({ length: 3000 }, (_, i) => `user:${i}`);

/** A server whose hour ends 6 s after start, with `ids` in that hour: [server, hour]. */
async function closingHour() {
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = Date.now() / 1000;
    const offset = Math.floor(3600 - 6 - (now % 3600));
    const server = await startServer({ env: { BLOOMCAST_CLOCK_OFFSET_SECONDS: String(offset) } });
    const receipt = await new Client(server.base, { token: TOKEN }).ingest(ids);
    const ending = new Date((now + offset) * 1000).toISOString().slice(0, 13);
    if (receipt.hour.startsWith(ending)) return [server, receipt.hour];
    await server.stop();
  }
  throw new Error("the ingest kept landing in the next hour");
}

test("a closed hour comes as version 2 at every precision asked, near the floor", { skip }, async () => {
  const [server, hour] = await closingHour();
  try {
    const client = new Client(server.base);
    const deadline = Date.now() + 30000;
    for (;;) {
      try {
        await client.ribbon2(hour, { fpp: 0.05 });
        break;
      } catch (e) {
        if (!(e instanceof StatusError) || e.status !== 406 || Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    for (const fpp of [0.05, 0.0437, 0.01, 0.001, 2.2e-5, 2 ** -20]) {
      const path = `${server.base}/${hour.slice(0, 4)}/${hour.slice(5, 7)}/${hour.slice(8, 10)}/${hour.slice(11, 13)}.ribbon2?fpp=${fpp}`;
      const body = new Uint8Array(await (await fetch(path)).arrayBuffer());
      const f = Ribbon2.fromBytes(body);
      // Near the floor of the published grade served (the next stricter).
      assert.ok(body.length <= (1.05 * 3000 * Math.log2(1 / f.fpp)) / 8, `${fpp}: ${body.length} bytes`);
      assert.ok(f.fpp <= fpp && f.n === 3000, `${fpp}`);
      for (const id of ids) assert.ok(await f.contains(id), `${fpp}: false negative ${id}`);
      const viaClient = await client.ribbon2(hour, { fpp });
      assert.equal(viaClient.fpp, f.fpp);
    }
  } finally {
    await server.stop();
  }
});
