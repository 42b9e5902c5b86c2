"""Exact hours for IDs a client cannot vouch for (PROTOCOL.md section 14, "Choosing it").

An exact body answers truly only for the IDs of the publisher's universe as it stood when
the hour was sealed; for any other ID its answer is arbitrary, and the universe is never
published. So a client reads an exact body alone only when its caller declares the IDs it
asks about registered (Client(registered=True)); otherwise the body refines the hour's
approximate form of the fewest bytes whose fpp is at most the service's target: an ID is
changed only when both say so. A registered ID is answered exactly, no false negative is
added, and any other ID is flagged at most at the target.

    reading = exact_reading(exact_bytes, cost, count, 0.01, registered=False)
    # None: the cheapest other form alone; ("alone", bytes); or ("refined", under, bytes)
"""

from .ribbon import RESPONSE_OVERHEAD, RIBBON_BITS, bloom_choice, ribbon_bytes


def cheapest_within(count, target_fpp, ribbon_versions=None, bloom_only=False):
    """(form, bytes, fpp) of the approximate form of a closed hour of `count` IDs with the
    fewest body bytes whose fpp is at most `target_fpp`: ("bloom", None), ("ribbon", r)
    or, where `ribbon_versions` lists 2, ("ribbon2", P) as `cheapest_form` names them.
    `bloom_only`: a verifying client (ribbons are not signed): the v1 filter."""
    from .ribbon2 import RIBBON2_GRID, grade_fpp, grade_for_fpp, ribbon2_bytes
    size, fpp = bloom_choice(count, target_fpp)
    options = [(("bloom", None), size, fpp)]
    if not bloom_only and ribbon_versions and 2 in ribbon_versions:
        for p in RIBBON2_GRID:
            fpp = grade_fpp(*grade_for_fpp(p)) if count else 0.0
            options.append((("ribbon2", p), ribbon2_bytes(count, p), fpp))
    elif not bloom_only:
        options += [(("ribbon", r), ribbon_bytes(count, r), 2.0 ** -r) for r in RIBBON_BITS]
    return min((o for o in options if o[2] <= target_fpp), key=lambda o: o[1])


def exact_reading(exact_bytes, other_cost, count, target_fpp, registered=False,
                  ribbon_versions=None, bloom_only=False):
    """How to read a sealed hour whose exact body is `exact_bytes` bytes (None: it has
    none), against the cheapest other form's expected bytes `other_cost`:

    - None: the other form alone;
    - ("alone", cost): the exact body alone, only when `registered`, when its bytes are
      no more than `other_cost` (it wastes no fetch);
    - ("refined", under, cost): the exact body with `under` (cheapest_within's form,
      bytes, fpp), when both bodies and the second response's headers cost no more."""
    if exact_bytes is None:
        return None
    if registered:
        return ("alone", exact_bytes) if exact_bytes <= other_cost else None
    under = cheapest_within(count, target_fpp, ribbon_versions, bloom_only)
    cost = under[1] + exact_bytes + RESPONSE_OVERHEAD
    return ("refined", under, cost) if cost <= other_cost else None
