"""Compact filters (PROTOCOL.md section 12): decoding and querying a ribbon body, and
choosing, before any fetch, the form of a closed hour that costs the fewest bytes.

    ribbon = Ribbon.from_bytes(body)      # a `.ribbon` response body
    ribbon.contains("user:42")            # False is certain

Standard library only; all arithmetic is on Python integers masked to 64 bits.
"""

import json
import math

MAGIC = b"BCR1"
HEADER = 24
MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
# The fingerprint bits this client asks for (`?fpp=2^-r`).
RIBBON_BITS = range(4, 25)
DEFAULT_FETCH_COST = 10 * 1024


class RibbonError(ValueError):
    """A body that breaks the decoding rules of section 12."""


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def slot(h1, h2, seed, m, r):
    """(start, coeff, fp) of the key (h1, h2) in a ribbon of m rows built with seed."""
    a = mix64(((h1 << 32) | h2) ^ seed)
    b = mix64(a ^ GOLDEN)
    c = mix64(b ^ GOLDEN)
    return (a * (m - 63)) >> 64, b | 1, c & ((1 << r) - 1)


class Ribbon:
    """A decoded ribbon: n keys, m rows of r bits, the seed it was built with."""

    def __init__(self, n, m, r, seed, solution):
        self.n, self.m, self.r, self.seed = n, m, r, seed
        # Eight zero bytes past the end, so every 64-bit window reads whole.
        self._solution = bytes(solution) + bytes(9)

    @property
    def fpp(self):
        return 2.0 ** -self.r

    @classmethod
    def from_bytes(cls, body):
        body = bytes(body)
        if len(body) < HEADER:
            raise RibbonError(f"{len(body)} bytes is shorter than the header")
        if body[0:4] != MAGIC:
            raise RibbonError('magic is not "BCR1"')
        if body[4] != 1:
            raise RibbonError(f"version {body[4]} (this client knows 1)")
        r = body[5]
        if not 1 <= r <= 32:
            raise RibbonError(f"r = {r} outside 1..32")
        if body[6:8] != b"\0\0":
            raise RibbonError("reserved bytes are not zero")
        n = int.from_bytes(body[8:12], "little")
        m = int.from_bytes(body[12:16], "little")
        seed = int.from_bytes(body[16:24], "little")
        if m < 64:
            raise RibbonError(f"m = {m} is below 64")
        solution = body[HEADER:]
        expected = (r * m + 7) // 8
        if len(solution) != expected:
            raise RibbonError(f"solution of {len(solution)} bytes, expected {expected} "
                              f"for m = {m}, r = {r}")
        if (r * m) % 8 and solution[-1] >> ((r * m) % 8):
            raise RibbonError("padding bits past r*m are set")
        return cls(n, m, r, seed, solution)

    @classmethod
    def from_document(cls, doc):
        """(Ribbon, its binary body) from the JSON form (section 12, "JSON form"),
        rejected when `structure` or `hash` is another, `digest` is not the body's
        SHA-256, or `w`, `r`, `m`, `seed` or `count` differ from the body's."""
        import hashlib
        if not isinstance(doc, dict) or doc.get("structure") != "ribbon":
            raise RibbonError('not a ribbon document ("structure" is not "ribbon")')
        if doc.get("hash") != "sha1-km32":
            raise RibbonError(f"unknown hash {doc.get('hash')!r}")
        text = doc.get("filter")
        if not isinstance(text, str) or len(text) % 2 or \
                any(c not in "0123456789abcdefABCDEF" for c in text):
            raise RibbonError('"filter" is not hex')
        body = bytes.fromhex(text)
        if doc.get("digest") != hashlib.sha256(body).hexdigest():
            raise RibbonError('"digest" is not the SHA-256 of the body')
        ribbon = cls.from_bytes(body)
        for field, value in (("w", 64), ("r", ribbon.r), ("m", ribbon.m),
                             ("seed", ribbon.seed), ("count", ribbon.n)):
            if doc.get(field) != value or isinstance(doc.get(field), bool):
                raise RibbonError(f'"{field}" is {doc.get(field)!r}, the body says {value}')
        return ribbon, body

    def contains_key(self, h1, h2):
        start, coeff, fp = slot(h1, h2, self.seed, self.m, self.r)
        s, got = self._solution, 0
        for b in range(self.r):
            t = b * self.m + start
            window = (int.from_bytes(s[t >> 3:(t >> 3) + 9], "little") >> (t & 7)) & MASK64
            got |= (bin(window & coeff).count("1") & 1) << b
        return got == fp

    def contains(self, id_):
        """False: certainly not in the hour. True: probably (fpp = 2^-r)."""
        from . import key  # the sha1-km32 halves (section 1)
        return self.contains_key(*key(id_))


