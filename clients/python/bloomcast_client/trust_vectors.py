"""docs/trust-vectors.json (PROTOCOL.md section 11, "Test vectors") against this client:
the succession, checkpoint and open-hour messages always; the signatures, the trust walk
from each key and the refusal of the forged list when `cryptography` is installed."""

import datetime
import json

from .trust import (VerificationError, ack_message, checkpoint_message, hour_index,
                    open_message, parse_keys, parse_open_signature, vouch_message)


def _index(text):
    return hour_index(datetime.datetime.fromisoformat(text.replace("Z", "+00:00")))


def _expect(holds, what):
    if not holds:
        raise VerificationError(f"trust vector mismatch: {what}")


def selftest_trust(path):
    """Checks every part of the trust vectors; returns how many were checked."""
    with open(path, encoding="utf-8") as f:
        v = json.load(f)
    keys, checked = parse_keys(v["keys"]), 0
    for before, k in zip(keys, keys[1:]):
        listed = next(x for x in v["keys"] if x["id"] == k.id)
        _expect(vouch_message(k.public, k.first).hex() == listed["vouch_message"], k.id)
        _expect(ack_message(before.public, k.first).hex() == listed["ack_message"], k.id)
        checked += 2
    c = v["checkpoint"]
    _expect(checkpoint_message(c["made"], _index(c["hour"]), bytes.fromhex(c["header"])).hex()
            == c["message"], "checkpoint")
    o = v["open"]
    _expect(open_message(_index(o["hour"]), o["made"], bytes.fromhex(o["digest"])).hex()
            == o["message"], "open")
    _expect(parse_open_signature(o["header_value"]) == (o["signature"], o["key_id"],
                                                         o["made"]), "open header value")
    checked += 3
    try:
        from .verify import MissingDependency, Verifier
        verifiers = [Verifier(k["public_key"]) for k in v["keys"]]
    except MissingDependency:
        return checked
    for verifier in verifiers:
        verifier.use_keys(v["keys"])
        _expect(verifier.trusted_keys() == v["trusted_from_any"], "trusted from any key")
        verifier.check_checkpoint(c)
        verifier.check_open(datetime.datetime.fromisoformat(o["hour"].replace("Z", "+00:00")),
                            bytes.fromhex(o["filter_hex"]), o["header_value"], o["made"], 0)
        checked += 3
    forged = Verifier(v["keys"][0]["public_key"])
    forged.use_keys(v["forged"])
    refused = _index(v["forged_refused_hour"])
    try:
        forged._key_for(refused, v["forged_refused_hour"], None)
    except VerificationError as e:
        _expect(v["forged"][1]["id"] in str(e), "the forged key named")
    else:
        _expect(False, "the forged list's hour refused")
    return checked + 1
