"""Verifiable history (PROTOCOL.md section 11): the published chain vectors, and
refusals naming the hour for a changed byte, a swapped hour, a dropped hour and
another key. Signature checks need `cryptography` and are skipped, with the reason,
without it."""

import copy
import datetime
import json

import pytest

from bloomcast_client import Filter
from bloomcast_client.verify import (GENESIS, VerificationError, digest, header,
                                     hour_index, selftest_chain, signed_message)

from conftest import ROOT

CHAIN = ROOT / "docs" / "chain-vectors.json"


def vectors():
    return json.loads(CHAIN.read_text(encoding="utf-8"))


def hour_of(v):
    return datetime.datetime.fromisoformat(v["hour"].replace("Z", "+00:00"))


def test_digests_headers_and_signed_messages_match_the_vectors():
    v = vectors()
    assert bytes.fromhex(v["genesis"]) == GENESIS
    prev = GENESIS
    for h in v["hours"]:
        f = Filter(h["m"], h["k"])
        for id_ in h["ids"]:
            f.add(id_)
        assert digest(f.data).hex() == h["digest"]
        assert header(digest(f.data), prev).hex() == h["header"]
        assert hour_index(hour_of(h)) == h["index"]
        assert signed_message(h["index"], bytes.fromhex(h["header"])).hex() == h["signed_message"]
        prev = bytes.fromhex(h["header"])


def test_the_selftest_passes_on_the_published_chain_vectors():
    assert selftest_chain(str(CHAIN)) == len(vectors()["hours"])


@pytest.fixture
def verifier():
    pytest.importorskip("cryptography", reason="signature checks need cryptography")
    from bloomcast_client.verify import Verifier
    return Verifier(vectors()["public_key"])


def check(verifier, h, data=None, hour=None):
    return verifier.check(hour or hour_of(h), data if data is not None else
                          bytes.fromhex(h["bin_hex"]), h["prev"], h["signature"])


def test_every_vector_hour_verifies_and_links(verifier):
    for h in vectors()["hours"]:
        assert check(verifier, h).hex() == h["header"]


def test_a_flipped_bit_is_refused_naming_the_hour(verifier):
    h = vectors()["hours"][1]
    data = bytearray.fromhex(h["bin_hex"])
    data[0] ^= 1
    with pytest.raises(VerificationError, match=h["hour"]):
        check(verifier, h, bytes(data))


def test_a_swapped_hour_is_refused(verifier):
    hours = vectors()["hours"]
    with pytest.raises(VerificationError, match=hours[1]["hour"]):
        check(verifier, hours[2], hour=hour_of(hours[1]))


def test_a_dropped_hour_breaks_the_chain(verifier):
    entries = copy.deepcopy(vectors()["hours"])
    del entries[1]
    with pytest.raises(VerificationError, match=entries[1]["hour"]):
        verifier.check_chain(entries)
    assert len(verifier.check_chain(vectors()["hours"])) == len(vectors()["hours"])


def test_another_key_is_refused():
    pytest.importorskip("cryptography", reason="signature checks need cryptography")
    from bloomcast_client.verify import Verifier
    other = Verifier("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")
    h = vectors()["hours"][0]
    with pytest.raises(VerificationError, match=h["hour"]):
        check(other, h)


ROTATION = ROOT / "docs" / "rotation-vectors.json"


def rotation():
    return json.loads(ROTATION.read_text(encoding="utf-8"))


def test_key_ids_and_signature_fields_match_the_rotation_vectors():
    from bloomcast_client.verify import key_id, parse_signature
    v = rotation()
    for k in v["keys"]:
        assert key_id(bytes.fromhex(k["public_key"])) == k["id"]
    for h in v["hours"]:
        assert parse_signature(h["bloom_signature"]) == (h["signature"], h["key_id"])
    assert parse_signature(v["hours"][0]["signature"]) == (v["hours"][0]["signature"], None)
    assert parse_signature(" ab ;x=1; KEYID=0102 ") == ("ab", "0102")


TRUST = ROOT / "docs" / "trust-vectors.json"


