"""JSON and numbers printed as the Rust CLI prints them (serde_json without
`preserve_order`): compact, object keys sorted, floats in Rust's shortest form
(`2.0`, `0.00001`, `1e-7`, `1e+16`), NaN and infinities as null.

The verbs that copy a Rust verb's output byte for byte (history, estimate, watch) print
through here, so a script reading either CLI's output reads the same text."""

import decimal
import json
import math


def rust_float(x):
    """`x` as serde_json writes an f64: the shortest digits that round-trip (as Python's
    repr), in fixed notation for exponents -5 ..= 15, else `d.ddde[+-]N`."""
    if not math.isfinite(x):
        raise ValueError("NaN and infinities have no JSON form")
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return sign + "0.0"
    shortest = decimal.Decimal(repr(abs(x))).normalize().as_tuple()
    digits = "".join(map(str, shortest.digits))
    e10 = len(digits) - 1 + shortest.exponent  # the first digit's decimal exponent
    if -5 <= e10 <= 15:
        if e10 >= len(digits) - 1:
            return sign + digits + "0" * (e10 - len(digits) + 1) + ".0"
        if e10 >= 0:
            return sign + digits[:e10 + 1] + "." + digits[e10 + 1:]
        return sign + "0." + "0" * (-e10 - 1) + digits
    body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{body}e{'+' if e10 >= 0 else '-'}{abs(e10)}"


def dumps(value):
    """`value` (dicts, lists, str, int, float, bool, None) as serde_json's compact
    Display writes it."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_string(k)}:{dumps(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    if isinstance(value, float):
        return rust_float(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        return _string(value)
    return json.dumps(value)  # int, bool, None


def _string(text):
    return json.dumps(text, ensure_ascii=False)
