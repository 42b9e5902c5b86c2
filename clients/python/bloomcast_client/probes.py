"""The false-positive rate of the probes clients really make, from docs/PROTOCOL.md:
section 3's sizing rule (what size a server picks for n IDs, to predict its bytes) and
section 8's `fpp` of a body (exact up to 4,096 bits, estimated from the fill above).

An ID probes (h1 + i*h2) mod m for i < k: an arithmetic progression (AP), whose bits are
fewer than k when h2 mod m shares a factor with m (one, when it is 0), and which an
absent ID finds all set when it traces an inserted ID's own AP.
"""

import math

TWO32 = 1 << 32
EXACT_BITS = 4096
MAX_K = 64


def zero_step_share(m):
    """The share of IDs whose h2 mod m is 0: ceil(2^32 / m) / 2^32."""
    return -(-TWO32 // m) / TWO32


def overlap_counts(k):
    """a[j], j in 0..k: the k-term APs that meet an absent ID's k positions in exactly
    j >= 2 of them (section 3's formula)."""
    a = [0] * (k + 1)

    def classes(x):
        return [(size, count) for size, count in ((k // x + 1, k % x), (k // x, x - k % x))
                if count]
    for p in range(1, k):
        for q in range(1, k):
            if math.gcd(p, q) != 1:
                continue
            for length, length_classes in classes(q):
                for width, width_classes in classes(p):
                    both = min(length, width)
                    for j in range(2, both + 1):
                        shifts = 2 if j < both else abs(length - width) + 1
                        a[j] += 2 * length_classes * width_classes * shifts
    return a


def _rate(f, n, m, k, zero, short, full, overlaps):
    """Section 8's formula at fill f with n IDs: z f + sum w_d f^d + w (f^k + ...)."""
    short_part = sum(w * f ** d for d, w in short)
    full_part = f ** k
    if k >= 2 and m >= 2:
        shared = sum(overlaps[j] * f ** (k - j) for j in range(min(k, 3), k + 1))
        full_part += n * full / (m * (m - 1)) * shared
    return min(zero * f + short_part + full * full_part, 1.0)


def _totient(d):
    return sum(1 for i in range(1, d + 1) if math.gcd(i, d) == 1)


def expected_fpp(m, k, n, overlaps=None):
    """Section 3's E(m, k, n): the expected rate of a prime m holding n IDs."""
    overlaps = overlap_counts(k) if overlaps is None else overlaps
    zero = zero_step_share(m)
    c = (zero + (1 - zero) * min(k, m)) / m
    f = -math.expm1(n * math.log1p(-c))
    return _rate(f, n, m, k, zero, [], 1 - zero, overlaps)


def is_prime(m):
    if m < 4:
        return m >= 2
    if m % 2 == 0 or m % 3 == 0:
        return False
    d = 5
    while d * d <= m:
        if m % d == 0 or m % (d + 2) == 0:
            return False
        d += 6
    return True


def _next_prime(m):
    while not is_prime(m):
        m += 1
    return m


def sized(n, p):
    """(m, k) section 3's rule gives n IDs at target p: for each k from 1 (stopping 4 past
    the best), the smallest prime m > max(7, 2k^2) with E(m, k, n) <= p; the smallest m,
    and for it the lowest E."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1): {p!r}")
    n = max(n, 1)
    best = None
    for k in range(1, MAX_K + 1):
        if best is not None and k > best[1] + 4:
            break
        overlaps = overlap_counts(k)

        def within(m):
            return expected_fpp(m, k, n, overlaps) <= p
        lo = hi = max(8, 2 * k * k + 1)
        while not within(min(hi, TWO32 - 5)):
            if hi >= TWO32 - 5:
                break
            lo, hi = hi + 1, hi * 2
        else:
            hi = min(hi, TWO32 - 5)
            while lo < hi:
                mid = (lo + hi) // 2
                if within(mid):
                    hi = mid
                else:
                    lo = mid + 1
            m = _next_prime(hi)
            rate = expected_fpp(m, k, n, overlaps)
            if best is None or m < best[0] or (m == best[0] and rate < best[2]):
                best = (m, k, rate)
    if best is None:
        raise ValueError(f"no filter below 2^32 bits reaches {p!r}")
    return best[0], best[1]


def _exact(data, m, k):
    """Section 8, up to 4,096 bits: every (h1, h2) residue pair, each weighted by how many
    of the 2^32 values of a half land on it."""
    bits = int.from_bytes(bytes(data), "little")
    mask = (1 << m) - 1
    q, s = divmod(TWO32, m)
    low = (1 << s) - 1

    def rotated(x, shift):
        return ((x >> shift) | (x << (m - shift))) & mask if shift else x
    total = 0
    for r in range(m):
        starts, covered = bits, 1
        while covered < k and starts:
            add = min(covered, k - covered)
            starts &= rotated(starts, add * r % m)
            covered += add
        if starts:
            inner = q * bin(starts).count("1") + bin(starts & low).count("1")
            total += (q + (r < s)) * inner
    return total / (TWO32 * TWO32)


def fpp(data, m, k):
    """Section 8's false-positive probability of a body of m bits probed k times."""
    if m <= EXACT_BITS:
        return _exact(data, m, k)
    ones = sum(bin(b).count("1") for b in data)
    f = ones / m
    if f >= 1:
        return 1.0
    zero = zero_step_share(m)
    short = [(d, _totient(d) / m) for d in range(2, min(k, m)) if m % d == 0]
    full = max(1 - zero - sum(w for _, w in short), 0.0)
    n = -(m / k) * math.log1p(-f)
    return _rate(f, n, m, k, zero, short, full, overlap_counts(k))
