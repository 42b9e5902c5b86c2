"""Compact filters, version 2 (PROTOCOL.md section 12, "Version 2 (`.ribbon2`): any
precision, near the floor"): decoding and querying a `BCR2` body, the grade a requested
fpp names, and the body's size predicted before any fetch.

    ribbon = Ribbon2.from_bytes(body)     # a `.ribbon2` response body
    ribbon.contains("user:42")            # False is certain
    grade_for_fpp(0.01)                   # (6, 185): k and split of the grade served

Standard library only; all arithmetic is on Python integers masked to 64 bits, as the
section writes it (mix64 and the wrapping arithmetic of version 1).
"""

import json
import math

from .ribbon import GOLDEN, MASK64, RibbonError, mix64

MAGIC = b"BCR2"
# Part B has k fingerprint bits, at most 31; part A k + 1, at most 32.
MAX_K = 31
SELECTOR_RANGE = 256
ROW_SALT = 0x2545F4914F6CDD1D
LOW56 = (1 << 56) - 1
TAG_A, TAG_B = 1, 2
# Solution bytes a 128-bit window at any bit offset reads: 16 plus one for the shift.
WINDOW_BYTES = 17
# The fpp this client asks for: whole bits, 2^-b for b = 4..24, members of every server's
# published grade set (section 12, "The grade set"; bytes and fpp are both linear between
# two whole bits, so the cheapest expected bytes lie on one of them).
RIBBON2_GRID = tuple(2.0 ** -b for b in range(4, 25))


def fpp_param(p):
    """The spelling of `p` in `?fpp=`: the shortest decimal in scientific notation that
    parses back to exactly `p` (the server's canonical spelling of its grades, section 12:
    `6.25e-2`, `7.8125e-3`), so every client names one URL per grade."""
    import decimal
    return format(decimal.Decimal(repr(float(p))), "e")


def salt(tag, seed):
    """salt(tag, seed) = mix64(tag << 32 | seed)."""
    return mix64((tag << 32) | seed)



if hasattr(int, "bit_count"):  # Python 3.10+
    def _parity(x):
        return x.bit_count() & 1
else:  # pragma: no cover - depends on the Python version
    def _parity(x):
        return bin(x).count("1") & 1


# --- Grades ------------------------------------------------------------------------------

def grade_for_fpp(p):
    """(k, split) of the cheapest grade whose false-positive rate is at most p:
    k = floor(log2(1/p)), split = ceil(512 * (1 - p * 2^k)), and split 256 is k + 1,
    split 0. ValueError unless 2^-31 <= p < 1. As the Rust `Grade::for_fpp`, with its
    guard against the float: 2^-k is made the largest power of two at least p."""
    if not (isinstance(p, (int, float)) and math.isfinite(p) and 2.0 ** -31 <= p < 1):
        raise ValueError(f"fpp {p!r} is outside 2^-31 <= fpp < 1")
    k = math.floor(-math.log2(p))
    while k > 0 and 2.0 ** -k < p:
        k -= 1
    while 2.0 ** -(k + 1) >= p:
        k += 1
    split = max(math.ceil(512 * (1 - p * 2.0 ** k)), 0)
    if split >= SELECTOR_RANGE:
        k, split = k + 1, 0
    if k > MAX_K or (k == MAX_K and split):
        raise ValueError(f"fpp {p!r} needs more than 32 fingerprint bits")
    return k, split


def grade_fpp(k, split):
    """The false-positive rate of a grade: 2^-k * (1 - split/512)."""
    return 2.0 ** -k * (1 - split / 512)


# --- Hashing a key (the section's "Querying") ---------------------------------------------

def route(h1, h2, split, shards_a, shards_b):
    """(part A?, shard within the part) of the key (h1, h2): its own bits route it,
    part A when key >> 56 < split, shard = (key mod 2^56) * count >> 56."""
    h = (h1 << 32) | h2
    in_a = (h >> 56) < split
    return in_a, ((h & LOW56) * (shards_a if in_a else shards_b)) >> 56


def row(h1, h2, part_a, seed, m):
    """(start, coeff, fingerprint) of the key (h1, h2) in a shard of part A (part_a) or
    B with m rows and this seed; the fingerprint is all 64 bits of e = mix64(key ^
    0x2545f4914f6cdd1d) (a query compares its low `bits`)."""
    e = mix64(((h1 << 32) | h2) ^ ROW_SALT)
    return _row(e, e ^ salt(TAG_A if part_a else TAG_B, seed), m)


