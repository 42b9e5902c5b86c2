"""Exact hours (PROTOCOL.md section 14): decoding and querying an `.exact` body, which
answers, for every ID of the publisher's universe, whether it changed in the hour, with
no false positive.

    exact = Exact.from_bytes(body)        # a `.exact` response body
    exact.changed("user:42")              # exact for an ID of the universe

For an ID outside the universe the answer is arbitrary (in a complemented body, "changed"
for most of them). Standard library only; all arithmetic is on Python integers masked to
64 bits.
"""

import hashlib
import json
import math

from .ribbon import GOLDEN, MASK64, mix64

MAGIC = b"BCX1"
# The version byte: the levels hold the changed keys (1), or the unchanged ones with every
# answer negated (2, "complemented": built where more than half the universe changed).
VERSION, VERSION_COMPLEMENTED = 1, 2
# magic, version, k, split, then eight varints of 1 to 5 bytes.
FIXED, SMALLEST, LARGEST = 7, 15, 47
VARINTS = ("N", "r", "mA", "mB", "mR", "sA", "sB", "sR")
# Tags of the three systems and of the selector (section 14, querying).
TAG_A, TAG_B, TAG_RETRIEVAL, TAG_SELECTOR = 1, 2, 3, 4
MASK128 = (1 << 128) - 1
WINDOW = 17  # bytes holding any 128 bits from any bit offset (128 + 7 bits)

try:
    _popcount = int.bit_count  # Python 3.10+
except AttributeError:  # pragma: no cover - Python 3.9
    def _popcount(x):
        return bin(x).count("1")


class ExactError(ValueError):
    """A body that breaks the decoding rules of section 14."""


def floor_bits(n, r):
    """log2(C(n, r)): the bits any exact body of `r` changed IDs of a universe of `n`
    needs (section 14's floor); 0 when r == 0 or r >= n. As bloomcast-core's
    `floor_bits` (here through math.lgamma)."""
    if r == 0 or r >= n:
        return 0.0
    return (math.lgamma(n + 1) - math.lgamma(r + 1) - math.lgamma(n - r + 1)) / math.log(2)


def salt(tag, seed):
    return mix64(((tag << 32) | seed) & MASK64)


SELECTOR_SALT = salt(TAG_SELECTOR, 0)


def selector(h1, h2):
    """The key's selector, 0..255: part A when below the body's split."""
    return mix64(((h1 << 32) | h2) ^ SELECTOR_SALT) >> 56


def row(h1, h2, tag, seed, m):
    """(start, coeff, fingerprint) of the key (h1, h2) in a system of m rows."""
    a = mix64(((h1 << 32) | h2) ^ salt(tag, seed))
    b = mix64(a ^ GOLDEN)
    c = mix64(b ^ GOLDEN)
    d = mix64(c ^ GOLDEN)
    w = min(m, 128)
    start = (a * (m - w + 1)) >> 64
    coeff = ((((c << 64) | b) & ((1 << w) - 1)) | 1) if m else 0
    return start, coeff, d


