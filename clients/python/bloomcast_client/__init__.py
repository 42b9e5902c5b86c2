"""A bloomcast client in standard-library Python, written from docs/PROTOCOL.md alone.

    from bloomcast_client import Client
    client = Client("http://127.0.0.1:8080")
    for first, last, ids in client.changed_since(["user:1", "user:2"], "2008-09-03T05"):
        print(first, last, ids)      # fetch these feeds: they may have changed

The command line `bloomcast-py` (check, estimate, history, ingest, inspect, selftest,
verify, watch) is in bloomcast_client.cli. No dependencies beyond the standard library;
with the optional `zstandard` package (extra `dcz`), a followed open hour is polled as
RFC 9842 `dcz` deltas against the last version the server offered as a dictionary (gzip
without it).
"""

import base64
import collections
import datetime
import gzip
import hashlib
import json
import math
import re
import socket
import time
import urllib.error
import urllib.request

HASH = "sha1-km32"
# A read answered 503 with a Retry-After of at most MAX_RETRY_WAIT seconds is tried again
# after it, up to READ_TRIES tries in all (as the Rust SDK and the JavaScript client do).
READ_TRIES = 3
MAX_RETRY_WAIT = 5

from .verify import MissingDependency, Unsigned, VerificationError  # noqa: E402  (re-exported)
from .ribbon import (DEFAULT_FETCH_COST, RESPONSE_OVERHEAD, Ribbon,  # noqa: E402
                     RibbonError, bloom_choice, cheapest_form, cheapest_plan, compact_plan,
                     compact_precision, exact_bytes_at_most, hourly_is_cheaper,
                     selftest_ribbon, universe_at_most)
from .ribbon2 import Ribbon2, fpp_param, grade_for_fpp, selftest_ribbon2  # noqa: E402
from .exact import Exact, ExactError, selftest_exact  # noqa: E402
from .refine import cheapest_within, exact_reading  # noqa: E402
from .pages import (HEADER_LEN, PAGES_TYPE, Page, PagedHour, PagesError,  # noqa: E402
                    PagesHeader, cheapest_pages, key64, page_of, pages_for, parse_body)
from . import coverage, files  # noqa: E402
from .coverage import Changes, Stale  # noqa: E402  (re-exported)
try:  # Optional: deltas of the open hour (RFC 9842 dcz) need zstd.
    import zstandard
except ImportError:  # pragma: no cover - depends on the environment
    zstandard = None

DCZ_MAGIC = bytes([0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00])

from .probes import sized  # noqa: E402  (re-exported)
from . import probes as _probes  # noqa: E402


def dcz_decode(dictionary, body):
    """The identity bytes of a dcz body (PROTOCOL.md, deltas): a 40-byte header (8 magic
    bytes, the dictionary's SHA-256), then a zstd frame made with the dictionary as raw
    content. Needs the zstandard package."""
    if zstandard is None:
        raise ProtocolError("a dcz body needs the zstandard package")
    if len(body) < 40 or body[:8] != DCZ_MAGIC:
        raise ProtocolError("not a dcz body")
    if body[8:40] != hashlib.sha256(dictionary).digest():
        raise ProtocolError("dcz body made with another dictionary")
    d = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    try:
        return zstandard.ZstdDecompressor(dict_data=d).decompress(body[40:])
    except zstandard.ZstdError as e:
        raise ProtocolError(f"bad dcz body: {e}") from None


def available_dictionary(dictionary):
    """The Available-Dictionary value naming these bytes: :BASE64(SHA-256):."""
    return ":" + base64.b64encode(hashlib.sha256(dictionary).digest()).decode() + ":"


def _both(contains, changed):
    """An ID is changed when the approximate filter and the exact body both say so."""
    return lambda id_: contains(id_) and changed(id_)


HOUR_PATH = re.compile(r"^(/\d{4}/\d{2}/\d{2}/\d{2})(?:\.json|\.bin|\.hex)?$")


class ProtocolError(Exception):
    """A response that is not a valid filter or body (PROTOCOL.md sections 6, 12, 14),
    or whose bytes do not match its Repr-Digest."""


EXACT_TYPE = "application/vnd.bloomcast.exact"
RIBBON2_TYPE = "application/vnd.bloomcast.ribbon; v=2"


def check_repr_digest(what, headers, body):
    """Raises ProtocolError when `headers` carry a Repr-Digest (RFC 9530) whose sha-256
    is not that of `body` (the bytes as sent). No header, or no sha-256 in it: nothing
    to check (a static mirror sends none)."""
    value = headers.get("Repr-Digest")
    if not value:
        return
    for member in value.split(","):
        name, _, encoded = member.partition("=")
        if name.strip().lower() != "sha-256":
            continue
        encoded = encoded.strip()
        try:
            want = base64.b64decode(encoded[1:-1], validate=True) \
                if len(encoded) > 2 and encoded[0] == encoded[-1] == ":" else None
        except ValueError:
            want = None
        if want is None or len(want) != 32:
            raise ProtocolError(f"{what}: malformed Repr-Digest {value!r}")
        if hashlib.sha256(body).digest() != want:
            raise ProtocolError(f"{what}: the body does not match its Repr-Digest: the "
                                "bytes were altered on the way")


def _header_hour(url, headers, name):
    """The hour a response's header `name` (Bloom-Hour, Bloom-From, Bloom-To) names, as
    an aware datetime; None when it is absent; ProtocolError when it is not an hour."""
    value = (headers.get(name) or "").strip()
    if not value:
        return None
    try:
        return parse_hour(value)
    except ValueError:
        raise ProtocolError(f"{url}: {name} {value!r} is not an hour") from None


def checked_exact(url, headers, body):
    """The Exact of an exact body read from `url`, checked against its Repr-Digest,
    Bloom-Count and Bloom-Universe (when sent); ProtocolError naming what is wrong."""
    check_repr_digest(url, headers, body)
    try:
        exact = Exact.from_bytes(body)
    except ExactError as e:
        raise ProtocolError(f"{url}: {e}") from None
    for name, value in (("Bloom-Count", exact.changed_count),
                        ("Bloom-Universe", exact.universe)):
        said = (headers.get(name) or "").strip()
        if said and said != str(value):
            raise ProtocolError(f"{url}: {name} is {said}, the body says {value}")
    return exact


class HTTPError(Exception):
    """The server answered with an error status and a JSON error body."""

    def __init__(self, status, code, message, retry_after=None):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.retry_after = retry_after

    def is_transient(self):
        """Worth retrying later: the store is away, the server is busy or took too long
        (503), or the request was sent too slowly (408)."""
        return self.status in (408, 503)