def _row(e, u, m):
    b = mix64(u)
    c = mix64(u ^ GOLDEN)
    d = mix64(u ^ ((2 * GOLDEN) & MASK64))
    w = min(m, 128)
    start = (b * (m - w + 1)) >> 64
    coeff = ((c | d << 64) & ((1 << w) - 1)) | 1 if w else 0
    return start, coeff, e


# --- The body ------------------------------------------------------------------------------

def _varint(body, at, name):
    """(value, next offset) of the unsigned LEB128 at `at`: minimal, below 2^32."""
    value = 0
    for i in range(5):
        if at + i >= len(body):
            raise RibbonError(f"the header ends inside {name}")
        b = body[at + i]
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            if i and not b:
                raise RibbonError(f"{name} is not minimally encoded")
            if value >> 32:
                raise RibbonError(f"{name} is 2^32 or more")
            return value, at + i + 1
    raise RibbonError(f"{name} is longer than 5 bytes")


class Ribbon2:
    """A decoded version 2 filter: n keys at grade (k, split), part A's shards (k + 1
    fingerprint bits) then part B's (k bits), each (m rows, seed)."""

    def __init__(self, n, k, split, shards_a, shards, solution):
        self.n, self.k, self.split = n, k, split
        self.shards_a = shards_a
        self.shards_b = len(shards) - shards_a
        self.shards = [tuple(s) for s in shards]  # (m, seed), in the body's order
        # Per shard: (m, bits, salt, first solution bit), computed once.
        self._shards, offset = [], 0
        for i, (m, seed) in enumerate(self.shards):
            part_a = i < shards_a
            bits = k + 1 if part_a else k
            self._shards.append((m, bits, salt(TAG_A if part_a else TAG_B, seed), offset))
            offset += m * bits
        # Zero bytes past the end, so every 128-bit window reads whole.
        self._solution = bytes(solution) + bytes(WINDOW_BYTES)

    @property
    def fpp(self):
        """2^-k * (1 - split/512): the rate served (`Bloom-Fpp`)."""
        return grade_fpp(self.k, self.split)

    @property
    def bits(self):
        """Fingerprint bits a key costs on average: k + split/256."""
        return self.k + self.split / SELECTOR_RANGE

    @property
    def rows(self):
        return sum(m for m, _ in self.shards)

    @classmethod
    def from_bytes(cls, body):
        """Decodes a `.ribbon2` body, refusing (RibbonError naming the first thing wrong)
        what section 12 says a decoder rejects: magic, k (k = 31 allows only split 0), sA
        nonzero with split 0, varints not minimal or 2^32 or more, part B with rows at
        k = 0, a length other than the shards' solutions, padding bits set."""
        body = bytes(body)
        if len(body) < 6:
            raise RibbonError(f"{len(body)} bytes is shorter than the header")
        if body[0:4] != MAGIC:
            raise RibbonError('magic is not "BCR2"')
        k, split = body[4], body[5]
        if k > MAX_K or (k == MAX_K and split):
            raise RibbonError(f"k = {k}, split = {split}: part A would exceed 32 bits")
        n, at = _varint(body, 6, "n")
        shards_a, at = _varint(body, at, "sA")
        shards_b, at = _varint(body, at, "sB")
        if split == 0 and shards_a:
            raise RibbonError(f"sA = {shards_a} with split = 0 (part A holds no key)")
        total = shards_a + shards_b
        # Every shard takes at least two header bytes: a count past that is a lie.
        if total > (len(body) - at) // 2:
            raise RibbonError(f"{total} shards do not fit in {len(body)} bytes")
        shards, solution_bits = [], 0
        for i in range(total):
            m, at = _varint(body, at, "a shard's m")
            if at >= len(body):
                raise RibbonError("the header ends inside a shard's seed")
            seed = body[at]
            at += 1
            bits = k + 1 if i < shards_a else k
            if bits == 0 and m:
                raise RibbonError(f"a shard of part B has m = {m} with k = 0")
            shards.append((m, seed))
            solution_bits += m * bits
        solution = body[at:]
        expected = (solution_bits + 7) // 8
        if len(solution) != expected:
            raise RibbonError(f"solutions of {len(solution)} bytes, expected {expected} "
                              "for the shards' rows")
        if solution_bits % 8 and solution[-1] >> (solution_bits % 8):
            raise RibbonError("padding bits past the solutions are set")
        return cls(n, k, split, shards_a, shards, solution)

    def contains_key(self, h1, h2):
        """The section's query for the sha1-km32 key (h1, h2)."""
        key = (h1 << 32) | h2
        h = key
        if (h >> 56) < self.split:
            count, first = self.shards_a, 0
        else:
            count, first = self.shards_b, self.shards_a
        if not count:
            return False  # the key's part holds no key
        m, bits, shard_salt, offset = self._shards[first + (((h & LOW56) * count) >> 56)]
        e = mix64(key ^ ROW_SALT)
        start, coeff, fp = _row(e, e ^ shard_salt, m)
        s = self._solution
        t = offset + start
        for _ in range(bits):  # column by column; the first mismatch decides
            window = int.from_bytes(s[t >> 3:(t >> 3) + WINDOW_BYTES], "little") >> (t & 7)
            if _parity(window & coeff) != fp & 1:
                return False
            fp >>= 1
            t += m
        return True

    def contains(self, id_):
        """False: certainly not in the hour. True: probably (at rate `fpp`)."""
        from . import key  # the sha1-km32 halves (section 1)
        return self.contains_key(*key(id_))