def _varint(body, at, name):
    """An unsigned LEB128 varint at `at`: (value, offset after it). Minimal (a last byte
    of 0 only when it is the only byte), at most 5 bytes, below 2^32."""
    value, shift, start = 0, 0, at
    while True:
        if at >= len(body):
            raise ExactError(f"the header ends inside varint {name}")
        byte = body[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        if at - start == 5:
            raise ExactError(f"varint {name} is longer than 5 bytes")
        shift += 7
    if byte == 0 and at - start > 1:
        raise ExactError(f"varint {name} is not minimally encoded")
    if value >> 32:
        raise ExactError(f"varint {name} = {value} is not below 2^32")
    return value, at


def _key(id_):
    d = hashlib.sha1(id_.encode("utf-8")).digest()
    return int.from_bytes(d[:8], "big")  # h1 << 32 | h2


class Exact:
    """A decoded exact body: `universe` IDs (N), `changed_count` of them changed (r),
    fingerprint bits `k` (part A k + 1), `split`, `rows` (mA, mB, mR), `seeds`
    (sA, sB, sR) and `complemented`: True for a version 2 body, whose levels hold the
    unchanged IDs and whose every answer is negated (a server builds one where more than
    half the universe changed; `changed_count` is still the IDs that changed)."""

    def __init__(self, k, split, universe, changed_count, rows, seeds, solution,
                 complemented=False):
        self.k, self.split = k, split
        self.universe, self.changed_count = universe, changed_count
        self.complemented = complemented
        self.rows, self.seeds = tuple(rows), tuple(seeds)
        # Zero bytes past the end, so every 128-bit window reads whole.
        self._solution = bytes(solution) + bytes(WINDOW)
        m_a, m_b, m_r = self.rows
        s_a, s_b, s_r = self.seeds
        # Per system: (salt, rows, band width, start factor, first bit, columns).
        self._a = (salt(TAG_A, s_a), m_a, min(m_a, 128), m_a - min(m_a, 128) + 1, 0, k + 1)
        self._b = (salt(TAG_B, s_b), m_b, min(m_b, 128), m_b - min(m_b, 128) + 1,
                   (k + 1) * m_a, k)
        self._r = (salt(TAG_RETRIEVAL, s_r), m_r, min(m_r, 128), m_r - min(m_r, 128) + 1,
                   (k + 1) * m_a + k * m_b, 1)

    @classmethod
    def from_bytes(cls, body):
        body = bytes(body)
        if len(body) < SMALLEST:
            raise ExactError(f"{len(body)} bytes is shorter than the smallest header "
                             f"({SMALLEST} bytes)")
        if body[0:4] != MAGIC:
            raise ExactError(f'magic is {body[0:4]!r}, not "BCX1"')
        if body[4] not in (VERSION, VERSION_COMPLEMENTED):
            raise ExactError(f"version {body[4]} (this client knows 1 and 2)")
        k = body[5]
        if k > 31:
            raise ExactError(f"k = {k} exceeds 31")

        split = body[6]  # one byte: 0..255
        values, at = [], FIXED
        for name in VARINTS:
            value, at = _varint(body, at, name)
            values.append(value)
        n, r, m_a, m_b, m_r, s_a, s_b, s_r = values
        if k == 0 and m_b != 0:
            raise ExactError(f"mB = {m_b} rows with k = 0 (part B must be empty)")
        total = (k + 1) * m_a + k * m_b + m_r
        solution = body[at:]
        expected = (total + 7) // 8
        if len(solution) != expected:
            raise ExactError(f"length {len(body)} bytes, expected {at + expected} "
                             f"({at}-byte header) for T = {total} solution bits")
        if total % 8 and solution[-1] >> (total % 8):
            raise ExactError(f"padding bits past T = {total} are set")
        return cls(k, split, n, r, (m_a, m_b, m_r), (s_a, s_b, s_r), solution,
                   complemented=body[4] == VERSION_COMPLEMENTED)

    def _value(self, key, system, check_fingerprint):
        """Part A or B (check_fingerprint): whether the key's value, its `bits` columns,
        equals its fingerprint's low bits. The retrieval level: its one bit."""
        slt, m, w, span, first, bits = system
        a = key ^ slt
        a = ((a ^ (a >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        a = ((a ^ (a >> 27)) * 0x94D049BB133111EB) & MASK64
        a ^= a >> 31
        b = mix64(a ^ GOLDEN)
        c = mix64(b ^ GOLDEN) if w > 64 or check_fingerprint else 0
        if m:
            coeff = ((((c << 64) | b) & ((1 << w) - 1)) | 1)
        else:
            coeff = 0
        t = first + ((a * span) >> 64)
        s = self._solution
        if not check_fingerprint:  # the retrieval level: one column
            window = int.from_bytes(s[t >> 3:(t >> 3) + WINDOW], "little") >> (t & 7)
            return _popcount(window & coeff) & 1
        # Column by column against the fingerprint's bits: most keys that did not change
        # differ within the first two.
        fingerprint = mix64(c ^ GOLDEN)
        for _ in range(bits):
            window = int.from_bytes(s[t >> 3:(t >> 3) + WINDOW], "little") >> (t & 7)
            if (_popcount(window & coeff) ^ fingerprint) & 1:
                return False
            fingerprint >>= 1
            t += m
        return True

    def changed_key(self, h1, h2):
        """Whether the key (h1, h2) changed in the hour: the levels' answer, negated in a
        complemented body. Every answer goes through here."""
        return self._held((h1 << 32) | h2) != self.complemented

    def _held(self, key):
        """Whether the levels answer 1 for the key (section 14's query): it passes the
        filter and its retrieval bit is 1."""
        part = self._a if mix64(key ^ SELECTOR_SALT) >> 56 < self.split else self._b
        if part[5] and not self._value(key, part, True):
            return False
        return self._value(key, self._r, False) == 1

    def changed(self, id_):
        """Whether the ID changed in the hour: exact for an ID of the universe the body
        was built from, arbitrary for any other (in a complemented body, True for most)."""
        key = _key(id_)
        return self.changed_key(key >> 32, key & 0xFFFFFFFF)


def selftest_exact(path):
    """Checks this decoder against docs/exact-vectors.json; returns the count."""
    from . import key
    with open(path, encoding="utf-8") as f:
        vectors = json.load(f)
    checked = 0
    for v in vectors["rows"]:
        if key(v["id"]) != (v["h1"], v["h2"]):
            raise ExactError(f"hash mismatch for {v['id']!r}")
        got = (salt(v["tag"], v["seed"]), selector(v["h1"], v["h2"]),
               row(v["h1"], v["h2"], v["tag"], v["seed"], v["m"]))
        want = (int(v["salt"], 16), v["selector"],
                (v["start"], int(v["coeff"], 16), int(v["fingerprint"], 16)))
        if got != want:
            raise ExactError(f"row mismatch for {v['id']!r} (tag {v['tag']}, seed "
                             f"{v['seed']}, m {v['m']}): {got} != {want}")
        checked += 1
    for v in vectors["bodies"]:
        body = bytes.fromhex(v["body"])
        exact = Exact.from_bytes(body)
        header = (exact.k, exact.split, exact.universe, exact.changed_count,
                  list(exact.rows), list(exact.seeds))
        if header != (v["k"], v["split"], v["universe"], len(v["changed"]), v["rows"],
                      v["seeds"]):
            raise ExactError(f"header mismatch for a universe of {v['universe']}: {header}")
        # The vector says which version it is; the body's version byte must agree.
        if exact.complemented is not v.get("complemented"):
            raise ExactError(f"the body over {v['universe']} IDs is version {body[4]} "
                             f"but the vector says complemented "
                             f"{json.dumps(v.get('complemented'))}")
        changed = set(v["changed"])
        for i in range(v["universe"]):
            id_ = f"u:{i}"
            if exact.changed(id_) != (id_ in changed):
                raise ExactError(f"{id_} should answer {id_ in changed} in the body over "
                                 f"{v['universe']} IDs")
        checked += 1
    return checked