def trust():
    return json.loads(TRUST.read_text(encoding="utf-8"))


def make_verifier(pubkey, keys):
    pytest.importorskip("cryptography", reason="signature checks need cryptography")
    from bloomcast_client.verify import Verifier
    verifier = Verifier(pubkey)
    assert verifier.use_keys(keys)
    return verifier


@pytest.fixture(params=[0, 1, 2], ids=["from key 1", "from key 2", "from key 3"])
def rotated(request):
    """A verifier given one of trust-vectors.json's three keys, with their list: the
    rotation vectors' hours are signed by its keys 1 and 2, for the same hours."""
    keys = trust()["keys"]
    return make_verifier(keys[request.param]["public_key"], keys)


def test_each_hour_verifies_under_the_key_listed_for_it(rotated):
    for chained, signed in zip(vectors()["hours"], rotation()["hours"]):
        rotated.check(hour_of(chained), bytes.fromhex(chained["bin_hex"]), chained["prev"],
                      signed["bloom_signature"])


def test_a_signature_by_a_key_listed_for_other_hours_is_refused(rotated):
    chained = {h["hour"]: h for h in vectors()["hours"]}
    for r in rotation()["refused"]:
        h = chained[r["hour"]]
        with pytest.raises(VerificationError, match=r["why"]) as e:
            rotated.check(hour_of(h), bytes.fromhex(h["bin_hex"]), h["prev"],
                          r["bloom_signature"])
        assert r["hour"] in str(e.value)


@pytest.mark.parametrize("given, refused, why", [
    (1, 0, "it is not acknowledged by the keys you trust"),
    (0, 1, "no key you trust vouched for it"),
])
def test_a_list_without_signed_successions_trusts_the_key_given_alone(given, refused, why):
    # rotation-vectors.json lists its keys as before successions were signed.
    keys = rotation()["keys"]
    verifier = make_verifier(keys[given]["public_key"], keys)
    chained, signed = vectors()["hours"], rotation()["hours"]
    for c, s in zip(chained, signed):
        if s["key_id"] == keys[given]["id"]:
            verifier.check(hour_of(c), bytes.fromhex(c["bin_hex"]), c["prev"],
                           s["bloom_signature"])
        else:
            with pytest.raises(VerificationError, match=why) as e:
                verifier.check(hour_of(c), bytes.fromhex(c["bin_hex"]), c["prev"],
                               s["bloom_signature"])
            assert f"listed under key {keys[refused]['id']}" in str(e.value)
            assert c["hour"] in str(e.value)


def test_a_key_list_replaces_a_pinned_one_only_if_it_extends_it():
    from bloomcast_client.verify import extends, parse_keys
    v = rotation()
    pinned = parse_keys(v["pinned"])
    verified = hour_index(datetime.datetime.fromisoformat(v["verified"].replace("Z", "+00:00")))
    for case in v["extending"]:
        new = parse_keys(case["keys"])
        if case["accepted"]:
            extends(new, pinned, verified)
        else:
            with pytest.raises(VerificationError, match="does not extend"):
                extends(new, pinned, verified)


def test_a_list_with_a_wrong_id_or_overlapping_keys_is_refused():
    from bloomcast_client.verify import parse_keys
    keys = rotation()["keys"]
    wrong = copy.deepcopy(keys)
    wrong[0]["id"] = "00" * 8
    overlapping = copy.deepcopy(keys)
    overlapping[0]["last_hour"] = overlapping[1]["first_hour"]
    for bad in (wrong, overlapping):
        with pytest.raises(VerificationError, match="key list is refused"):
            parse_keys(bad)


def test_a_list_that_does_not_name_the_key_given_is_refused():
    pytest.importorskip("cryptography", reason="signature checks need cryptography")
    from bloomcast_client.verify import Verifier
    other = "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29"  # RFC 8032 SHA(abc)
    verifier = Verifier(other)
    with pytest.raises(VerificationError, match="does not list the key you trust "
                       r"\(139e3940e64b5491\)"):
        verifier.use_keys(rotation()["keys"])
    assert not verifier.use_keys(None), "a document without a list: the key given alone"