# --- Choosing it (clients) ----------------------------------------------------------------

def ribbon2_bytes(n, p):
    """Expected bytes of a v2 body of n keys at the grade of p: 12 + 4 S + ceil(n bits
    1.005 / 8) + S bits / 2, bits = k + split/256, S the shards of both parts (4,096 keys
    a shard): the header, and the construction's 0.5% slack plus about 4 rows a shard."""
    k, split = grade_for_fpp(p)
    bits = k + split / SELECTOR_RANGE
    shards = math.ceil(n * split / SELECTOR_RANGE / 4096) \
        + math.ceil(n * (1 - split / SELECTOR_RANGE) / 4096)
    return 12 + 4 * shards + math.ceil(n * bits * 1.005 / 8) + shards * bits / 2


# --- Test vectors --------------------------------------------------------------------------

def selftest_ribbon2(path):
    """Checks this decoder against docs/ribbon2-vectors.json; returns the count."""
    from . import key
    with open(path, encoding="utf-8") as f:
        vectors = json.load(f)
    checked = 0
    for v in vectors["rows"]:
        if key(v["id"]) != (v["h1"], v["h2"]):
            raise RibbonError(f"hash mismatch for {v['id']!r}")
        got = row(v["h1"], v["h2"], v["part"] == "A", v["seed"], v["m"])
        if got != (v["start"], int(v["coeff"], 16), int(v["fingerprint"], 16)):
            raise RibbonError(f"row mismatch for {v!r}: {got}")
        r = v["route"]
        got = route(v["h1"], v["h2"], r["split"], r["sA"], r["sB"])
        if got != (r["part"] == "A", r["shard"]):
            raise RibbonError(f"route mismatch for {v!r}: {got}")
        checked += 1
    for v in vectors["grades"]:
        got = grade_for_fpp(v["fpp"])
        if got != (v["k"], v["split"]) or grade_fpp(*got) != v["grade_fpp"]:
            raise RibbonError(f"grade mismatch for {v!r}: {got}")
        checked += 1
    for v in vectors["filters"]:
        ribbon = Ribbon2.from_bytes(bytes.fromhex(v["body"]))
        members = v["members"]
        header = (ribbon.n, ribbon.k, ribbon.split, [ribbon.shards_a, ribbon.shards_b])
        if header != (members["count"], v["k"], v["split"], v["shards"]):
            raise RibbonError(f"header mismatch: n, k, split, shards = {header}")
        for i in range(members["count"]):
            id_ = f"{members['prefix']}{members['first'] + i * members['step']}"
            if not ribbon.contains(id_):
                raise RibbonError(f"member {id_!r} of {members['count']} answers false")
        for a in v["absent"]:
            if ribbon.contains(a["id"]) != a["contains"]:
                raise RibbonError(f"{a['id']!r} should answer {a['contains']}")
        checked += 1
    return checked