# --- Choosing the cheapest form of a closed hour ------------------------------------

def ribbon_rows(n):
    """Rows of the server's ribbon for n keys (section 12, construction)."""
    slack = 0.065 if n < 10_000 else 0.075
    return max(math.ceil(n * (1 + slack)) + 16, 64)


def ribbon_bytes(n, r):
    return HEADER + (r * ribbon_rows(n) + 7) // 8


def bloom_choice(n, target_fpp):
    """(bytes, fpp) of a closed hour's v1 filter as `.bin` with gzip: sized for n at the
    target by section 3's rule plus one of the server's 1/32 growth steps, gzip's
    framing; its fpp the rule's expected rate (at most the target), 0 for no ID."""
    from .probes import expected_fpp, sized
    p = min(max(target_fpp, 1e-12), 0.5)
    m, k = sized(n, p)
    fpp = min(p, expected_fpp(m, k, n)) if n else 0.0
    m += m // 32
    raw = (m + 7) // 8
    return raw + 24 + raw // 8192, fpp


def cheapest_form(count, target_fpp, followed, fetch_cost=DEFAULT_FETCH_COST,
                  ribbon_versions=None):
    """The form of a closed hour of `count` IDs minimising filter bytes plus
    followed * fpp * fetch_cost: ("bloom", None) or ("ribbon", r), with its expected
    bytes. As the Rust SDK's `cheapest_form`.

    `ribbon_versions`: the index's `ribbon_versions`. When it lists 2 (section 12,
    "Version 2"), version 2 is offered instead of version 1: ("ribbon2", P) with P one
    of 2^-b, b = 4..24 (members of the server's grade set), its body bytes from `ribbon2_bytes` and its fpp the
    grade's (0 for an empty hour: a body of no key has no shard, and answers false)."""
    from .ribbon2 import RIBBON2_GRID, grade_fpp, grade_for_fpp, ribbon2_bytes

    def expected(size, fpp):
        return size + followed * fpp * fetch_cost

    options = []
    if ribbon_versions and 2 in ribbon_versions:
        for p in RIBBON2_GRID:
            size = ribbon2_bytes(count, p)
            fpp = grade_fpp(*grade_for_fpp(p)) if count else 0.0
            options.append((expected(size, fpp), size, ("ribbon2", p)))
    else:
        for r in RIBBON_BITS:
            size = ribbon_bytes(count, r)
            options.append((expected(size, 2.0 ** -r), size, ("ribbon", r)))
    size, fpp = bloom_choice(count, target_fpp)
    options.append((expected(size, fpp), size, ("bloom", None)))
    cost, _, form = min(options, key=lambda o: (o[0], o[1]))
    return form, cost


RESPONSE_OVERHEAD = 400  # status line and headers of a filter response
NOT_MODIFIED = 250


def _payload(n, p):
    """Bytes of a filter for n IDs at p: the m of section 3's rule, in bytes."""
    from .probes import sized
    return sized(n, min(max(p, 1e-12), 0.5))[0] / 8


