"""Trust (PROTOCOL.md section 11, "Trust"): docs/trust-vectors.json against this client.
Successions signed both ways are walked from any key; a forged list (the trusted key
retired, a key of a mirror's own after it, vouched for by itself) gets its hours refused
naming that key; checkpoints and versions of the open hour verify only as made, and an
open version older than the freshness bound is refused. Signature checks need
`cryptography` and are skipped, with the reason, without it."""

import copy
import datetime
import json

import pytest

from bloomcast_client.cli import main
from bloomcast_client.trust import (VerificationError, ack_message, checkpoint_message,
                                    hour_index, open_message, parse_keys,
                                    parse_open_signature, trusted_run, vouch_message)
from conftest import ROOT

TRUST = ROOT / "docs" / "trust-vectors.json"


def vectors():
    return json.loads(TRUST.read_text(encoding="utf-8"))


def hour(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_succession_checkpoint_and_open_messages_are_the_vectors_bytes():
    v = vectors()
    keys = parse_keys(v["keys"])
    for before, k, listed in zip(keys, keys[1:], v["keys"][1:]):
        assert vouch_message(k.public, k.first).hex() == listed["vouch_message"]
        assert ack_message(before.public, k.first).hex() == listed["ack_message"]
    c, o = v["checkpoint"], v["open"]
    assert checkpoint_message(c["made"], hour_index(hour(c["hour"])),
                              bytes.fromhex(c["header"])).hex() == c["message"]
    assert open_message(hour_index(hour(o["hour"])), o["made"],
                        bytes.fromhex(o["digest"])).hex() == o["message"]
    assert parse_open_signature(o["header_value"]) == (o["signature"], o["key_id"], o["made"])


def test_the_selftest_checks_every_trust_vector(capsys):
    assert main(["selftest", str(TRUST)]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


@pytest.fixture
def verifier():
    pytest.importorskip("cryptography", reason="signature checks need cryptography")
    from bloomcast_client.verify import Verifier

    def make(index, keys=None):
        v = vectors()
        made = Verifier(v["keys"][index]["public_key"])
        made.use_keys(keys if keys is not None else v["keys"])
        return made
    return make


@pytest.mark.parametrize("given", [0, 1, 2])
def test_from_any_key_all_three_are_trusted(verifier, given):
    assert verifier(given).trusted_keys() == vectors()["trusted_from_any"]


def test_the_forged_list_gets_its_hour_refused_naming_the_mirrors_key(verifier):
    v = vectors()
    forged = verifier(0, v["forged"])
    assert forged.trusted_keys() == [v["keys"][0]["id"]]
    name = v["forged_refused_hour"]
    with pytest.raises(VerificationError) as e:
        forged._key_for(hour_index(hour(name)), name, None)
    assert f"listed under key {v['forged'][1]['id']}, which is refused: no key you trust " \
        "vouched for it" in str(e.value)
    # The hours of the key given still verify under it.
    assert forged._key_for(hour_index(hour(v["keys"][0]["first_hour"])), "h", None) == \
        bytes.fromhex(v["keys"][0]["public_key"])


def test_a_vouch_for_another_first_hour_or_by_another_key_is_not_followed(verifier):
    v = vectors()
    moved = copy.deepcopy(v["keys"])
    moved[1]["vouch"] = moved[2]["vouch"]  # key 2's vouch for key 3, not key 1's for 2
    assert verifier(0, moved).trusted_keys() == [v["keys"][0]["id"]]
    no_ack = copy.deepcopy(v["keys"])
    no_ack[2]["ack"] = None
    assert verifier(2, no_ack).trusted_keys() == [v["keys"][2]["id"]]
    assert verifier(0, no_ack).trusted_keys() == v["trusted_from_any"], \
        "vouches forward do not need acknowledgements"


def test_the_trust_walk_needs_no_package_beyond_a_signature_check():
    v = vectors()
    keys = parse_keys(v["keys"])
    assert trusted_run(keys, keys[1].public, lambda *_: True) == (0, 2)
    assert trusted_run(keys, keys[1].public, lambda *_: False) == (1, 1)
    with pytest.raises(VerificationError, match="does not list the key you trust"):
        trusted_run(parse_keys(v["forged"]), keys[2].public, lambda *_: True)


def test_the_checkpoint_verifies_only_as_made(verifier):
    c = vectors()["checkpoint"]
    checked = verifier(0).check_checkpoint(c)
    assert checked[0] == hour(c["hour"]) and checked[1] == c["made"]
    for field, value in (("made", c["made"] + 60), ("hour", "2025-12-20T15:00:00Z"),
                         ("header", "00" * 32)):
        with pytest.raises(VerificationError, match="checkpoint"):
            verifier(0).check_checkpoint({**c, field: value})


def test_the_open_version_verifies_only_as_made_and_while_fresh(verifier):
    o = vectors()["open"]
    when, data = hour(o["hour"]), bytes.fromhex(o["filter_hex"])
    assert verifier(0).check_open(when, data, o["header_value"], o["made"] + 600, 600) == \
        o["made"]
    with pytest.raises(VerificationError, match="made 601 s ago .* freshness bound of 600"):
        verifier(0).check_open(when, data, o["header_value"], o["made"] + 601, 600)
    with pytest.raises(VerificationError, match="does not verify"):
        verifier(0).check_open(when, b"\0\0\0", o["header_value"], o["made"], 600)
    replayed = o["header_value"].replace(f"made={o['made']}", f"made={o['made'] + 3600}")
    with pytest.raises(VerificationError, match="does not verify"):
        verifier(0).check_open(when, data, replayed, o["made"] + 3600, 600)
