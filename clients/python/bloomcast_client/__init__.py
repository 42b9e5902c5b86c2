"""A bloomcast client in standard-library Python, written from docs/PROTOCOL.md alone.

    from bloomcast_client import Client
    client = Client("http://127.0.0.1:8080")
    for first, last, ids in client.changed_since(["user:1", "user:2"], "2008-09-03T05"):
        print(first, last, ids)      # fetch these feeds: they may have changed

The command line `bloomcast-py` (check, ingest, inspect, selftest) is in
bloomcast_client.cli. No dependencies beyond the standard library.
"""

import datetime
import gzip
import hashlib
import json
import math
import socket
import time
import urllib.error
import urllib.request

HASH = "sha1-km32"

from .verify import MissingDependency, VerificationError  # noqa: E402  (re-exported)


class ProtocolError(Exception):
    """A response that is not a valid v1 filter (PROTOCOL.md section 6)."""


class HTTPError(Exception):
    """The server answered with an error status and a JSON error body."""

    def __init__(self, status, code, message, retry_after=None):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.retry_after = retry_after

    def is_transient(self):
        """Worth retrying later: the store is away (503) or the request timed out (408)."""
        return self.status in (408, 503)


class ConnectionFailed(Exception):
    """No answer: nothing listening, an unknown host, or a timeout."""

    def __init__(self, base, reason, timed_out=False):
        what = "no answer from" if timed_out else "cannot connect to"
        super().__init__(f"{what} {base}: {reason}")
        self.timed_out = timed_out


# --- Section 1: hash scheme sha1-km32 -------------------------------------------------

def key(id_):
    """(h1, h2): the first two big-endian 32-bit words of SHA-1 over the ID's UTF-8."""
    d = hashlib.sha1(id_.encode("utf-8")).digest()
    return int.from_bytes(d[0:4], "big"), int.from_bytes(d[4:8], "big")


def positions(id_, m, k):
    """The k bit positions (h1 + i*h2) mod m, in exact integer arithmetic."""
    h1, h2 = key(id_)
    return [(h1 + i * h2) % m for i in range(k)]


# --- Section 3: sizing -----------------------------------------------------------------

def optimal(n, p):
    """(m, k) for n IDs at false-positive probability p."""
    n = max(n, 1)
    m = max(math.ceil(-n * math.log(p) / (math.log(2) ** 2)), 8)
    k = math.floor(m / n * math.log(2) + 0.5)  # round half away from zero
    return m, min(max(k, 1), 64)


# --- Sections 2 and 6: the filter and its decoding rules -----------------------------

class Filter:
    """m bits; bit j lives in byte j // 8 under mask 1 << (j % 8)."""

    def __init__(self, m, k, data=None, hash_=HASH):
        if hash_ != HASH:
            raise ProtocolError(f"unknown hash {hash_!r}")
        if not isinstance(m, int) or not 8 <= m <= 0xFFFFFFFF:
            raise ProtocolError(f"m out of range: {m!r}")
        if not isinstance(k, int) or not 1 <= k <= 64:
            raise ProtocolError(f"k out of range: {k!r}")
        size = (m + 7) // 8
        data = bytearray(size) if data is None else bytearray(data)
        if len(data) != size:
            raise ProtocolError(f"{len(data)} bytes, expected {size} for m={m}")
        if m % 8 and data[-1] >> (m % 8):
            raise ProtocolError("bits set past m")
        self.m, self.k, self.data = m, k, data

    @classmethod
    def from_hex(cls, m, k, text, hash_=HASH):
        if len(text) % 2 or any(c not in "0123456789abcdefABCDEF" for c in text):
            raise ProtocolError("bad hex")
        return cls(m, k, bytes.fromhex(text), hash_)

    @classmethod
    def from_document(cls, doc):
        """A filter from a section 4 JSON document (a dict)."""
        for field, kind in (("complete", bool), ("count", int), ("m", int), ("k", int),
                            ("hash", str), ("fpp", (int, float)), ("filter", str)):
            if not isinstance(doc.get(field), kind):
                raise ProtocolError(f"field {field!r} missing or not of its type")
        return cls.from_hex(doc["m"], doc["k"], doc["filter"], doc["hash"])

    def add(self, id_):
        for pos in positions(id_, self.m, self.k):
            self.data[pos >> 3] |= 1 << (pos & 7)

    def contains(self, id_):
        """False: certainly never added. True: probably added (or a false positive)."""
        return all(self.data[pos >> 3] >> (pos & 7) & 1 for pos in positions(id_, self.m, self.k))

    def hex(self):
        return self.data.hex()