def _hour_costs(hours, target_fpp, capacity, followed, fetch_cost, bloom_only,
                ribbon_versions, registered, pages=False):
    """Expected bytes of each hour of `hours` read on its own, wasted fetches included
    (as `hourly_is_cheaper` takes them). `pages`: a closed hour may be read by the pages
    of the IDs followed where version 2 is listed (bloomcast_client.pages), expected in
    as many distinct pages as `followed` IDs fall in at random."""
    from .probes import expected_fpp, sized
    from .refine import exact_reading
    p = target_fpp

    def waste(fpp):
        return followed * fpp * fetch_cost

    costs = []
    for h in hours:
        count = capacity if h.get("count") is None else h["count"]
        if h.get("open"):
            m, k = sized(max(count, capacity), p)
            fetch = NOT_MODIFIED if h.get("unchanged") else \
                _payload(max(count, capacity), p) + RESPONSE_OVERHEAD
            costs.append(fetch + waste(min(p, expected_fpp(m, k, count))))
            continue
        if bloom_only:
            size, fpp = bloom_choice(count, p)
            cost = size + waste(fpp)
        else:
            cost = cheapest_form(count, p, followed, fetch_cost, ribbon_versions)[1]
        reading = exact_reading(h.get("exact_bytes"), cost, count, p, registered,
                                ribbon_versions, bloom_only)
        if reading is not None:
            cost = reading[-1]  # no wasted fetch among registered IDs
        cost += RESPONSE_OVERHEAD
        if pages and ribbon_versions and 2 in ribbon_versions:
            from .pages import cheapest_pages, expected_pages
            cost = min(cost, cheapest_pages(count, followed, expected_pages(count, followed),
                                            fetch_cost)[1])
        if h.get("held_fpp") is not None:
            cost = min(cost, waste(h["held_fpp"]))
        costs.append(cost)
    return costs


def _compact_start(hours):
    """Where a version 2 since-union of `hours` starts: just after the last closed hour
    held complete (its `held_fpp` not None), 0 when none is held."""
    held = [i for i, h in enumerate(hours)
            if not h.get("open") and h.get("held_fpp") is not None]
    return held[-1] + 1 if held else 0


def _compact_cost(hours, capacity, followed, fetch_cost, costs, bloom_only,
                  ribbon_versions):
    """The closed hours of `hours` not held as one version 2 since-union (section 12,
    "Catching up"): those after the last closed hour held complete (before it, each hour
    read on its own, held ones answered from what is held), at the whole bit k (4..24)
    minimising its predicted bytes (grade (k, 0)) plus followed * 2^-k * fetch_cost,
    when the server serves version 2 to this client (its index lists 2; the client reads
    unsigned forms) and there is such an hour: (k, where the union starts in `hours`,
    its expected bytes with a response's overhead and the `costs` of the hours before
    it and of the open hour, each read on its own), else None. As the Rust SDK's
    `compact_cost`."""
    from .ribbon2 import ribbon2_bytes
    if bloom_only or not ribbon_versions or 2 not in ribbon_versions:
        return None
    start = _compact_start(hours)
    closed = [h for h in hours[start:] if not h.get("open")]
    if not closed:
        return None
    n = sum(capacity if h.get("count") is None else h["count"] for h in closed)

    def cost(k):
        return ribbon2_bytes(n, 2.0 ** -k) + followed * 2.0 ** -k * fetch_cost

    k = min(RIBBON_BITS, key=cost)  # the first of equals: the coarsest
    return k, start, cost(k) + RESPONSE_OVERHEAD + _others_cost(hours, costs, start)


def _others_cost(hours, costs, start):
    """The expected bytes of the hours of `hours` not in a since-union from
    `hours[start]` (those before it, and the open hour after it), each read on its own
    at `costs`."""
    return sum(c for i, (h, c) in enumerate(zip(hours, costs))
               if i < start or h.get("open"))


def universe_at_most(count, exact_bytes):
    """The most IDs a universe can hold for an exact body of `exact_bytes` bytes to tell
    which `count` of them changed (section 14, "Choosing it (clients)"): the largest N
    in [count, 2^40] whose floor, log2(C(N, count)) bits (`exact.floor_bits`), fits in
    8 * exact_bytes bits (a body is never below its floor), by bisection. None for an
    hour with no change (its body says nothing of N). As the Rust SDK's
    `universe_at_most`."""
    from .exact import floor_bits
    if count == 0:
        return None
    bits = 8.0 * exact_bytes
    low, high = count, 1 << 40
    while low < high:
        mid = low + (high - low + 1) // 2
        if floor_bits(mid, count) <= bits:
            low = mid
        else:
            high = mid - 1
    return low


