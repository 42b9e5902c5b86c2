"""An hour by the page (PROTOCOL.md section 12, "Huge hours by the page (`.pages`)"):
decoding a `BCP1` body's header and slots, the page of an ID, what each page's signature
is over, and the bytes of reading a few pages predicted before any fetch.

    header = PagesHeader.parse(body[:72])   # `Range: bytes=0-71`
    p = header.page_of_id("user:42")
    a, b = header.slot_range(p)              # `Range: bytes=a-(b-1)`
    Page.parse(header, p, slot).contains("user:42")   # the whole body's answer

Each page is a version 2 body (bloomcast_client.ribbon2) at the header's grade. Standard
library only; Client.pages fetches and verifies them.
"""

import math

from .ribbon import RESPONSE_OVERHEAD, RibbonError

# What each page's request costs beside its bytes, a round trip, weighed as bytes (as the
# Rust SDK's PAGE_ROUND_TRIP): a client back after many huge hours takes the version 2
# union rather than hundreds of pages an hour.
PAGE_ROUND_TRIP = 4096
from .ribbon2 import RIBBON2_GRID, SELECTOR_RANGE, Ribbon2, grade_fpp, grade_for_fpp

MAGIC = b"BCP1"
HEADER_LEN = 72
# A slot's signature and its body's length.
SLOT_PREFIX = 66
SIGNATURE_LEN = 64
# Keys a page holds on average: P = max(1, ceil(n / PAGE_KEYS)).
PAGE_KEYS = 64
LOW56 = (1 << 56) - 1
MAX_K = 31
PAGES_TYPE = "application/vnd.bloomcast.pages"


class PagesError(RibbonError):
    """A paged body, or a slot of one, that breaks the decoding rules of the section."""


def key64(id_):
    """The ID's key: the first 8 bytes of its SHA-1, big-endian (as version 2 takes it)."""
    from . import key
    h1, h2 = key(id_)
    return (h1 << 32) | h2


def page_of(key, pages):
    """The page holding `key` of `pages`: floor((key mod 2^56) * P / 2^56)."""
    return ((key & LOW56) * pages) >> 56