class CorruptHours(HTTPError):
    """Hours the server could not verify (PROTOCOL.md section 9): its index lists them
    `corrupt`, or one answered 500 `corrupt`. Whether any ID changed in them is unknown,
    so no answer covering them is given: they are never read as "no change". `hours`:
    their RFC 3339 names, oldest first."""

    def __init__(self, hours):
        self.hours = sorted(hours)
        super().__init__(500, "corrupt", "the server could not verify its stored data of "
                         f"{', '.join(self.hours)}: whether IDs changed then is unknown, "
                         "so it is not read as no change")


def of_hour(error, name):
    """An error of a request for the hour named `name` (RFC 3339), with a 500 `corrupt`
    said as CorruptHours naming the hour (its message names none); any other as it is."""
    if isinstance(error, HTTPError) and not isinstance(error, CorruptHours) \
            and error.status == 500 and error.code == "corrupt":
        return CorruptHours([name])
    return error


def corrupt_hours(index, since, now):
    """The RFC 3339 names of the hours from `since` through `now` (datetimes) that an
    index (GET /) lists as corrupt, oldest first. ValueError for a corrupt line naming an
    unreadable hour (it could be any hour)."""
    names = []
    for line in index.get("hours") or []:
        if line.get("corrupt") is True:
            hour = parse_hour(line["hour"])
            if since <= hour <= now:
                names.append(hour.strftime("%Y-%m-%dT%H:00:00Z"))
    return sorted(names)


Verification = collections.namedtuple("Verification", "hours unverified stale")


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
    """The classical (m, k) for n IDs at false-positive probability p, assuming k
    independent probes (section 3); a server sizes by `sized`, the probes' rule."""
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

    def fpp(self):
        """The false-positive probability of an ID never added, for the probes it makes
        (section 8): exact up to 4,096 bits, estimated from the fill above."""
        return _probes.fpp(self.data, self.m, self.k)

    def hex(self):
        return self.data.hex()


# --- Section 5: raw representations ----------------------------------------------------

def raw_document(path, headers, body):
    """A `.bin` body and its Bloom-* headers as the section 4 document they describe.
    ProtocolError naming the header missing (a static mirror sends none: read `.json`)."""
    def need(name):
        value = headers.get(name)
        if value is None:
            raise ProtocolError(f"{path}: missing header {name}")
        return value.strip()

    def number(name):
        if not need(name).isdigit():
            raise ProtocolError(f"{path}: header {name} is not a number")
        return int(need(name))

    complete = need("Bloom-Complete")
    if complete not in ("true", "false"):
        raise ProtocolError(f"{path}: header Bloom-Complete must be true or false, "
                            f"got {complete!r}")
    doc = {"complete": complete == "true", "count": number("Bloom-Count"),
           "m": number("Bloom-M"), "k": number("Bloom-K"), "hash": need("Bloom-Hash"),
           "fpp": float(headers.get("Bloom-Fpp") or 0), "filter": body.hex()}
    for field in ("hour", "from", "to"):
        if headers.get("Bloom-" + field.capitalize()):
            doc[field] = headers["Bloom-" + field.capitalize()]
    return doc


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
    """The base URL; 'host:port' without a scheme means http://host:port, and
    `file:///DIR` a mirror directory read offline (bloomcast_client.files)."""
    base = server if "://" in server else "http://" + server
    scheme, _, rest = base.partition("://")
    if scheme == "file" and rest.startswith("/"):
        return "file://" + (rest.rstrip("/") or "/")
    if scheme not in ("http", "https") or not rest.strip("/"):
        raise ValueError(f"bad server URL {server!r}: expected http://HOST:PORT, "
                         "https://HOST:PORT, HOST:PORT or file:///DIR (a mirror directory)")
    return base.rstrip("/")


def ribbon_versions(index):
    """The compact form versions an index (GET /) says its server serves: its
    `ribbon_versions` (section 12, "Version 2"), (1,) when it lists none."""
    versions = index.get("ribbon_versions")
    if not isinstance(versions, list):
        return (1,)
    return tuple(v for v in versions if isinstance(v, int) and not isinstance(v, bool))


# How changed_since reads a range, by name (`strategy`), as its `per_hour` says it
# ("compact": the closed hours not held as one version 2 since-union, the others and the
# open hour each on its own; "pages": hour by hour, each closed hour by the pages of the
# IDs followed).
STRATEGIES = {"auto": None, "hourly": True, "union": False, "compact": False,
              "pages": True}

from .client_trust import Verifying  # noqa: E402  (needs the names above)