def exact_bytes_at_most(n, r):
    """The most bytes an exact body of `r` changed IDs of a universe of at most `n`
    takes: 1.15 times the floor (section 14's bound) and its longest header (47 bytes);
    the floor is taken at min(r, n // 2), where it is largest, so `r` may be an upper
    bound. As the Rust SDK's `exact_bytes_at_most`."""
    from .exact import LARGEST, floor_bits
    return 1.15 * floor_bits(n, min(r, n // 2)) / 8 + LARGEST


def _exact_cost(hours, capacity, costs, bloom_only, registered, universe=None):
    """The closed hours of `hours` not held as one exact since-body (`GET
    /since/YYYY/MM/DD/HH.exact`, section 14, "Ranges: a past day, and catching up"), for
    a caller that declared its IDs registered (`registered`), when every one of them has
    an exact body (its `exact_bytes` not None: none before `exact_since`): (where it
    starts in `hours`, as `_compact_start` says, and its expected bytes with a
    response's overhead and the `costs` of the hours before it and of the open hour,
    each read on its own), else None. The body's bytes: the sum of the hours'
    `exact_bytes`, which a range's body does not exceed, or, given `universe` (an upper
    bound on the publisher's universe, `universe_at_most`), the lesser of that and
    `exact_bytes_at_most(universe, R)`, R the hours' counts summed (capacity for an
    hour with none): far below the sum where most of the universe changed. It wastes no
    fetch. Not for `bloom_only` (a verifying client: unions are not signed). As the
    Rust SDK's `exact_cost`."""
    if not registered or bloom_only:
        return None
    start = _compact_start(hours)
    closed = [h for h in hours[start:] if not h.get("open")]
    if not closed or any(h.get("exact_bytes") is None for h in closed):
        return None
    size = sum(h["exact_bytes"] for h in closed)
    if universe is not None:
        changed = sum(capacity if h.get("count") is None else h["count"] for h in closed)
        size = min(float(size), exact_bytes_at_most(universe, changed))
    return start, size + RESPONSE_OVERHEAD + _others_cost(hours, costs, start)


def compact_plan(hours, capacity, followed, fetch_cost=DEFAULT_FETCH_COST,
                 ribbon_versions=None, bloom_only=False):
    """How `--strategy compact` reads `hours` (dicts as `hourly_is_cheaper` takes them),
    when it can: ("compact", k, start), the closed hours from `hours[start]` (just after
    the last closed hour held complete; 0 when none is) as one version 2 since-union at
    2^-k, the hours before it and the open hour each on its own. None when it cannot (no
    closed hour from there on, version 2 not listed, or `bloom_only`). As the Rust SDK's
    `compact_plan`."""
    got = _compact_cost(hours, capacity, followed, fetch_cost, [], bloom_only,
                        ribbon_versions)
    return ("compact", got[0], got[1]) if got else None


def compact_precision(hours, capacity, followed, fetch_cost=DEFAULT_FETCH_COST,
                      ribbon_versions=None, bloom_only=False):
    """The whole bit k of `compact_plan` (its union at 2^-k), or None when there is no
    such plan."""
    got = compact_plan(hours, capacity, followed, fetch_cost, ribbon_versions, bloom_only)
    return got[1] if got else None


def cheapest_plan(hours, target_fpp, capacity, followed, fetch_cost, bloom_only=False,
                  ribbon_versions=None, registered=False, compact=True, pages=False,
                  universe=None):
    """The cheapest way to read `hours` (the last the open hour; dicts as
    `hourly_is_cheaper` takes them), in expected bytes with wasted fetches (the Rust
    SDK's `cheapest_plan`): "hourly", each hour on its own; "union", one v1 since-union
    through the open hour; or ("compact", k, start), the closed hours from `hours[start]`
    (just after the last closed hour held complete, 0 when none is) as one version 2
    since-union at 2^-k (`/since/....ribbon2`, section 12, "Catching up"), the hours
    before it (held ones answered from what is held) and the open hour each on its own,
    costed as the hourly plan costs them (`compact_plan`). Compact is weighed only when
    `compact` (the caller may read it: no verifying, no static mirror, no damaged hour),
    the index's `ribbon_versions` lists 2, not `bloom_only` and a closed hour remains
    from `start`. Or, for a caller that declared its IDs `registered`, ("exact", start):
    the same closed hours as one exact since-body (`/since/....exact`, section 14,
    "Ranges: a past day, and catching up"), costed as the sum of their `exact_bytes`
    (when each has one) with no wasted fetch, or, given `universe` (the most IDs the
    publisher's universe may hold, `universe_at_most` of an hour's listed count and
    `exact_bytes`), the lesser of that and `exact_bytes_at_most(universe, R)`, R their
    counts summed; weighed as compact is (`compact`, not `bloom_only`), but whatever
    `ribbon_versions` says. Ties go to hour by hour, then to
    the v1 union, then to compact. `pages`: hour by hour may read a closed hour by the
    pages of the IDs followed (section 12, "Huge hours by the page"), where that is
    expected to cost less than its cheapest form whole."""
    p = target_fpp
    costs = _hour_costs(hours, p, capacity, followed, fetch_cost, bloom_only,
                        ribbon_versions, registered, pages)
    counts = sum(capacity if h.get("count") is None else h["count"] for h in hours)
    best = ("hourly", sum(costs))
    union = _payload(counts, p) + RESPONSE_OVERHEAD + followed * p * fetch_cost
    if union < best[1]:
        best = ("union", union)
    got = _compact_cost(hours, capacity, followed, fetch_cost, costs, bloom_only,
                        ribbon_versions) if compact else None
    if got is not None and got[2] < best[1]:
        best = (("compact", got[0], got[1]), got[2])
    got = _exact_cost(hours, capacity, costs, bloom_only, registered,
                      universe) if compact else None
    if got is not None and got[1] < best[1]:
        best = (("exact", got[0]), got[1])
    return best[0]


def hourly_is_cheaper(hours, target_fpp, capacity, followed, fetch_cost, bloom_only=False,
                      ribbon_versions=None, registered=False, pages=False):
    """Whether reading hour by hour costs fewer expected bytes than one since-union
    (the Rust SDK's plan, without its version 2 since-union or exact since-body:
    `cheapest_plan` weighs those too). `hours`: dicts with `count` (None: unknown, taken as
    capacity), `held_fpp` (the best complete filter held, or None), `unchanged` (an
    open hour held at its current count: a 304), `open`, and `exact_bytes` (the size of
    a sealed hour's exact body, section 14, or None). `ribbon_versions`: the index's,
    as `cheapest_form` takes it. `registered`: the caller declared its IDs registered
    (an exact body may be read alone; else only to refine a form at the target).
    `pages`: as `cheapest_plan` takes it."""
    return cheapest_plan(hours, target_fpp, capacity, followed, fetch_cost, bloom_only,
                         ribbon_versions, registered, compact=False,
                         pages=pages) == "hourly"


def selftest_ribbon(path):
    """Checks this decoder against docs/ribbon-vectors.json; returns the count."""
    from . import key
    with open(path, encoding="utf-8") as f:
        vectors = json.load(f)
    checked = 0
    for v in vectors["slots"]:
        if key(v["id"]) != (v["h1"], v["h2"]):
            raise RibbonError(f"hash mismatch for {v['id']!r}")
        got = slot(v["h1"], v["h2"], int(v["seed"]), v["m"], v["r"])
        if got != (v["start"], int(v["coeff"], 16), v["fp"]):
            raise RibbonError(f"slot mismatch for {v!r}: {got}")
        checked += 1
    for v in vectors["filters"]:
        ribbon = Ribbon.from_bytes(bytes.fromhex(v["body"]))
        if ribbon.r != v["r"] or ribbon.n != len(v["ids"]):
            raise RibbonError(f"header mismatch: r {ribbon.r}, n {ribbon.n}")
        if not all(ribbon.contains(i) for i in v["ids"]):
            raise RibbonError(f"a member of {len(v['ids'])} IDs answers false")
        for a in v["absent"]:
            if ribbon.contains(a["id"]) != a["contains"]:
                raise RibbonError(f"{a['id']!r} should answer {a['contains']}")
        checked += 1
    return checked
