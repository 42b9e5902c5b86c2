"""How many IDs two filters hold together and in common, from their bits alone
(PROTOCOL.md section 8), and the filters `estimate` reads (URLs and files, as the Rust
CLI's `inspect` reads them). The math is pure: bytes in, numbers out."""

import gzip
import json
import math

from . import Client, Filter, ProtocolError


class ShapeMismatch(ValueError):
    """Two filters of different m, k or hash: their bits do not combine."""


def ones(data):
    return sum(bin(b).count("1") for b in data)


def estimated_count(set_bits, m, k):
    """Swamidass–Baldi, -(m/k) ln(1 - X/m); infinite when every bit is set."""
    if set_bits >= m:
        return math.inf
    return -(m / k) * math.log(1 - set_bits / m)


def overlap(a, b):
    """{a, b, union, intersection, jaccard} estimated from two Filters of one shape; the
    intersection |A| + |B| - |A ∪ B| clamped to 0 ..= min(|A|, |B|), NaN (as the
    jaccard) when the union is saturated. ShapeMismatch otherwise."""
    if (a.m, a.k) != (b.m, b.k):
        raise ShapeMismatch(f"({a.m}, {a.k}) vs ({b.m}, {b.k})")
    union_bits = sum(bin(x | y).count("1") for x, y in zip(a.data, b.data))
    est_a, est_b = estimated_count(ones(a.data), a.m, a.k), estimated_count(ones(b.data), b.m, b.k)
    union = estimated_count(union_bits, a.m, a.k)
    if math.isfinite(union):
        intersection = min(max(est_a + est_b - union, 0.0), min(est_a, est_b))
    else:
        intersection = math.nan
    jaccard = intersection / union if union > 0 else 0.0
    return {"a": est_a, "b": est_b, "union": union, "intersection": intersection,
            "jaccard": jaccard}


def round_half_away(x):
    """Rust's f64::round: halves away from zero (Python's round() goes to even)."""
    if not math.isfinite(x):
        return x
    whole = math.floor(abs(x))
    return math.copysign(whole + (abs(x) - whole >= 0.5), x)


def load(target, m=None, k=None):
    """(document or None, Filter) from a URL, a JSON document file (gzip or not), or a
    raw hex or binary file given m and k. ValueError naming the target otherwise."""
    if target.startswith(("http://", "https://")):
        scheme, _, rest = target.partition("://")
        host, slash, path = rest.partition("/")
        doc = Client(f"{scheme}://{host}").document(slash + path)
        return doc, Filter.from_document(doc)
    try:
        with open(target, "rb") as f:
            data = f.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except OSError as e:
        raise ValueError(f"cannot read {target}: {e.strerror} (os error {e.errno})") from None
    try:
        if data.lstrip()[:1] == b"{":
            doc = json.loads(data)
            return doc, Filter.from_document(doc)
        if m is None:
            raise ValueError(f"{target} is not a JSON document; a raw hex or binary filter "
                             "needs --m and --k")
        text = data.strip()
        if len(text) == (m + 7) // 8 * 2:
            return None, Filter.from_hex(m, k, text.decode("ascii", "replace"))
        return None, Filter(m, k, data)
    except (ProtocolError, ValueError) as e:
        if str(e).startswith(target):
            raise
        raise ValueError(f"{target}: {e}") from None