def pages_for(n):
    """Pages of n distinct keys: max(1, ceil(n / 64)) (at most 2^32 - 1)."""
    return min(max(1, -(-n // PAGE_KEYS)), 0xFFFFFFFF)


class PagesHeader:
    """The body's first 72 bytes: the grade (k, split) every page is built at, the hour's
    index, its chain header and the signing key's id (both zero when unsigned), n
    distinct keys, P pages and S bytes a slot. `raw`: the 72 bytes as read (each page's
    signature covers them)."""

    def __init__(self, raw):
        self.raw = bytes(raw)
        self.k, self.split = raw[4], raw[5]
        self.hour = int.from_bytes(raw[8:16], "big", signed=True)
        self.chain_header = self.raw[16:48]
        self.key_id = self.raw[48:56]
        self.n = int.from_bytes(raw[56:64], "big")
        self.pages = int.from_bytes(raw[64:68], "big")
        self.slot = int.from_bytes(raw[68:72], "big")

    @classmethod
    def parse(cls, data):
        """Reads the header from the first 72 bytes of `data`, refusing (PagesError
        naming the field) a magic other than BCP1, no such grade, nonzero reserved bytes,
        no page or a slot shorter than 66 bytes."""
        data = bytes(data)
        if len(data) < HEADER_LEN:
            raise PagesError(f"{len(data)} bytes is shorter than the header")
        if data[0:4] != MAGIC:
            raise PagesError('magic is not "BCP1"')
        k, split = data[4], data[5]
        if k > MAX_K or (k == MAX_K and split) or data[6:8] != b"\0\0":
            raise PagesError(f"k = {k}, split = {split}: no such grade")
        header = cls(data[:HEADER_LEN])
        if header.pages == 0 or header.slot < SLOT_PREFIX:
            raise PagesError(f"{header.pages} pages of {header.slot} bytes: at least one "
                             f"page of {SLOT_PREFIX}")
        return header

    @property
    def signed(self):
        """Whether the pages carry signatures (a key id is set)."""
        return self.key_id != bytes(8)

    @property
    def fpp(self):
        """The grade's rate: every page's, so each answer's."""
        return grade_fpp(self.k, self.split)

    @property
    def bits(self):
        return self.k + self.split / SELECTOR_RANGE

    def page_of(self, key):
        return page_of(key, self.pages)

    def page_of_id(self, id_):
        return page_of(key64(id_), self.pages)

    def slot_range(self, p):
        """(first byte, end) of page p's slot in the body: 72 + p*S to 72 + (p+1)*S."""
        start = HEADER_LEN + p * self.slot
        return start, start + self.slot

    @property
    def body_len(self):
        return HEADER_LEN + self.pages * self.slot


def signed_page(header_raw, p, slot):
    """What page p's signature is over (hashed, as a derived form's body): the body's 72
    header bytes as read, p (4 bytes, big-endian), the slot after its signature (L, the
    page's body, the padding)."""
    return bytes(header_raw) + p.to_bytes(4, "big") + bytes(slot[SIGNATURE_LEN:])


class Page:
    """Page `index` read from its slot: its signature (64 bytes, zero when unsigned) and
    its version 2 filter."""

    def __init__(self, index, signature, ribbon):
        self.index, self.signature, self.ribbon = index, signature, ribbon

    @property
    def unsigned(self):
        return self.signature == bytes(SIGNATURE_LEN)

    @property
    def n(self):
        return self.ribbon.n

    @classmethod
    def parse(cls, header, index, slot):
        """Reads page `index`'s slot (S bytes of a body with `header`), refusing
        (PagesError naming the page) a slot of another length, a body length L that
        overruns the slot, padding that is not zero, a malformed body or one of another
        grade than the header's."""
        slot = bytes(slot)
        if not 0 <= index < header.pages or len(slot) != header.slot:
            raise PagesError(f"page {index}: {len(slot)} bytes where the header says page "
                             f"{index} of {header.pages} has {header.slot}")
        length = int.from_bytes(slot[64:66], "big")
        if SLOT_PREFIX + length > len(slot):
            raise PagesError(f"page {index}: {length} body bytes do not fit in its slot")
        if any(slot[SLOT_PREFIX + length:]):
            raise PagesError(f"page {index}: padding is not zero")
        try:
            ribbon = Ribbon2.from_bytes(slot[SLOT_PREFIX:SLOT_PREFIX + length])
        except RibbonError as e:
            raise PagesError(f"page {index}: {e}") from None
        if (ribbon.k, ribbon.split) != (header.k, header.split):
            raise PagesError(f"page {index}: grade (k {ribbon.k}, split {ribbon.split}) "
                             f"where the header says (k {header.k}, split {header.split})")
        return cls(index, slot[:SIGNATURE_LEN], ribbon)

    def contains_key(self, key):
        return self.ribbon.contains_key(key >> 32, key & 0xFFFFFFFF)

    def contains(self, id_):
        """Whether the ID (of this page) may be in the hour."""
        return self.contains_key(key64(id_))


def parse_body(body):
    """(header, [Page]) of a whole paged body, refusing (PagesError) one whose length is
    not 72 + P*S, any malformed slot, or pages whose n do not add up to the header's."""
    header = PagesHeader.parse(body)
    if len(body) != header.body_len:
        raise PagesError(f"{len(body)} bytes where the header says {header.body_len}")
    pages = []
    for p in range(header.pages):
        a, b = header.slot_range(p)
        pages.append(Page.parse(header, p, body[a:b]))
    n = sum(page.n for page in pages)
    if n != header.n:
        raise PagesError(f"pages hold {n} keys where the header says {header.n}")
    return header, pages


class PagedHour:
    """The pages of one hour's paged body read so far: `hour` (an aware datetime) read
    at `url`, its `header`, `pages` ({p: Page}), `complete` once the whole body was read
    (a source that answered a Range with the whole body, 200). `read(paged, p)` fetches
    page p (the client's, by Range)."""

    def __init__(self, hour, url, header, read):
        self.hour, self.url, self.header, self._read = hour, url, header, read
        self.pages, self.complete = {}, False

    @property
    def fpp(self):
        return self.header.fpp

    def page(self, p):
        if p not in self.pages:
            self.pages[p] = self._read(self, p)
        return self.pages[p]

    def missing(self, ids):
        """The distinct pages of `ids` not read yet, in order."""
        return sorted({self.header.page_of_id(i) for i in ids} - set(self.pages))

    def contains(self, id_):
        """The answer of the ID's page (read first if it was not): the whole body's."""
        key = key64(id_)
        return self.page(self.header.page_of(key)).contains_key(key)


# --- Choosing it (clients) ------------------------------------------------------------

def predicted_slot_bytes(n, k, split):
    """Bytes of a slot of a body of n keys at grade (k, split), before fetching: the
    fullest of P pages, whose key counts are near Poisson of mean n / P, taken as the
    mean and five of its standard deviations (and 2), at k + split/256 bits a key, with
    the slot's signature and length and its body's header (13 bytes). As the Rust SDK's
    `Pages::predicted_slot_bytes`."""
    mean = n / pages_for(n)
    fullest = mean + 5 * math.sqrt(mean) + 2 if n else 0.0
    bits = k + split / SELECTOR_RANGE
    return SLOT_PREFIX + 13 + math.ceil(fullest * bits / 8)


def predicted_bytes(n, k, split):
    """Bytes of the whole paged body: the header and P predicted slots."""
    return HEADER_LEN + pages_for(n) * predicted_slot_bytes(n, k, split)


def reading_bytes(n, k, split, needed):
    """Bytes of reading `needed` pages of an hour of n keys at (k, split): the header's
    range, then one range a page, each with a response's headers."""
    slot = predicted_slot_bytes(n, k, split)
    return HEADER_LEN + needed * (slot + RESPONSE_OVERHEAD + PAGE_ROUND_TRIP) + RESPONSE_OVERHEAD


def expected_pages(n, followed):
    """The distinct pages `followed` IDs are expected to fall in, of an hour of n keys
    (their IDs unknown: uniform over its P pages)."""
    pages = pages_for(n)
    return pages * (1 - (1 - 1 / pages) ** followed) if followed else 0.0


def cheapest_pages(count, followed, needed, fetch_cost, fpp=None):
    """(P, expected bytes) of reading `needed` pages of a closed hour of `count` IDs,
    wasted fetches (followed * fpp * fetch_cost) included: at the whole bit 2^-b (b =
    4..24, members of every server's grade set, RIBBON2_GRID) minimising the sum, or at
    `fpp` alone when given (a static mirror holds one paged body, at its target)."""
    options = []
    for p in (RIBBON2_GRID if fpp is None else (fpp,)):
        k, split = grade_for_fpp(p)
        rate = grade_fpp(k, split) if count else 0.0
        options.append((reading_bytes(count, k, split, needed)
                        + followed * rate * fetch_cost, p))
    cost, p = min(options, key=lambda o: o[0])  # the first of equals: the coarsest
    return p, cost