# --- Section 9: the HTTP API -------------------------------------------------------------

def parse_hour(text):
    """'2008-09-03T05', an RFC 3339 time or '2008/09/03/05' -> an aware UTC datetime
    at the start of the hour. ValueError naming the text as given otherwise."""
    t = text.strip()
    try:
        if len(t) == 13 and t[4] == "-" and t[10] in "Tt":
            hour = datetime.datetime.strptime(t.upper(), "%Y-%m-%dT%H")
        elif "/" in t:
            hour = datetime.datetime.strptime(t.strip("/"), "%Y/%m/%d/%H")
        else:
            hour = datetime.datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an hour: expected e.g. 2008-09-03T05 (UTC), "
                         "2008-09-03T05:00:00Z or 2008/09/03/05") from None
    if hour.tzinfo is None:
        hour = hour.replace(tzinfo=datetime.timezone.utc)
    return hour.astimezone(datetime.timezone.utc).replace(minute=0, second=0, microsecond=0)


def hour_path(hour):
    """'2008-09-03T05' (or an RFC 3339 time, or a datetime) -> '/2008/09/03/05'."""
    if isinstance(hour, str):
        hour = parse_hour(hour)
    return hour.strftime("/%Y/%m/%d/%H")


def server_base(server):
    """The base URL; 'host:port' without a scheme means http://host:port."""
    base = server if "://" in server else "http://" + server
    scheme, _, rest = base.partition("://")
    if scheme not in ("http", "https") or not rest.strip("/"):
        raise ValueError(f"bad server URL {server!r}: expected http://HOST:PORT, "
                         "https://HOST:PORT or HOST:PORT")
    return base.rstrip("/")


