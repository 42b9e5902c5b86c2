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
