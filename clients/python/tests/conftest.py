"""Shared fixtures: the repository's test vectors, a small in-process HTTP server
speaking the parts of PROTOCOL.md the CLI tests need (an index, filter documents, and
hours' `.bin` forms with validators and open-hour deltas), and the real server
(`live_server`).

Something a test needs that is missing (an optional package, the server binary) makes
it skip, saying what and how to enable it; `.ci/run` fails on any skip."""

import base64
import hashlib
import http.server
import json
import os
import pathlib
import re
import subprocess
import tempfile
import threading
import time

import pytest

from bloomcast_client import DCZ_MAGIC, Exact, Filter, available_dictionary, optimal

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture
def vectors_path():
    return ROOT / "docs" / "test-vectors.json"


def hour_filter(ids, m=959, k=7):
    f = Filter(m, k)
    for id_ in ids:
        f.add(id_)
    return f


def at_hour(monkeypatch, hour, minutes=30):
    """Sets the client's clock to `minutes` past `hour` (RFC 3339)."""
    from bloomcast_client import coverage, parse_hour
    now = parse_hour(hour).timestamp() + minutes * 60
    monkeypatch.setattr(coverage, "clock", lambda: now)


class FakeServer:
    """Serves GET / and any filter path with a document holding `ids`; records paths.

    `hours` maps an hour path (/2026/11/23/09) to (ids, complete) for that hour alone. Its
    `.bin` form comes with Bloom-* headers and a strong ETag (304 on a match); an open
    hour's also says Use-As-Dictionary, and a request offering a version served before
    (Available-Dictionary, dcz in Accept-Encoding) gets a dcz delta against it.

    `index`: fields added to GET / (e.g. exact_since, target_fpp, hours). `exact` maps an
    hour path to (body, headers) served at `.exact` (section 14) with the Bloom-* headers
    and Repr-Digest of the body, which `headers` override, or to a status it answers
    with (406: a build over the server's budget); other `.exact` paths are 404,
    the current hour's 406. `chain` maps an hour path to its chain entry, served at
    `/chain/...?limit=1`. `events`: what each request for `/events` gets in turn, an
event stream's bytes (sent as `text/event-stream`, then the connection is closed), a
status, or a dict answered as JSON (a catch-all); past the last, and without `events`,
404 (no stream). Ribbons are 404. `corrupt`: hour paths whose every form
    answers 500 `corrupt`, as does every `/since/` union over one. `checkpoint`: the
    document served at `/checkpoint` (404 without one)."""

    def __init__(self, current="2026-11-23T10:00:00Z", genesis="2026-11-01T00:00:00Z",
                 ids=(), hours=None, retention_hours=720, static=False, index=None,
                 exact=None, chain=None, corrupt=(), checkpoint=None, events=None):
        self.current, self.genesis, self.ids = current, genesis, list(ids)
        self.hours, self.retention_hours = dict(hours or {}), retention_hours
        self.index, self.exact, self.chain = dict(index or {}), dict(exact or {}), \
            dict(chain or {})
        self.static = static  # a static mirror: .bin bodies without their Bloom-* headers
        self.corrupt = set(corrupt)
        self.checkpoint = checkpoint  # served at /checkpoint (404 without)
        self.events = list(events or [])  # /events, one per request (404 past the last)
        self.paths, self.posted, self.headers, self.kept = [], [], [], {}
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, doc, etag=None):
                body = json.dumps(doc).encode()
                self.send_response(status)
                if etag:
                    self.send_header("ETag", etag)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                fake.paths.append(self.path)
                fake.headers.append(dict(self.headers))
                if self.path == "/events":
                    return self._send_events()
                if self.path == "/":
                    return self._send(200, {
                        "service": "bloomcast", "retention_hours": fake.retention_hours,
                        "genesis": fake.genesis,
                        "current": {"hour": fake.current, "url": "/x"}, **fake.index})
                hour = self.path.split("?")[0].split(".")[0]
                since = hour.removeprefix("/since") if hour.startswith("/since/") else None
                if hour in fake.corrupt or any(since and c >= since for c in fake.corrupt):
                    return self._send(500, {"error": "corrupt", "message": "this filter's "
                                            "stored data failed verification"})
                if self.path.endswith(".exact"):
                    return self._send_exact(self.path[:-len(".exact")])
                if self.path.startswith("/chain/"):
                    entry = fake.chain.get(self.path[len("/chain"):].split("?")[0])
                    if entry is None:
                        return self._send(404, {"error": "not_found", "message": "none"})
                    return self._send(200, [entry])
                if self.path == "/checkpoint" and fake.checkpoint:
                    return self._send(200, fake.checkpoint)
                if ".ribbon" in self.path or self.path.split("?")[0].endswith(".sig") or \
                        self.path in ("/.well-known/bloomcast.json", "/checkpoint"):
                    return self._send(404, {"error": "not_found", "message": "none"})
                if self.path.endswith(".bin") and not fake.static:
                    return self._send_bin(self.path[:-len(".bin")])
                if self.path.removesuffix(".json") in fake.hours:
                    path = self.path.removesuffix(".json")
                    ids, complete = fake.hours[path]
                    f = hour_filter(ids)
                    # A complete hour's tag: the client keeps the hour (never asks again).
                    etag = f'"{f.hex()[:16]}-json"' if complete else None
                    return self._send(200, {
                        "hour": fake.hour_name(path), "complete": complete,
                        "count": len(ids), "m": f.m, "k": f.k, "hash": "sha1-km32",
                        "fpp": 0.01, "filter": f.hex()}, etag)
                m, k = optimal(max(len(fake.ids), 1), 0.01)
                f = Filter(m, k)
                for id_ in fake.ids:
                    f.add(id_)
                doc = {"complete": False, "count": len(fake.ids), "m": m, "k": k,
                       "hash": "sha1-km32", "fpp": 0.01, "filter": f.hex()}
                if self.path.startswith("/since/"):
                    doc.update({"from": "from", "to": fake.current})
                else:
                    doc["hour"] = fake.current
                return self._send(200, doc)

            def _send_events(self):
                stream = fake.events.pop(0) if fake.events else 404
                if isinstance(stream, dict):
                    return self._send(200, stream)
                if isinstance(stream, int):
                    return self._send(stream, {"error": "not_found" if stream == 404
                                               else "busy", "message": "no stream"})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-store")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(stream)
                self.wfile.flush()
                self.close_connection = True

            def _send_exact(self, path):
                if fake.hour_name(path) == fake.current:
                    return self._send(406, {"error": "not_acceptable",
                                            "message": "the open hour has no exact body"})
                if path not in fake.exact:
                    return self._send(404, {"error": "not_found",
                                            "message": "no exact body for this hour"})
                if isinstance(fake.exact[path], int):  # a refusal: 406 over budget
                    return self._send(fake.exact[path], {
                        "error": "not_acceptable", "message": "the exact form needs more "
                        "memory to build than this server's build budget"})
                body, extra = fake.exact[path]
                exact = Exact.from_bytes(body)
                headers = {
                    "Content-Type": "application/vnd.bloomcast.exact",
                    "Repr-Digest": "sha-256=:" + base64.b64encode(
                        hashlib.sha256(body).digest()).decode() + ":",
                    "Bloom-Hour": fake.hour_name(path),
                    "Bloom-Count": str(exact.changed_count),
                    "Bloom-Universe": str(exact.universe),
                    "Bloom-Complete": "true", **extra}
                self.send_response(200)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _send_bin(self, path):
                ids, complete, *signed = fake.hours.get(path, (fake.ids, False))
                # A third element: the hour as docs/chain-vectors.json lists it, served
                # with its m, k, chain link and signature.
                vector = signed[0] if signed else None
                f = hour_filter(ids, vector["m"], vector["k"]) if vector else hour_filter(ids)
                body = bytes(f.data)
                # A sealed hour's tag differs from its last open version's, as the
                # server's (made from the chain digest), even with the same bytes.
                sealed = b"sealed" if complete else b""
                etag = f'"{hashlib.sha256(body + sealed).hexdigest()[:20]}"'
                if self.headers.get("If-None-Match") in (etag, etag[:-1] + '-dcz"'):
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    return self.end_headers()
                offered = fake.kept.get(self.headers.get("Available-Dictionary") or "")
                if not complete:
                    fake.kept[available_dictionary(body)] = body
                self.send_response(200)
                for name, value in (("M", f.m), ("K", f.k), ("Hash", "sha1-km32"),
                                    ("Count", len(ids)), ("Hour", fake.hour_name(path)),
                                    ("Complete", str(complete).lower())):
                    self.send_header("Bloom-" + name, str(value))
                if not complete:
                    self.send_header("Use-As-Dictionary", f'match="{path}.bin", id="x"')
                if vector:
                    self.send_header("Bloom-Prev-Header", vector["prev"])
                    self.send_header("Bloom-Signature", vector["signature"])
                if offered and "dcz" in (self.headers.get("Accept-Encoding") or ""):
                    import zstandard
                    d = zstandard.ZstdCompressionDict(
                        offered, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
                    body = (DCZ_MAGIC + hashlib.sha256(offered).digest()
                            + zstandard.ZstdCompressor(dict_data=d).compress(body))
                    self.send_header("Content-Encoding", "dcz")
                    etag = etag[:-1] + '-dcz"'
                self.send_header("ETag", etag)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                length = int(self.headers["Content-Length"])
                batch = json.loads(self.rfile.read(length))["ids"]
                fake.posted.append(batch)
                self._send(200, {"hour": fake.current, "accepted": len(batch)})

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def hour_name(self, path):
        """/2026/11/23/09 -> 2026-11-23T09:00:00Z (the current hour for other paths)."""
        parts = path.strip("/").split("/")
        if len(parts) != 4 or not all(p.isdigit() for p in parts):
            return self.current
        return "{}-{}-{}T{}:00:00Z".format(*parts)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_server(monkeypatch):
    """Makes FakeServers; the client's clock (bloomcast_client.coverage.clock) is set to
    half past the current hour of the last one made, so its hours are not stale."""
    servers = []

    def make(**kwargs):
        server = FakeServer(**kwargs)
        servers.append(server)
        at_hour(monkeypatch, server.current)
        return server

    yield make
    for server in servers:
        server.close()


# --- the real server ---------------------------------------------------------------------

LIVE_TOKEN = "python-client-test-token"
NO_BINARY = ("no bloomcast binary: run `cargo build --bin bloomcast` at the repository "
             "root (or set BLOOMCAST_BIN=/path/to/bloomcast)")


def post_ids(base, path, ids):
    """POSTs `{"ids": ids}` to `path` (`/updates`, `/universe`) of the live server at
    `base` with its ingest token; returns the server's answer."""
    import urllib.request
    request = urllib.request.Request(
        base + path, data=json.dumps({"ids": ids}).encode(),
        headers={"Authorization": "Bearer " + LIVE_TOKEN, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def bloomcast_binary():
    """$BLOOMCAST_BIN, else the workspace's debug then release build (under
    $CARGO_TARGET_DIR when set, else target/), as clients/js/support/server.js; or None."""
    targets = [pathlib.Path(os.environ["CARGO_TARGET_DIR"])] \
        if os.environ.get("CARGO_TARGET_DIR") else []
    targets.append(ROOT / "target")
    candidates = [os.environ.get("BLOOMCAST_BIN")] + [
        str(t / build / "bloomcast") for t in targets for build in ("debug", "release")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


class LiveServer:
    """`bloomcast serve` on a free port with a data directory of its own and the ingest
    token LIVE_TOKEN. `base` is its URL (http://127.0.0.1:PORT); `settings`, more
    BLOOMCAST_* variables."""

    def __init__(self, binary, data_dir, **settings):
        env = {k: v for k, v in os.environ.items() if not k.startswith("BLOOMCAST_")}
        env.update(BLOOMCAST_LISTEN="127.0.0.1:0", BLOOMCAST_DATA_DIR=str(data_dir),
                   BLOOMCAST_INGEST_TOKENS=LIVE_TOKEN, RUST_LOG="info", **settings)
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen([binary, "serve"], env=env, cwd=data_dir,
                                        stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=self.log)
        self.base = "http://" + self._address()
        self._wait_ready()

    def _address(self):
        """The address of the log's "listening addr=..." line."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = re.search(r"listening addr=(\S+)", self.log_text())
            if found:
                return found.group(1)
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.close()
        raise RuntimeError(f"the server did not start:\n{self.log_text()}")

    def _wait_ready(self):
        """Until /healthz answers 200 (the open hour is loaded)."""
        import urllib.request
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.base + "/healthz", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)
        self.close()
        raise RuntimeError(f"the server never became ready:\n{self.log_text()}")

    def log_text(self):
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def close(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


@pytest.fixture
def live_server(tmp_path):
    """A fresh real server (LiveServer); skips, saying how to enable it, without a
    bloomcast binary."""
    binary = bloomcast_binary()
    if binary is None:
        pytest.skip(NO_BINARY)
    data = tmp_path / "server"
    data.mkdir()
    server = LiveServer(binary, data)
    yield server
    server.close()


# --- one real publisher with sealed hours, for the hostile-mirror tests (issue 53) ------

ORIGIN_BATCHES = [[f"h{n}:{i}" for i in range(20)] for n in range(3)] + [["open:1", "open:2"]]


@pytest.fixture(scope="session")
def origin(tmp_path_factory):
    """A real server whose last three hours are sealed and signed, 20 IDs `h{n}:{i}` in
    hour n (hostile.Sealed), and `open:1`, `open:2` in its open hour; `.hours` names
    them, `.pubkey` is its key. Skips without the binary or `cryptography`."""
    binary = bloomcast_binary()
    if binary is None:
        pytest.skip(NO_BINARY)
    pytest.importorskip("cryptography", reason="signatures need the cryptography package "
                        "(extra verify)")
    from hostile import Sealed
    sealed = Sealed(binary, tmp_path_factory.mktemp("origin"), ORIGIN_BATCHES)
    sealed.binary = binary
    yield sealed
    sealed.close()


@pytest.fixture(scope="session")
def origin_mirror(origin, tmp_path_factory):
    """`bloomcast mirror` of the origin (the binary's mirror format of today: its `.sig`
    sidecars and checkpoint.json may be missing)."""
    from hostile import mirror
    return mirror(origin.binary, origin.base, tmp_path_factory.mktemp("mirror") / "m")


def stop_after(polls, between=None):
    """A sleep that runs `between(n)` after poll n, then interrupts after `polls` polls."""
    calls = []

    def sleep(seconds):
        calls.append(seconds)
        if len(calls) == polls:
            raise KeyboardInterrupt
        if between:
            between(len(calls))
    return sleep, calls


def recording(client):
    """Records the paths `client` asks for (its requests, in order)."""
    paths, real = [], client._request

    def request(path, headers=None, body=None, dictionary=None):
        paths.append(path)
        return real(path, headers, body, dictionary)

    client._request = request
    return paths