class Client:
    """Fetches filters with gzip, keeps ETags, and never refetches a complete filter.

    With `pubkey` (the publisher's, 64 hex digits), every closed hour is verified
    (PROTOCOL.md section 11) and a tampered one raises VerificationError naming it."""

    def __init__(self, base, timeout=30, pubkey=None):
        self.base = server_base(base)
        self.timeout = timeout
        self.verifier = None
        if pubkey:
            from .verify import Verifier
            self.verifier = Verifier(pubkey)
        self.cache = {}  # path -> (etag, document)
        self.requests = 0
        self.wire_bytes = 0

    def _request(self, path, headers=None, body=None):
        req = urllib.request.Request(self.base + path, data=body, headers=headers or {})
        self.requests += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, resp.headers, self._read(resp)
        except urllib.error.HTTPError as e:
            if e.code == 304:
                return 304, e.headers, b""
            payload = self._read(e)
            retry_after = e.headers.get("Retry-After")
            retry_after = int(retry_after) if retry_after and retry_after.isdigit() else None
            try:
                err = json.loads(payload)
                code, message = err["error"], err["message"]
            except (ValueError, KeyError, TypeError):
                code, message = "http_error", payload[:200].decode("utf-8", "replace")
            raise HTTPError(e.code, code, message, retry_after) from None
        except urllib.error.URLError as e:
            timed_out = isinstance(e.reason, (socket.timeout, TimeoutError))
            raise ConnectionFailed(self.base, e.reason, timed_out) from None
        except (socket.timeout, TimeoutError) as e:
            raise ConnectionFailed(self.base, e, timed_out=True) from None

    def _read(self, resp):
        raw = resp.read()
        self.wire_bytes += len(raw)
        if (resp.headers.get("Content-Encoding") or "").lower() == "gzip":
            return gzip.decompress(raw)
        return raw

    def document(self, path):
        """The JSON document at path (an hour, a day or a since range), with caching."""
        cached = self.cache.get(path)
        if cached and cached[1]["complete"]:
            return cached[1]
        headers = {"Accept": "application/json", "Accept-Encoding": "gzip"}
        if cached:
            headers["If-None-Match"] = cached[0]
        status, resp_headers, body = self._request(path, headers)
        if status == 304:
            return cached[1]
        doc = json.loads(body)
        f = Filter.from_document(doc)  # validate before keeping it
        if self.verifier and doc["complete"] and doc.get("hour"):
            self.verifier.check(parse_hour(path), f.data, resp_headers.get("Bloom-Prev-Header"),
                                resp_headers.get("Bloom-Signature"), doc.get("digest"))
        if resp_headers.get("ETag"):
            self.cache[path] = (resp_headers["ETag"], doc)
        return doc

    def filter(self, path):
        return Filter.from_document(self.document(path))

    def index(self):
        return json.loads(self._request("/", {"Accept-Encoding": "gzip"})[2])

    def contains(self, hour, id_):
        """Whether id_ may have changed in that hour."""
        return self.filter(hour_path(hour)).contains(id_)

    def changed_since(self, ids, since, per_hour=False):
        """[(first_hour, last_hour, ids that may have changed)], from since to now.

        One union request by default; per_hour fetches each hour (cached once complete).
        """
        since_path = hour_path(since)
        if not per_hour and not self.verifier:  # unions are not signed
            doc = self.document("/since" + since_path)
            f = Filter.from_document(doc)
            found = [i for i in ids if f.contains(i)]
            return [(doc["from"], doc["to"], found)] if found else []
        now = parse_hour(self.index()["current"]["hour"])
        hour = parse_hour(since_path)
        out = []
        while hour <= now:
            doc = self.document(hour_path(hour))
            f = Filter.from_document(doc)
            found = [i for i in ids if f.contains(i)]
            if found:
                out.append((doc["hour"], doc["hour"], found))
            hour += datetime.timedelta(hours=1)
        return out

    def verify_chain(self, since):
        """Verifies the chain from `since` to the newest sealed hour (page by page), then
        every listed hour's filter against it. Returns the hours verified."""
        if not self.verifier:
            raise ValueError("verifying needs the publisher's public key (--pubkey)")
        from .verify import VerificationError, digest
        entries, path = [], f"/chain{hour_path(since)}?limit=1000"
        while path:
            status, headers, body = self._request(path, {"Accept-Encoding": "gzip"})
            entries.extend(json.loads(body))
            link = headers.get("Link") or ""
            path = link.split("<", 1)[1].split(">", 1)[0] if 'rel="next"' in link else None
        digests = self.verifier.check_chain(entries)
        for hour, want in digests.items():
            got = digest(self.filter(hour_path(hour)).data)
            if got != want:
                raise VerificationError(f"hour {hour.strftime('%Y-%m-%dT%H:00:00Z')}: the "
                                        "filter's digest is not the chain's: the bytes were "
                                        "altered")
        return list(digests)

    def publish(self, ids, token):
        """Records ids in the current hour; returns the server's receipt once durable."""
        body = json.dumps({"ids": list(ids)}).encode()
        headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
        return json.loads(self._request("/updates", headers, body)[2])

    def publish_with_retries(self, ids, token, attempts=8, backoff=0.1, max_backoff=10.0):
        """publish, sending the same batch again after a 503, a 408 or a timeout (at most
        `attempts` tries, waiting Retry-After or a doubling backoff). A refused connection
        or any other error is raised at once. Returns (receipt, retries)."""
        for attempt in range(1, attempts + 1):
            try:
                return self.publish(ids, token), attempt - 1
            except (HTTPError, ConnectionFailed) as e:
                transient = e.is_transient() if isinstance(e, HTTPError) else e.timed_out
                if not transient or attempt == attempts:
                    raise
                wait = getattr(e, "retry_after", None) or backoff
                time.sleep(min(wait, max_backoff))
                backoff = min(backoff * 2, max_backoff)
        raise AssertionError("unreachable")


# --- Test vectors ------------------------------------------------------------------------

def _expect(holds, vector):
    if not holds:
        raise ProtocolError(f"test vector mismatch: {vector!r}")


def selftest(path):
    """Checks this implementation against docs/test-vectors.json; returns the count."""
    with open(path, encoding="utf-8") as f:
        vectors = json.load(f)
    checked = 0
    for v in vectors["keys"]:
        _expect(key(v["id"]) == (v["h1"], v["h2"]), v["id"])
        _expect(positions(v["id"], v["m"], v["k"]) == v["positions"], v["id"])
        checked += 1
    for v in vectors["filters"]:
        f = Filter(v["m"], v["k"])
        for id_ in v["ids"]:
            f.add(id_)
        _expect(f.hex() == v["hex"], v["ids"])
        _expect(Filter.from_hex(v["m"], v["k"], v["hex"]).data == f.data, v["ids"])
        checked += 1
    for v in vectors["sizing"]:
        _expect(optimal(v["n"], v["p"]) == (v["m"], v["k"]), v)
        checked += 1
    return checked
