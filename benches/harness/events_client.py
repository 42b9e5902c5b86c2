#!/usr/bin/env python3
"""The measuring client of benches/harness/events.sh: subscribers of `GET /events`, a
publisher of `POST /updates`, and the fetch of the open hour a subscriber makes on a
`version` event, all on raw asyncio sockets (HTTP/1.1), so that the bytes and times are
the wire's. Prints one JSON object on stdout.

  events_client.py freshness --sub URL --pub URL --token T [--batches N] ...
  events_client.py fanout --base URL --token T --pid PID --subscribers N [--wrk-out F -- wrk ...]
  events_client.py quiet --base URL --seconds S

Stdlib only, except `zstandard` (for `dcz` deltas), used when importable: without it the
subscriber asks for gzip only and says so (`"dcz": false`).
"""
import argparse
import asyncio
import base64
import gzip
import hashlib
import json
import os
import random
import re
import resource
import sys
import time
from urllib.parse import urlsplit

try:
    import zstandard
except ImportError:  # gzip only
    zstandard = None

now = time.monotonic


def split(url):
    u = urlsplit(url)
    return u.hostname, u.port or 80


def pct(values, p):
    """The p-th percentile (nearest rank) of values."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def summary(values):
    return {
        "n": len(values),
        "min": min(values) if values else None,
        "p50": pct(values, 50),
        "p90": pct(values, 90),
        "p99": pct(values, 99),
        "max": max(values) if values else None,
    }


class Conn:
    """One keep-alive HTTP/1.1 connection: request() returns (status, headers, body)."""

    def __init__(self, url):
        self.host, self.port = split(url)
        self.r = self.w = None

    async def open(self):
        self.r, self.w = await asyncio.open_connection(self.host, self.port)

    async def request(self, method, path, headers=None, body=b""):
        for attempt in (0, 1):
            if self.w is None:
                await self.open()
            try:
                return await self._request(method, path, headers or {}, body)
            except (ConnectionError, asyncio.IncompleteReadError):
                self.close()
                if attempt:
                    raise

    async def _request(self, method, path, headers, body):
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        for k, v in headers.items():
            head += f"{k}: {v}\r\n"
        if body or method == "POST":
            head += f"Content-Length: {len(body)}\r\n"
        self.w.write(head.encode() + b"\r\n" + body)
        await self.w.drain()
        status, hdrs = await read_head(self.r)
        if "content-length" in hdrs:
            data = await self.r.readexactly(int(hdrs["content-length"]))
        elif hdrs.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int((await self.r.readline()).split(b";")[0], 16)
                data += await self.r.readexactly(size + 2)
                data = data[:-2]
                if size == 0:
                    break
        elif status in (204, 304) or method == "HEAD":
            data = b""
        else:
            data = await self.r.read()
            self.close()
        if hdrs.get("connection", "").lower() == "close":
            self.close()
        return status, hdrs, data

    def close(self):
        if self.w is not None:
            self.w.close()
        self.r = self.w = None


async def read_head(r):
    line = await r.readline()
    if not line:
        raise ConnectionError("closed")
    status = int(line.split()[1])
    hdrs = {}
    while True:
        line = await r.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        k, _, v = line.decode("latin-1").partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return status, hdrs


class Stream:
    """A raw `GET /events`: yields (event, data, t) and counts every byte received
    after the response head (chunk framing included)."""

    def __init__(self, url):
        self.host, self.port = split(url)
        self.raw = 0  # bytes after the head, framing included
        self.head_bytes = 0
        self.heartbeats = 0
        self.status = None
        self.last_id = None

    async def open(self, last_id=None):
        self.r, self.w = await asyncio.open_connection(self.host, self.port)
        resume = f"Last-Event-ID: {last_id}\r\n" if last_id else ""
        self.w.write(
            f"GET /events HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Accept: text/event-stream\r\nCache-Control: no-cache\r\n{resume}\r\n".encode()
        )
        await self.w.drain()
        head = await self.r.readuntil(b"\r\n\r\n")
        self.head_bytes = len(head)
        self.status = int(head.split()[1])
        self.chunked = b"chunked" in head.lower()
        self.buf = b""  # decoded body not yet parsed
        self.pending = b""  # raw bytes not yet de-chunked

    def close(self):
        self.w.close()

    def _dechunk(self):
        out = []
        p = self.pending
        while True:
            i = p.find(b"\r\n")
            if i < 0:
                break
            size = int(p[:i].split(b";")[0], 16)
            if len(p) < i + 2 + size + 2:
                break
            out.append(p[i + 2 : i + 2 + size])
            p = p[i + 2 + size + 2 :]
            if size == 0:
                raise ConnectionError("stream ended")
        self.pending = p
        return b"".join(out)

    async def events(self):
        while True:
            data = await self.r.read(65536)
            if not data:
                raise ConnectionError("stream closed")
            t = now()
            self.raw += len(data)
            if self.chunked:
                self.pending += data
                self.buf += self._dechunk()
            else:
                self.buf += data
            while True:
                i = self.buf.find(b"\n\n")
                if i < 0:
                    break
                block, self.buf = self.buf[:i], self.buf[i + 2 :]
                name, payload = "message", []
                for line in block.split(b"\n"):
                    if line.startswith(b":"):
                        self.heartbeats += 1
                    elif line.startswith(b"event:"):
                        name = line[6:].strip().decode()
                    elif line.startswith(b"id:"):
                        self.last_id = line[3:].strip().decode()
                    elif line.startswith(b"data:"):
                        payload.append(line[5:].strip())
                if payload:
                    yield name, json.loads(b"\n".join(payload)), t


def decode(hdrs, body, dictionary):
    ce = hdrs.get("content-encoding", "").lower()
    if ce == "gzip":
        return gzip.decompress(body)
    if ce == "dcz":
        assert body[:8] == bytes.fromhex("5e2a4d1820000000"), "dcz header"
        assert body[8:40] == hashlib.sha256(dictionary).digest(), "dcz dictionary hash"
        d = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
        return zstandard.ZstdDecompressor(dict_data=d).decompress(body[40:])
    if ce:
        raise ValueError(f"unknown Content-Encoding {ce}")
    return body


def base_etag(etag):
    return re.sub(r'-(gz|dcz)"$', '"', etag or "")


class Follower:
    """A subscriber that, on each `version` event newer than what it holds, fetches the
    open hour's `.bin` as the clients do after an event (If-None-Match, Accept-Encoding:
    dcz, gzip, Available-Dictionary of the newest version the server offered as a
    dictionary, and Cache-Control: no-cache), and
    records when it holds each count."""

    def __init__(self, url):
        self.url = url
        self.stream = Stream(url)
        self.conn = Conn(url)
        self.held = None  # (count, etag as sent)
        self.dictionary = None
        self.holdings = []  # (count, t) after each 200
        self.heard = []  # (count, t) of each version event
        self.wanted = None  # newest version event not yet fetched
        self.wake = asyncio.Event()
        self.encodings = {}
        self.errors = []
        self.first = asyncio.Event()
        self.fetch_ms = []
        self.body_bytes = []
        self.stale = 0  # fetches that answered an older version than the event's
        self.repoll = 0.25

    async def run(self):
        await self.stream.open()
        if self.stream.status != 200:
            raise RuntimeError(f"/events answered {self.stream.status}")
        fetcher = asyncio.create_task(self.fetcher())
        try:
            async for name, data, t in self.stream.events():
                if name == "version":
                    self.heard.append((data["count"], t))
                    if self.held is None or data["count"] > self.held[0]:
                        self.wanted = data
                        self.wake.set()
                elif name == "reset":
                    self.errors.append(f"reset: {data}")
        finally:
            fetcher.cancel()

    async def fetcher(self):
        while True:
            await self.wake.wait()
            self.wake.clear()
            ev, self.wanted = self.wanted, None
            if ev is None:
                continue
            try:
                await self.fetch(ev)
            except Exception as e:  # noqa: BLE001 (a measurement, keep going)
                self.errors.append(f"fetch: {e!r}")
            self.first.set()
            # A cache in between may still answer an older version (a 304 to what is
            # held, or an older body) until its copy expires: poll again, as a client
            # that was told a newer version exists would, until it holds it.
            if self.held is None or self.held[0] < ev["count"]:
                self.stale += 1
                if self.wanted is None:
                    self.wanted = ev
                await asyncio.sleep(self.repoll)
                self.wake.set()

    async def fetch(self, ev):
        # Told by the event that a newer version exists: caches between are asked for a
        # copy no older than it, as the clients ask (deploy/varnish fetches it again once).
        hdrs = {"Accept-Encoding": "dcz, gzip" if zstandard else "gzip", "Cache-Control": "no-cache"}
        if self.held:
            hdrs["If-None-Match"] = self.held[1]
        if self.dictionary is not None and zstandard:
            h = base64.b64encode(hashlib.sha256(self.dictionary).digest()).decode()
            hdrs["Available-Dictionary"] = f":{h}:"
        t0 = now()
        status, rh, body = await self.conn.request("GET", ev["path"] + ".bin", hdrs)
        t = now()
        if status == 304:
            return
        if status != 200:
            raise RuntimeError(f"{ev['path']}.bin answered {status}")
        ident = decode(rh, body, self.dictionary)
        # Repr-Digest (RFC 9530) is of the representation as sent: content coding included.
        digest = base64.b64encode(hashlib.sha256(body).digest()).decode()
        if rh.get("repr-digest") and f":{digest}:" not in rh["repr-digest"]:
            raise RuntimeError(f"Repr-Digest does not match the body ({rh.get('content-encoding')})")
        count = int(rh.get("bloom-count", -1))
        ce = rh.get("content-encoding", "identity")
        self.encodings[ce] = self.encodings.get(ce, 0) + 1
        self.fetch_ms.append((t - t0) * 1000)
        self.body_bytes.append(len(body))
        if "use-as-dictionary" in rh:
            self.dictionary = ident
        if self.held is None or count >= self.held[0]:
            self.held = (count, rh.get("etag"))
            self.holdings.append((count, t))


async def post(conn, token, ids):
    status, _, body = await conn.request(
        "POST",
        "/updates",
        {"Authorization": f"Bearer {token}", "Content-Type": "text/plain"},
        "\n".join(ids).encode(),
    )
    if status != 200:
        raise RuntimeError(f"POST /updates answered {status}: {body[:200]!r}")
    return json.loads(body)


def first_at_least(pairs, count, after=None):
    for c, t in pairs:
        if c >= count:
            return t
    return None


async def freshness(a):
    f = Follower(a.sub)
    task = asyncio.create_task(f.run())
    await asyncio.wait_for(f.first.wait(), 30)
    if f.held is None:
        raise RuntimeError(f"no first version: {f.errors}")
    base = f.held[0]
    pub = Conn(a.pub)
    prefix = f"ev{os.getpid()}x{random.randrange(1 << 30):x}"
    acks = []  # (expected count, t)
    hour = None
    rng = random.Random(a.seed)
    for i in range(a.batches):
        await asyncio.sleep(rng.uniform(a.min_gap, a.max_gap))
        ids = [f"{prefix}:{i}:{j}" for j in range(a.batch_ids)]
        t0 = now()
        receipt = await post(pub, a.token, ids)
        t = now()
        hour = hour or receipt["hour"]
        if receipt["hour"] != hour:
            raise RuntimeError("the hour changed during the run: run it again")
        acks.append((base + (i + 1) * a.batch_ids, t, t - t0))
    deadline = now() + a.wait
    while now() < deadline and (not f.holdings or f.holdings[-1][0] < acks[-1][0]):
        await asyncio.sleep(0.05)
    task.cancel()
    held, heard, missed = [], [], 0
    for count, t, _ in acks:
        th = first_at_least(f.holdings, count)
        te = first_at_least(f.heard, count)
        if th is None:
            missed += 1
        else:
            held.append(max(0.0, th - t) * 1000)
        if te is not None:
            heard.append(max(0.0, te - t) * 1000)
    early = sum(1 for count, t, _ in acks if (first_at_least(f.holdings, count) or 1e18) < t)
    return {
        "held_ms": summary(held),
        "event_ms": summary(heard),
        "post_ms": summary([x[2] * 1000 for x in acks]),
        "fetch_ms": summary(f.fetch_ms),
        "fetches": len(f.fetch_ms),
        "stale": f.stale,
        "body_bytes": summary(f.body_bytes),
        "encodings": f.encodings,
        "missed": missed,
        "held_before_ack": early,
        "errors": f.errors[:5],
        "dcz": bool(zstandard),
        "batches": a.batches,
        "batch_ids": a.batch_ids,
    }


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])


class Idle:
    """A subscriber that notes when it first sees a version of at least `target`."""

    __slots__ = ("r", "w", "buf", "seen", "at", "opened")

    def __init__(self):
        self.buf = b""
        self.seen = 0
        self.at = None
        self.opened = False


async def fanout(a):
    host, port = split(a.base)
    before = rss_kb(a.pid)
    state = {"target": None, "closed": 0, "refused": 0, "open": 0}
    subs = [Idle() for _ in range(a.subscribers)]
    tasks = []
    t0 = now()
    sem = asyncio.Semaphore(256)

    async def one(s):
        async with sem:
            try:
                await asyncio.wait_for(idle_sub_open(host, port, s), 60)
            except Exception as e:  # noqa: BLE001
                state.setdefault("errors", []).append(repr(e))
                return
        await idle_read(s, state)

    tasks = [asyncio.create_task(one(s)) for s in subs]
    while state["open"] + state["refused"] + len(state.get("errors", [])) < a.subscribers and now() - t0 < 120:
        await asyncio.sleep(0.2)
    opened_s = now() - t0
    await asyncio.sleep(3)
    with_subs = rss_kb(a.pid)
    out = {
        "subscribers": a.subscribers,
        "open": state["open"],
        "refused": state["refused"],
        "connect_errors": len(state.get("errors", [])),
        "errors": state.get("errors", [])[:3],
        "opened_seconds": round(opened_s, 1),
        "rss_before_kb": before,
        "rss_with_kb": with_subs,
        "per_subscriber_bytes": (with_subs - before) * 1024 / max(1, state["open"]),
    }
    if a.wrk:
        proc = await asyncio.create_subprocess_exec(*a.wrk, stdout=open(a.wrk_out, "w"))
        await proc.wait()
        out["rss_after_wrk_kb"] = rss_kb(a.pid)
    # One batch: how long until every subscriber has its version event.
    await asyncio.sleep(1.5)
    base = max(s.seen for s in subs)
    state["target"] = base + a.batch_ids
    pub = Conn(a.base)
    ids = [f"fan{os.getpid()}:{j}" for j in range(a.batch_ids)]
    tp = now()
    await post(pub, a.token, ids)
    ta = now()
    opened = [s for s in subs if s.opened]
    while now() - ta < a.wait and any(s.at is None for s in opened):
        await asyncio.sleep(0.05)
    lat = [(s.at - ta) * 1000 for s in opened if s.at is not None]
    out["delivery_ms"] = summary(lat)
    out["delivered"] = len(lat)
    out["post_ms"] = (ta - tp) * 1000
    out["closed_by_server"] = state["closed"]
    out["rss_end_kb"] = rss_kb(a.pid)
    for t in tasks:
        t.cancel()
    return out


async def idle_sub_open(host, port, s):
    s.r, s.w = await asyncio.open_connection(host, port)
    s.w.write(f"GET /events HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
    await s.w.drain()


async def idle_read(s, state):
    try:
        while True:
            data = await s.r.read(65536)
            if not data:
                state["closed"] += 1
                return
            if not s.opened and not s.buf and b" 200 " not in data.split(b"\r\n", 1)[0]:
                state["refused"] += 1
                return
            s.buf = (s.buf + data)[-512:]
            for m in re.finditer(rb'"count":(\d+)', s.buf):
                c = int(m.group(1))
                if c > s.seen:
                    s.seen = c
                if state["target"] is not None and c >= state["target"] and s.at is None:
                    s.at = now()
            if not s.opened and b"event: version" in s.buf:
                s.opened = True
                state["open"] += 1
    except (ConnectionError, OSError):
        state["closed"] += 1


async def quiet(a):
    """One subscriber for a.seconds with nothing changing: every byte received,
    reconnecting as EventSource does (after `retry:`, with Last-Event-ID) when the
    stream ends."""
    t0 = now()
    end = t0 + a.seconds
    heads = opening = steady = heartbeats = versions = 0
    ends = []
    last_id = None
    while now() < end:
        st = Stream(a.base)
        await st.open(last_id)
        if st.status != 200:
            raise RuntimeError(f"/events answered {st.status}")
        heads += st.head_bytes
        opened_at = None
        gen = st.events()

        async def consume():
            nonlocal opened_at, versions, last_id
            async for name, _, _ in gen:
                if name == "version":
                    versions += 1
                    if opened_at is None:
                        opened_at = st.raw
                last_id = st.last_id or last_id

        try:
            await asyncio.wait_for(consume(), end - now())
        except asyncio.TimeoutError:
            pass
        except (ConnectionError, OSError) as e:
            ends.append(round(now() - t0, 1))
        st.close()
        opening += opened_at or 0
        steady += st.raw - (opened_at or 0)
        heartbeats += st.heartbeats
        if now() < end:
            await asyncio.sleep(2.0)  # retry: 2000
    secs = now() - t0
    total = heads + opening + steady
    return {
        "seconds": round(secs, 1),
        "head_bytes": heads,
        "opening_bytes": opening,
        "steady_bytes": steady,
        "heartbeats": heartbeats,
        "versions": versions,
        "reconnects": len(ends),
        "ended_at": ends[:10],
        "bytes_per_hour": steady * 3600 / secs,
        "all_bytes_per_hour": (total if ends else steady) * 3600 / secs,
    }


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("freshness")
    f.add_argument("--sub", required=True)
    f.add_argument("--pub", required=True)
    f.add_argument("--token", required=True)
    f.add_argument("--batches", type=int, default=100)
    f.add_argument("--batch-ids", type=int, default=10)
    f.add_argument("--min-gap", type=float, default=0.3)
    f.add_argument("--max-gap", type=float, default=2.0)
    f.add_argument("--wait", type=float, default=45)
    f.add_argument("--seed", type=int, default=1)
    o = sub.add_parser("fanout")
    o.add_argument("--base", required=True)
    o.add_argument("--token", required=True)
    o.add_argument("--pid", type=int, required=True)
    o.add_argument("--subscribers", type=int, default=10000)
    o.add_argument("--batch-ids", type=int, default=10)
    o.add_argument("--wait", type=float, default=30)
    o.add_argument("--wrk-out")
    o.add_argument("wrk", nargs="*")
    q = sub.add_parser("quiet")
    q.add_argument("--base", required=True)
    q.add_argument("--seconds", type=float, default=120)
    a = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    out = asyncio.run({"freshness": freshness, "fanout": fanout, "quiet": quiet}[a.cmd](a))
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()