class Client(Verifying):
    """Fetches filters with gzip, keeps ETags, and never refetches a complete filter.

    With `pubkey` (the publisher's, 64 hex digits), everything read is verified
    (PROTOCOL.md section 11, "Trust"): each hour under the key listed for it in the
    publisher's key list, trusted only through successions signed from `pubkey` (an hour
    listed under any other key raises VerificationError naming that key); a sealed hour
    in every form (v1, ribbons, exact); a version of the open hour by its
    Bloom-Open-Signature, made at most `freshness` seconds (600) ago. A tampered one
    raises VerificationError naming the hour. A form served without a signature is not
    used (the hour's v1 filter is read instead); an open hour served without one is used
    and listed in the answer's `unverified`.

    changed_since says what its answer covers (bloomcast_client.coverage): the hours
    read, and whether the source is shown current: its newest hour no more than
    `lag_hours` (2) before this machine's current hour and, with `pubkey`, no older than
    the publisher's signed checkpoint. A source not shown current raises Stale (with
    the answer) unless `accept_stale`.

    `fetch_cost`: what fetching a resource that turns out unchanged costs, in bytes.
    changed_since reads each closed hour as a v1 filter or a ribbon (section 12) at the
    precision minimising filter bytes plus IDs followed * fpp * fetch_cost (a version 2
    ribbon, at a whole-bit precision 2^-b, instead of version 1 when the index's
    `ribbon_versions` lists 2), or, at or after the index's `exact_since`, with its exact
    body (section 14) when that is no larger than the cheapest of those sums (exact=True
    forces it); where version 2 is listed, by the pages of the IDs followed (`.pages`,
    read by HTTP Range) when those cost less than the form it would read whole.

    `registered`: the caller declares every ID it asks about registered in the
    publisher's universe (POST /universe) from before the first hour asked about: an
    exact body is then read alone, and a client back after a gap may read the closed
    hours it missed as one exact body (Client.since_exact) where that costs least. By
    default (a poller cannot know what is registered:
    the universe is never published, and an exact body answers any other ID
    arbitrarily) an exact body only refines the hour's cheapest form at the target fpp
    or under, an ID changed when both say so, read when the two bodies cost less than
    the cheapest form alone (bloomcast_client.refine): registered IDs are answered
    exactly, any other at most at the target."""

    def __init__(self, base, timeout=30, pubkey=None, fetch_cost=DEFAULT_FETCH_COST,
                 registered=False, accept_stale=False, lag_hours=coverage.LAG_HOURS,
                 freshness=coverage.FRESHNESS_SECONDS, read_tries=READ_TRIES):
        self.base = server_base(base)
        self.read_tries = max(1, int(read_tries))  # 1: a busy read's 503 as it came
        self.accept_stale, self.lag_hours, self.freshness = accept_stale, lag_hours, freshness
        self.unverified = {}  # hour name -> why its open version read last is unverified
        self.open_made = {}  # path of an open hour -> `made` of the version held, verified
        self.current = None  # the source's current hour, from the last index read
        self.static = None  # whether the source is a static mirror (its index says so)
        self.urls = {}  # the index's `urls`
        self._reading_until = None  # the last hour of the range changed_since reads
        # The fewest IDs of an hour of that range whose exact body the server would not
        # build (406): hours as large are read in their approximate form at once.
        self._exact_refused_at = math.inf
        self.fetch_cost = fetch_cost
        self.registered = registered
        self.ribbons = {}  # hour path -> the most precise Ribbon held
        self.ribbons2 = {}  # hour path -> the most precise Ribbon2 held
        self.ribbon_fetches = 0  # compact bodies read, either version
        self.ribbon2_fetches = 0  # of which version 2
        self.exacts = {}  # hour path -> Exact
        self.exact_fetches = 0
        self.paged = {}  # `.pages` URL -> PagedHour: its header and the pages read
        self.paged_fetches = 0  # paged forms opened (their header read)
        self.page_fetches = 0  # pages read by Range
        self.pages_served = None  # False once the source answered a `.pages` 404
        self.timeout = timeout
        self.verifier = None
        self._keys_read = False
        if pubkey:
            from .verify import Verifier
            self.verifier = Verifier(pubkey)
        self.cache = {}  # path -> (etag, document)
        self.dictionaries = {}  # path -> identity bytes the server offered as a dictionary
        self.requests = 0
        self.wire_bytes = 0
        self.deltas = 0

    def _request(self, path, headers=None, body=None, dictionary=None):
        """(status, headers, body) of one request. A read (no body) answered 503 with a
        Retry-After of at most MAX_RETRY_WAIT seconds (a build busy, the store recovering)
        is sent again after that wait, up to `read_tries` tries in all (default READ_TRIES)."""
        for tries in range(1, self.read_tries + 1):
            try:
                return self._request_once(path, headers, body, dictionary)
            except HTTPError as e:
                wait = e.retry_after
                if body is not None or e.status != 503 or tries == self.read_tries or \
                        wait is None or wait > MAX_RETRY_WAIT:
                    raise
                time.sleep(wait)

    def _request_once(self, path, headers=None, body=None, dictionary=None):
        self.requests += 1
        if self.base.startswith("file://"):
            got = files.get(files.root_of(self.base), path, (headers or {}).get("Range"))
            if got is None:
                raise HTTPError(404, "not_found", f"no file for {path} in "
                                f"{files.root_of(self.base)}")
            self.wire_bytes += len(got[2])
            return got
        req = urllib.request.Request(self.base + path, data=body, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, resp.headers, self._read(resp, dictionary)
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

    def _read(self, resp, dictionary=None):
        raw = resp.read()
        self.wire_bytes += len(raw)
        encoding = (resp.headers.get("Content-Encoding") or "").lower()
        if encoding == "gzip":
            return gzip.decompress(raw)
        if encoding == "dcz":
            if dictionary is None:
                raise ProtocolError("a dcz body without a dictionary")
            self.deltas += 1
            return dcz_decode(dictionary, raw)
        return raw

    def document(self, path, fresh=False):
        """The JSON document at path (an hour, a day or a since range), with caching; a
        path ending in `.bin` is read raw (the fewest bytes, what deltas are best made
        of) and returned as the document its Bloom-* headers describe. `fresh` asks the
        caches between for a copy no older than now (`Cache-Control: no-cache`): the
        fetch that follows an event of the server's stream about a newer version."""
        cached = self.cache.get(path)
        if cached and cached[1]["complete"]:
            return cached[1]
        raw = path.endswith(".bin")
        headers = {"Accept": "application/octet-stream" if raw else "application/json",
                   "Accept-Encoding": "gzip"}
        if fresh:
            headers["Cache-Control"] = "no-cache"
        if cached and not self._open_too_old(path):
            headers["If-None-Match"] = cached[0]
        dictionary = self.dictionaries.get(path) if zstandard is not None else None
        if dictionary is not None:
            headers["Accept-Encoding"] = "dcz, gzip"
            headers["Available-Dictionary"] = available_dictionary(dictionary)
        status, resp_headers, body = self._request(path, headers, dictionary=dictionary)
        if status == 304:
            return cached[1]
        doc = raw_document(path, resp_headers, body) if raw else json.loads(body)
        f = Filter.from_document(doc)  # validate before keeping it
        if self.verifier and HOUR_PATH.match(path):
            self._verify_hour(path, doc, f, resp_headers)
        if resp_headers.get("ETag"):
            self.cache[path] = (resp_headers["ETag"], doc)
        if doc["complete"]:
            self.dictionaries.pop(path, None)
        elif resp_headers.get("Use-As-Dictionary") and zstandard is not None:
            self.dictionaries[path] = body
        return doc

    def filter(self, path):
        return Filter.from_document(self.document(path))

    def index(self):
        """The index (GET /); its current hour and whether it is a static mirror are
        kept (verifying: a sealed hour is never taken in an open version)."""
        index = json.loads(self._request("/", {"Accept-Encoding": "gzip"})[2])
        try:
            self.current = parse_hour(index["current"]["hour"])
        except (KeyError, TypeError, ValueError):
            self.current = None
        self.static = bool(index.get("static")) or self.base.startswith("file://")
        self.urls = index.get("urls") if isinstance(index.get("urls"), dict) else {}
        return index

    def contains(self, hour, id_):
        """Whether id_ may have changed in that hour."""
        return self.filter(hour_path(hour)).contains(id_)

    def ribbon(self, hour, fpp=None):
        """A closed hour as a Ribbon (section 12), at the server's target or at `fpp`;
        one held at least as precise is answered without a request. HTTPError 406 for
        the open hour."""
        path = hour_path(hour)
        held = self.ribbons.get(path)
        if held is not None and fpp is not None and held.fpp <= fpp:
            return held
        url = path + ".ribbon" + (f"?fpp={fpp_param(fpp)}" if fpp is not None else "")
        _, headers, body = self._request(url, {"Accept-Encoding": "gzip"})
        try:
            ribbon = Ribbon.from_bytes(body)
        except RibbonError as e:
            raise ProtocolError(f"{url}: {e}") from None
        if self.verifier:
            self.check_form("ribbon", path, url, headers, body)
        self.ribbon_fetches += 1
        if held is None or ribbon.r > held.r:
            self.ribbons[path] = ribbon
        return ribbon

    def ribbon2(self, hour, fpp=None):
        """A closed hour as a Ribbon2 (section 12, "Version 2"), at the server's target or
        at the grade of `fpp` (2^-24 <= fpp < 1); one held at least as precise is answered
        without a request. HTTPError 406 for the open hour, 404 from a server without
        version 2. The body is checked against its Repr-Digest."""
        path = hour_path(hour)
        held = self.ribbons2.get(path)
        if held is not None and fpp is not None and held.fpp <= fpp:
            return held
        url = path + ".ribbon2" + (f"?fpp={fpp_param(fpp)}" if fpp is not None else "")
        _, headers, body = self._request(url, {"Accept": RIBBON2_TYPE,
                                               "Accept-Encoding": "identity"})
        check_repr_digest(url, headers, body)
        try:
            ribbon = Ribbon2.from_bytes(body)
        except RibbonError as e:
            raise ProtocolError(f"{url}: {e}") from None
        if self.verifier:
            self.check_form("ribbon2", path, url, headers, body)
        self.ribbon_fetches += 1
        self.ribbon2_fetches += 1
        if held is None or ribbon.fpp < held.fpp:
            self.ribbons2[path] = ribbon
        return ribbon

    def since_ribbon2(self, since, fpp=None):
        """The closed hours from `since` as one version 2 ribbon (`GET
        /since/YYYY/MM/DD/HH.ribbon2`, PROTOCOL.md section 12, "Catching up"), at the
        grade of `fpp` (or the server's target): (Ribbon2, the newest hour it covers, an
        aware datetime from its Bloom-To, or Bloom-Hour when it covers one hour). The
        open hour is not in it: read it on its own. HTTPError 406 when `since` is the
        open hour (no closed hour) or from a server serving no version 2 since-range, 404
        from one without version 2; ProtocolError for a response naming no hour it
        covers or a body that is not version 2. A union, so unsigned (a verifying client
        does not read it); what it holds changes once an hour, so it is not kept."""
        url = "/since" + hour_path(since) + ".ribbon2" + \
            (f"?fpp={fpp_param(fpp)}" if fpp is not None else "")
        _, headers, body = self._request(url, {"Accept": RIBBON2_TYPE,
                                               "Accept-Encoding": "identity"})
        last = (_header_hour(url, headers, "Bloom-To")
                or _header_hour(url, headers, "Bloom-Hour"))
        if last is None:
            raise ProtocolError(f"{url}: no Bloom-To or Bloom-Hour header: the range it "
                                "covers is unknown")
        check_repr_digest(url, headers, body)
        try:
            ribbon = Ribbon2.from_bytes(body)
        except RibbonError as e:
            raise ProtocolError(f"{url}: {e}") from None
        self.ribbon_fetches += 1
        self.ribbon2_fetches += 1
        return ribbon, last

    def exact(self, hour):
        """A sealed hour's exact body (section 14) as an Exact, or None when the server
        has none for the hour (404: no universe, an hour before its `since`, a future
        hour). HTTPError 406 for the open hour, 410 past retention. The body is checked
        against its Repr-Digest and, with a pubkey, its signature; held once read."""
        path = hour_path(hour)
        if path in self.exacts:
            return self.exacts[path]
        url = path + ".exact"
        try:
            _, headers, body = self._request(url, {"Accept": EXACT_TYPE,
                                                   "Accept-Encoding": "identity"})
        except HTTPError as e:
            if e.status == 404:
                return None
            raise
        exact = checked_exact(url, headers, body)
        if self.verifier:
            self.check_form("exact", path, url, headers, body)
        self.exact_fetches += 1
        self.exacts[path] = exact
        return exact

    def since_exact(self, since):
        """The sealed hours from `since` through the hour before the server's open one as
        one exact body (`GET /since/YYYY/MM/DD/HH.exact`, PROTOCOL.md section 14, "Ranges:
        a past day, and catching up"): (Exact, the last hour it covers, an aware datetime
        from its Bloom-To). For an ID of the universe as it stood when that hour was
        sealed, `changed` is true exactly when it changed in any hour of the range. The
        open hour is not in it: read it on its own. Checked as an hour's (Repr-Digest,
        Bloom-Count, Bloom-Universe); its Bloom-From must be `since` (both read from
        Bloom-Hour when it names one hour). HTTPError 404 from a server without a
        universe, for a range starting before the index's `exact_since`, or from one
        serving no exact ranges; 406 when `since` is the open hour; ProtocolError for a
        response naming no range from `since` or a body that is not an exact body, or
        disagrees with its headers. A union, so unsigned (a verifying client does not
        read it); what it holds changes once an hour, so it is not kept. Counted in
        `exact_fetches`."""
        since = parse_hour(hour_path(since))
        url = "/since" + hour_path(since) + ".exact"
        _, headers, body = self._request(url, {"Accept": EXACT_TYPE,
                                               "Accept-Encoding": "identity"})
        first = _header_hour(url, headers, "Bloom-From")
        last = _header_hour(url, headers, "Bloom-To")
        if first is None or last is None:
            first = last = _header_hour(url, headers, "Bloom-Hour")
        if first is None:
            raise ProtocolError(f"{url}: no Bloom-From and Bloom-To headers: the range it "
                                "covers is unknown")
        if first != since or last < since:
            raise ProtocolError(f"{url}: covers {coverage.rfc3339(first)}.."
                                f"{coverage.rfc3339(last)}, not a range from "
                                f"{coverage.rfc3339(since)}")
        exact = checked_exact(url, headers, body)
        self.exact_fetches += 1
        return exact, last

    def pages(self, hour, ids=(), fpp=None):
        """A closed hour's paged form (PROTOCOL.md section 12, "Huge hours by the page"),
        read by HTTP Range: its 72-byte header (`Range: bytes=0-71`), then the slot of
        each page of `ids` not read yet, one range each, at the grade of `fpp` (2^-24 <=
        fpp < 1; without, the server's target, and a static mirror's one body). Returns
        a PagedHour whose `contains(id_)` answers as the whole body does, from the ID's
        page (read then if it was not). A source answering a range with the whole body
        (200) is read from it. Pages read are held (a sealed hour's never change).

        With a pubkey, the header must be of this hour and name the key listed for it,
        and each page read verifies by its own signature (VerificationError naming the
        page when it does not); Unsigned when they carry none (read the hour whole).
        HTTPError 406 for the open hour, 404 where no paged form is served;
        ProtocolError for a body that breaks the section's rules or another hour's."""
        path = hour_path(hour)
        url = path + ".pages" + (f"?fpp={fpp_param(fpp)}" if fpp is not None else "")
        paged = self.paged.get(url)
        if paged is None:
            paged = self._open_pages(path, url)
            self.paged[url] = paged
        for p in paged.missing(ids):
            paged.page(p)
        return paged

    def _range(self, url, first, last):
        """(status, total, body) of `Range: bytes=first-last` of a paged body: a 206's
        body, checked to be those bytes, with the body's length its Content-Range says;
        or a 200's whole body (checked against its Repr-Digest), total None."""
        status, headers, body = self._request(url, {
            "Range": f"bytes={first}-{last}", "Accept": PAGES_TYPE,
            "Accept-Encoding": "identity"})
        if status == 200:
            check_repr_digest(url, headers, body)
            return status, None, body
        said = (headers.get("Content-Range") or "").strip()
        got = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", said)
        if status != 206 or not got or (int(got[1]), int(got[2])) != (first, last) \
                or len(body) != last - first + 1:
            raise ProtocolError(f"{url}: asked for bytes {first}-{last}, got {status} with "
                                f"Content-Range {said!r} and {len(body)} bytes")
        return status, int(got[3]), body

    def _open_pages(self, path, url):
        """A PagedHour of the paged body at `url` (of the hour at `path`): its header read
        and checked (the whole body, when the source sends it whole)."""
        hour = parse_hour(path)
        _, total, body = self._range(url, 0, HEADER_LEN - 1)
        try:
            header = PagesHeader.parse(body)
        except PagesError as e:
            raise ProtocolError(f"{url}: {e}") from None
        from .verify import hour_index
        if self.verifier:
            self._read_keys()
            self.verifier.check_pages_header(hour, header)
        elif header.hour != hour_index(hour):
            raise ProtocolError(f"{url}: its header is of hour index {header.hour}, not "
                                f"{hour_index(hour)}: another hour's pages")
        if total is not None and total != header.body_len:
            raise ProtocolError(f"{url}: the body is {total} bytes where its header says "
                                f"{header.body_len}")
        self.paged_fetches += 1
        paged = PagedHour(hour, url, header, self._read_page)
        if total is None:
            self._whole_pages(paged, body)
        return paged

    def _whole_pages(self, paged, body):
        """Takes the whole paged body a source sent for a range: every page, checked
        (and verified, with a pubkey); the hour is then held complete."""
        if body[:HEADER_LEN] != paged.header.raw:
            raise ProtocolError(f"{paged.url}: the body sent whole has another header than "
                                "the one read before")
        try:
            header, pages = parse_body(body)
        except PagesError as e:
            raise ProtocolError(f"{paged.url}: {e}") from None
        if self.verifier:
            for page in pages:
                first, end = header.slot_range(page.index)
                self.verifier.check_page(paged.hour, header, page.index, body[first:end])
        paged.pages = {page.index: page for page in pages}
        paged.complete = True

    def _read_page(self, paged, p):
        """Page p of `paged`, by its own Range (1 request), checked and, with a pubkey,
        verified by its signature."""
        header = paged.header
        first, end = header.slot_range(p)
        _, total, slot = self._range(paged.url, first, end - 1)
        if total is None:  # the whole body: every page of it
            self._whole_pages(paged, slot)
            return paged.pages[p]
        if total != header.body_len:
            raise ProtocolError(f"{paged.url}: the body is {total} bytes where its header "
                                f"says {header.body_len}")
        if self.verifier:  # first: bytes altered are said so, however they decode
            self.verifier.check_page(paged.hour, header, p, slot)
        try:
            page = Page.parse(header, p, slot)
        except PagesError as e:
            raise ProtocolError(f"{paged.url}: {e}") from None
        self.page_fetches += 1
        return page

    def _held(self, path):
        """(contains, fpp) of the most precise complete approximate filter held."""
        options = []
        cached = self.cache.get(path)
        if cached and cached[1]["complete"]:
            f = Filter.from_document(cached[1])
            options.append((f.contains, cached[1]["fpp"]))
        for held in (self.ribbons.get(path), self.ribbons2.get(path)):
            if held is not None:
                options.append((held.contains, held.fpp))
        options += [(paged.contains, paged.fpp) for url, paged in self.paged.items()
                    if paged.complete and url.startswith(path + ".pages")]
        return min(options, key=lambda o: o[1]) if options else None

    def _held_pages(self, path, ids):
        """(contains, fpp) of the most precise paged form of the hour held with every
        page of `ids` read, or None."""
        options = [(paged.contains, paged.fpp) for url, paged in self.paged.items()
                   if url.startswith(path + ".pages") and not paged.missing(ids)]
        return min(options, key=lambda o: o[1]) if options else None

    def _pages_choice(self, count, target_fpp, ids, ribbon_versions):
        """(fpp or None, expected bytes) of reading the pages of `ids` of a closed hour
        of `count` IDs (cheapest_pages): at a whole bit, or on a static mirror its one
        body at the target (fpp None: no `?fpp=`). None where no paged form is to be
        read: no IDs given, version 2 not listed, or the source answered 404 before."""
        if ids is None or self.pages_served is False or not ribbon_versions \
                or 2 not in ribbon_versions:
            return None
        keys = {key64(i) for i in ids}
        pages = pages_for(count)
        needed = len({page_of(k, pages) for k in keys})
        p, cost = cheapest_pages(count, len(ids), needed, self.fetch_cost,
                                 target_fpp if self.static else None)
        return (None if self.static else p), cost

    def _read_pages(self, path, ids, fpp):
        """`contains` of the hour at `path` from the pages of `ids` (Client.pages), or
        None where it has no paged form (404: not asked again; 406) or, verifying, its
        pages are unsigned: the hour is read whole instead."""
        try:
            return self.pages(path, ids, fpp).contains
        except HTTPError as e:
            if e.status not in (404, 406):
                raise
            if e.status == 404:
                self.pages_served = False
        except Unsigned:
            pass
        return None

    def _held_reading(self, path, target_fpp):
        """(contains, fpp) of the hour as held, as it may be used: its exact body alone
        for a caller that declared its IDs registered; else the exact body refining the
        most precise filter held when that one's fpp is at most `target_fpp`; else that
        filter. fpp 0 with an exact body: none among registered IDs, what the cost
        model weighs."""
        exact = self.exacts.get(path)
        if exact is not None and self.registered:
            return exact.changed, 0.0
        held = self._held(path)
        if exact is not None and held is not None and held[1] <= target_fpp:
            return _both(held[0], exact.changed), 0.0
        return held

    def _refined(self, path, exact, under):
        """`contains` of `exact` refining `under` ((form, bytes, fpp) from
        cheapest_within), or a filter held already that is no less precise."""
        held = self._held(path)
        if held is not None and held[1] <= under[2]:
            return _both(held[0], exact.changed)
        return _both(self._read_form(path, under[0]), exact.changed)

    def _read_form(self, path, form):
        """`contains` of a closed hour in the approximate `form` (cheapest_form's); the
        v1 filter where no compact form is served, or (verifying) where it is served
        without a signature: an unverified form is never used."""
        if form[0] in ("ribbon", "ribbon2"):
            try:
                if form[0] == "ribbon2":
                    return self.ribbon2(path, form[1]).contains
                return self.ribbon(path, 2.0 ** -form[1]).contains
            except HTTPError as e:  # no compact form here: the v1 filter answers the same
                if e.status not in (404, 406):
                    raise
            except Unsigned:
                pass
        return self.filter(path).contains

    def _closed_hour(self, path, count, target_fpp, followed, exact_bytes=None,
                     ribbon_versions=None, ids=None, pages=None):
        """`contains` of a closed hour in its cheapest reading (or one held no worse).
        `exact_bytes`: the size of the hour's exact body, None when it has none;
        `ribbon_versions`: the index's (version 2 is preferred where it lists 2). With
        `ids` (those followed), the hour may be read by the pages of their IDs
        (Client.pages) where the index lists version 2: `pages` None when that is
        expected to cost less than the form read whole (with its response's headers),
        True always, False never; where the source serves no paged form, or (verifying)
        serves it unsigned, the hour is read whole."""
        form, cost = cheapest_form(count, target_fpp, followed, self.fetch_cost,
                                   ribbon_versions)
        reading = exact_reading(exact_bytes, cost, count, target_fpp, self.registered,
                                ribbon_versions)
        whole = (reading[-1] if reading else cost) + RESPONSE_OVERHEAD
        paged = None if pages is False else \
            self._pages_choice(count, target_fpp, ids, ribbon_versions)
        held = self._held_reading(path, target_fpp)
        held_pages = self._held_pages(path, ids) if ids is not None else None
        if held_pages and (held is None or held_pages[1] < held[1]):
            held = held_pages
        if held and followed * held[1] * self.fetch_cost <= \
                (whole if paged is None else min(whole, paged[1])):
            return held[0]
        if paged is not None and (pages or paged[1] < whole):
            contains = self._read_pages(path, ids, paged[0])
            if contains is not None:
                return contains
        if reading and count < self._exact_refused_at:
            try:
                exact = self.exact(path)
            except Unsigned:  # verifying: never used unsigned; the approximate form
                exact = None
            except HTTPError as e:
                # Not built (406: more memory than the server's build budget, or not
                # sealed yet): the approximate form. Later hours hold at least the
                # universe this one had: one as large is not asked for its exact body.
                if e.status != 406:
                    raise
                self._exact_refused_at = min(self._exact_refused_at, count)
                exact = None
            if exact is not None:
                return exact.changed if reading[0] == "alone" else \
                    self._refined(path, exact, reading[1])
        return self._read_form(path, form)

    def changed_since(self, ids, since, per_hour=False, exact=None, strategy=None):
        """[(first_hour, last_hour, ids that may have changed)], from since to now, as a
        Changes list that also says what it covers: `first` and `last`, the first and
        last hours read; `unverified`, with a pubkey, the hours used unverified (an open
        hour served without its signature); `stale`, why the source is not shown
        current (bloomcast_client.coverage): Stale is raised with the answer then,
        unless the client was made with accept_stale=True.

        per_hour=False: one union request; True: each hour (cached once complete), closed
        hours in their cheapest form; None: whichever of these and the compact plan below
        is expected to cost fewer bytes, wasted fetches (len(ids) * fpp * fetch_cost)
        included (ties: hour by hour, then the union). `strategy`, when given, says the
        same by name and overrides per_hour: "auto" (None), "hourly" (True), "union"
        (False) or "compact": where the index lists `ribbon_versions` 2, the closed hours
        after the last one this client holds complete (from `since` when it holds none)
        as one version 2 since-union (`/since/....ribbon2`, section 12, "Catching up") at
        the whole bit 2^-k (k = 4..24) minimising its bytes plus wasted fetches, one range
        (its first hour, its Bloom-To), fetched first; the hours before it read on their
        own as hour by hour reads them (held ones answered from what is held, at no
        request), then each hour after its Bloom-To (the open hour). Where the server
        does not serve it (404, 406), a union that was to start at `since` is read as
        the v1 union, one starting later hour by hour; with no closed hour left to put
        in it, "compact" reads the v1 union. "pages" reads hour by hour (per_hour=True),
        each closed hour by the pages of `ids` (Client.pages, section 12, "Huge hours by
        the page": a header and a page a distinct page, each one HTTP Range) where the
        index lists `ribbon_versions` 2, at the whole bit 2^-k minimising their bytes
        plus wasted fetches (on a static mirror, its one body at the target); an hour
        held, or where the source serves no paged form (404: not asked again) or,
        verifying, serves it unsigned, is read as hour by hour reads it. For a client
        made with registered=True, auto also weighs the same closed hours as one exact
        body (`/since/....exact`, section 14, "Ranges: a past day, and catching up";
        Client.since_exact), with no false positive, when each of them has an exact body
        (at or after the index's `exact_since`), costed as the sum of their sizes (as
        hour by hour judges each) or, where the index lists a sealed hour with a change
        and its `exact_bytes`, the bound of a body of their counts in the largest
        universe that hour allows when less (ribbon.exact_bytes_at_most): one range,
        read and followed as the version 2 union is; where the server does not serve it
        (404, 406), the hours are read one by one. Hour by hour (per_hour True or None)
        reads a closed hour by its pages too where that is expected to cost less than
        its cheapest form whole: 72 + pages * (predicted slot + 400) + 400 bytes
        (pages.reading_bytes) against the form's bytes and 400. A client given a pubkey
        reads hour by hour (unions are not signed; pages are, each verified), and so
        does auto on a static mirror or over an hour listed corrupt.

        Read hour by hour, a sealed hour at or after the index's `exact_since` is read as
        an exact body (section 14) when its size is no more than the cheapest other
        form's sum. exact=True: every such hour is read in exact form, hour by hour
        (ProtocolError when the server has no universe, or has no exact body for one of
        them); exact=False: never. An exact body answers truly only for IDs of the
        publisher's universe: it is read alone only for a client made with
        registered=True, and otherwise refines the hour's cheapest form at the target
        fpp (forced or not), so an ID never registered is flagged at most at the
        target.

        CorruptHours names the hours of the range the server could not verify (its
        index lists them `corrupt`, or one answered 500 `corrupt`) whose complete
        filter this client does not hold: no answer is given for the range, never one
        that reads them as "no change".
        """
        try:
            changes = self._changed_since(ids, since, per_hour, exact, strategy)
        finally:
            self._reading_until = None
        if changes.stale and not self.accept_stale:
            raise Stale(changes)
        return changes

    def _changed_since(self, ids, since, per_hour, exact, strategy):
        since_path = hour_path(since)
        compact, paging = False, None
        if strategy is not None:
            if strategy not in STRATEGIES:
                raise ValueError(f"unknown strategy {strategy!r}: expected one of "
                                 f"{', '.join(STRATEGIES)}")
            per_hour, compact = STRATEGIES[strategy], strategy == "compact"
        paging = True if strategy == "pages" else None
        if exact:
            per_hour, compact = True, False
        index = self.index() if per_hour is not False or compact or self.verifier \
            else None
        damaged = []
        if index is not None:
            # An hour the server could not verify is unknown: answer for none of the
            # range, unless its complete filter is held from before (it never changes).
            damaged = corrupt_hours(index, parse_hour(since_path),
                                    parse_hour(index["current"]["hour"]))
            target = index.get("target_fpp", 0.01)
            unknown = [name for name in damaged
                       if not self._holds(hour_path(name), target)]
            if unknown:
                raise CorruptHours(unknown)
            if damaged and per_hour is None:
                per_hour = True  # a union over a damaged hour answers 500
        exact_from = None
        if index is not None and exact is not False:
            if index.get("exact_since"):
                exact_from = parse_hour(index["exact_since"])
            elif exact:
                raise ProtocolError("the server has no exact hours: its index says "
                                    "exact_since null (no universe registered)")
        if (per_hour is None or compact) and (index.get("static") or self.static):
            # A static mirror (PROTOCOL.md section 13) serves no unions.
            per_hour, compact = True, False
        plan = None
        if per_hour is None and not self.verifier:
            plan = self._cheapest_plan(index, parse_hour(since_path), len(ids), exact_from,
                                       compact=not damaged)
            per_hour = plan == "hourly"
        elif compact and not self.verifier:
            plan = self._compact_plan(index, parse_hour(since_path), len(ids)) or "union"
        # The since-union of the closed hours from its first hour on (just after the
        # last closed hour held), read first: a version 2 union ("compact") or an exact
        # body ("exact"): (its first hour, its `contains`, its last hour).
        union = None
        if isinstance(plan, tuple):  # never for a verifying client: unions are not signed
            start = plan[-1]
            first = parse_hour(since_path) + datetime.timedelta(hours=start)
            try:
                if plan[0] == "exact":
                    body, last = self.since_exact(hour_path(first))
                    contains = body.changed
                else:
                    ribbon, last = self.since_ribbon2(hour_path(first), 2.0 ** -plan[1])
                    contains = ribbon.contains
            except HTTPError as e:
                # A server without such since-ranges (406, or 404 for version 2 and
                # exact ranges alike): for version 2, the v1 union from `since` answers
                # the same question; an exact body, or a union that was to start later,
                # the hours read one by one.
                if e.status not in (404, 406):
                    raise self._union_error(e, index, hour_path(first)) from None
                per_hour = bool(start) or plan[0] == "exact"
            else:
                union = (first, contains, last)
        if not per_hour and union is None and not self.verifier:  # unions are not signed
            try:
                doc = self.document("/since" + since_path)
            except HTTPError as e:
                raise self._union_error(e, index, since_path) from None
            f = Filter.from_document(doc)
            found = [i for i in ids if f.contains(i)]
            stale = coverage.lag_reason(self.base, parse_hour(doc["to"]), False,
                                        coverage.clock(), self.lag_hours)
            return Changes([(doc["from"], doc["to"], found)] if found else [],
                           doc["from"], doc["to"], stale=[stale] if stale else [])
        now = parse_hour(index["current"]["hour"])
        listed = {h["hour"]: h for h in index.get("hours", [])}
        target, capacity = index.get("target_fpp", 0.01), index.get("capacity", 3000)
        versions = ribbon_versions(index)
        hour = parse_hour(since_path)
        out, read, now_sealed = [], [], None
        self._reading_until = now
        self._exact_refused_at = math.inf
        # With a since-union read, the hours before it; else every hour.
        while hour <= now and (union is None or hour < union[0]):
            path, name = hour_path(hour), hour.strftime("%Y-%m-%dT%H:00:00Z")
            count = listed.get(name, {}).get("count")
            count = capacity if count is None else count
            try:
                if name in damaged:  # held complete (checked above): the server cannot serve it
                    contains = self._held_reading(path, target)[0]
                elif hour == now:  # the open hour: always v1
                    doc = self.document(path)
                    contains = Filter.from_document(doc).contains
                    now_sealed = doc["complete"]  # a static mirror's newest hour
                elif exact and hour >= exact_from:
                    got = self.exact(path)
                    if got is None:
                        raise ProtocolError(f"hour {name}: the server has no exact body "
                                            "for it (404), though its index says "
                                            f"exact_since {index['exact_since']}")
                    contains = got.changed if self.registered else self._refined(
                        path, got, cheapest_within(count, target, versions))
                else:
                    contains = self._closed_hour(
                        path, count, target, len(ids),
                        self._exact_bytes(hour, name, listed, exact_from, count, target),
                        versions, ids, paging)
            except HTTPError as e:
                raise of_hour(e, name) from None
            found = [i for i in ids if contains(i)]
            if found:
                out.append((name, name, found))
            read.append(name)
            hour += datetime.timedelta(hours=1)
        if union is not None:
            rest, last, now_sealed = self._union_rest(ids, now, *union)
            return Changes(out + rest, coverage.rfc3339(parse_hour(since_path)),
                           coverage.rfc3339(last), stale=self._staleness(now, now_sealed))
        return Changes(out, read[0] if read else None, read[-1] if read else None,
                       [name for name in read if name in self.unverified],
                       self._staleness(now, now_sealed))

    def _union_error(self, error, index, since_path):
        """An error of a union from `since_path` (v1 or version 2): a 500 `corrupt` as
        CorruptHours naming the hours of the range the index lists corrupt (when it lists
        any); any other as it is."""
        if not isinstance(error, HTTPError) or error.code != "corrupt":
            return error
        index = index or self.index()
        named = corrupt_hours(index, parse_hour(since_path),
                              parse_hour(index["current"]["hour"]))
        return CorruptHours(named) if named else error

    def _union_rest(self, ids, now, first, contains, last):
        """changed_since's compact or exact plan from its since-union on (`contains` of
        the version 2 union or exact body covering the closed hours from `first` through
        `last`): one range (first, last) when it holds a followed ID, then each hour
        after `last` through `now` (the index's current hour: normally the open hour
        alone) read on its own as the v1 hour filter, a range each. Returns (the ranges,
        the last hour read, whether the current hour read says it is complete, or
        None)."""
        found = [i for i in ids if contains(i)]
        out = [(coverage.rfc3339(first), coverage.rfc3339(last), found)] if found else []
        hour, now_sealed = last + datetime.timedelta(hours=1), None
        while hour <= now:
            path, name = hour_path(hour), coverage.rfc3339(hour)
            try:
                doc = self.document(path)
            except HTTPError as e:
                raise of_hour(e, name) from None
            f = Filter.from_document(doc)
            if hour == now:
                now_sealed = doc["complete"]
            found = [i for i in ids if f.contains(i)]
            if found:
                out.append((name, name, found))
            hour += datetime.timedelta(hours=1)
        return out, max(last, now), now_sealed

    def _holds(self, path, target_fpp):
        """Whether a complete filter of the hour at `path` is held, in a form this client
        may answer from (an exact body alone only for IDs declared registered)."""
        return self._held_reading(path, target_fpp) is not None

    @staticmethod
    def _exact_bytes(hour, name, listed, exact_from, count, target):
        """The expected size of a sealed hour's exact body (section 14, choosing it):
        the index's `exact_bytes`, or for an hour it does not list (or lists without
        them: not built yet) the v1 body's expected bytes, as the Rust and JavaScript
        clients take it; None before `exact_since`."""
        if exact_from is None or hour < exact_from:
            return None
        listed_bytes = listed.get(name, {}).get("exact_bytes")
        return bloom_choice(count, target)[0] if listed_bytes is None else listed_bytes

    def _hourly_is_cheaper(self, index, since, followed, exact_from=None):
        return self._cheapest_plan(index, since, followed, exact_from,
                                   compact=False) == "hourly"

    def _compact_plan(self, index, since, followed):
        """How the compact plan reads the hours from `since` (compact_plan): ("compact",
        k, start), or None when it cannot."""
        return compact_plan(self._plan_hours(index, since, None),
                            index.get("capacity", 3000), followed, self.fetch_cost,
                            ribbon_versions(index))

    def _cheapest_plan(self, index, since, followed, exact_from=None, compact=True):
        """cheapest_plan of the hours from `since` through the index's current hour:
        "hourly", "union", ("compact", k, start) or ("exact", start). `compact`: the
        compact and exact plans may be read (the caller verifies nothing, the source is
        no static mirror, no hour is damaged)."""
        if "target_fpp" not in index or "hours" not in index:
            return "union"  # an index without counts: one union
        return cheapest_plan(self._plan_hours(index, since, exact_from),
                             index["target_fpp"], index.get("capacity", 3000), followed,
                             self.fetch_cost, ribbon_versions=ribbon_versions(index),
                             registered=self.registered,
                             compact=compact and not self.verifier and not self.static
                             and not index.get("static"),
                             pages=self.pages_served is not False,
                             universe=self._universe(index))

    @staticmethod
    def _universe(index):
        """The most IDs the publisher's universe may hold, as the newest hour the index
        lists complete with a count above 0 and its `exact_bytes` says
        (universe_at_most; the index lists hours newest first), or None when none does:
        bounds an exact body of a range (section 14, "Choosing it (clients)")."""
        for h in index.get("hours") or []:
            if h.get("complete") is not True:
                continue
            count, size = h.get("count"), h.get("exact_bytes")
            if count is None or size is None:
                continue
            got = universe_at_most(count, size)
            if got is not None:
                return got
        return None

    def _plan_hours(self, index, since, exact_from):
        """The hours from `since` through the index's current hour, as the planner
        takes them (hourly_is_cheaper)."""
        now = parse_hour(index["current"]["hour"])
        listed = {h["hour"]: h for h in index.get("hours") or []}
        counts = {name: h.get("count") for name, h in listed.items()}
        capacity, target = index.get("capacity", 3000), index.get("target_fpp", 0.01)
        hours, hour = [], since
        while hour <= now:
            path, name = hour_path(hour), hour.strftime("%Y-%m-%dT%H:00:00Z")
            held, cached = self._held_reading(path, target), self.cache.get(path)
            count = capacity if counts.get(name) is None else counts[name]
            exact_bytes = None if hour == now else self._exact_bytes(
                hour, name, listed, exact_from, count, target)
            if held is not None and held[1] == 0.0:
                exact_bytes = None  # held with its exact body: nothing to fetch
            hours.append({"count": counts.get(name), "open": hour == now,
                          "exact_bytes": exact_bytes,
                          "held_fpp": held[1] if held else None,
                          "unchanged": bool(cached) and cached[1]["count"] == counts.get(name)})
            hour += datetime.timedelta(hours=1)
        return hours

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
        _expect(abs(f.fpp() - v["fpp"]) <= v["fpp"] * 1e-9, v["ids"][:3])
        checked += 1
    for v in vectors["sizing"]:
        _expect(optimal(v["n"], v["p"]) == (v["m"], v["k"]), v)
        checked += 1
    for v in vectors["sized"]:
        _expect(sized(v["n"], v["p"]) == (v["m"], v["k"]), v)
        expected = _probes.expected_fpp(v["m"], v["k"], max(v["n"], 1))
        _expect(abs(expected - v["expected"]) <= v["expected"] * 1e-9, v)
        checked += 1
    return checked
