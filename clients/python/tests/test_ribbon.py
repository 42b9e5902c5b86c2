"""The ribbon decoder (PROTOCOL.md section 12) against docs/ribbon-vectors.json, its
decoding rules, and the choice of the cheapest form of a closed hour."""

import json

import pytest

from bloomcast_client import Ribbon, RibbonError, cheapest_form, hourly_is_cheaper
from bloomcast_client.ribbon import bloom_choice, ribbon_bytes, selftest_ribbon, slot
from conftest import ROOT

VECTORS = ROOT / "docs" / "ribbon-vectors.json"


def test_every_ribbon_vector_holds():
    assert selftest_ribbon(VECTORS) == 22


def test_slots_match_the_vectors_including_the_largest_seed():
    vectors = json.loads(VECTORS.read_text(encoding="utf-8"))
    big = [v for v in vectors["slots"] if v["seed"] == str(2**64 - 1)]
    assert big
    for v in big:
        assert slot(v["h1"], v["h2"], int(v["seed"]), v["m"], v["r"]) == \
            (v["start"], int(v["coeff"], 16), v["fp"])


def test_members_answer_true_and_the_header_is_read():
    v = json.loads(VECTORS.read_text(encoding="utf-8"))["filters"][3]
    ribbon = Ribbon.from_bytes(bytes.fromhex(v["body"]))
    assert (ribbon.n, ribbon.r, ribbon.fpp) == (200, 10, 2.0 ** -10)
    assert all(ribbon.contains(i) for i in v["ids"])
    assert ribbon.m >= 200


def _body():
    v = json.loads(VECTORS.read_text(encoding="utf-8"))["filters"][1]
    return bytearray.fromhex(v["body"])


@pytest.mark.parametrize("offset,value,why", [
    (0, ord("X"), "magic"),
    (4, 2, "version 2"),
    (5, 0, "r = 0"),
    (6, 1, "reserved"),
    (12, 63, "m = 63"),
])
def test_broken_headers_are_refused(offset, value, why):
    body = _body()
    body[offset] = value
    with pytest.raises(RibbonError, match=why):
        Ribbon.from_bytes(body)


def test_a_wrong_length_and_set_padding_are_refused():
    with pytest.raises(RibbonError, match="expected"):
        Ribbon.from_bytes(_body()[:-1])
    with pytest.raises(RibbonError, match="shorter than the header"):
        Ribbon.from_bytes(b"BCR1")
    # r = 7 and m = 64 make 448 bits, 56 whole bytes: no padding. Take r = 5, m = 65.
    body = bytearray(b"BCR1\x01\x05\0\0" + (0).to_bytes(4, "little")
                     + (65).to_bytes(4, "little") + bytes(8) + bytes(41))
    assert Ribbon.from_bytes(body).m == 65
    body[-1] = 0x80
    with pytest.raises(RibbonError, match="padding"):
        Ribbon.from_bytes(body)


def test_the_cheapest_form_is_the_rust_sdks():
    # The same figures as src/client/choice.rs's tests.
    assert cheapest_form(280, 0.01, 45_754)[0] == ("ribbon", 23)
    assert cheapest_form(0, 0.01, 45_754)[0] == ("bloom", None)
    assert cheapest_form(3_000, 0.01, 45_754, 0)[0] == ("ribbon", 4)
    assert cheapest_form(5, 0.01, 1, 0)[0] == ("bloom", None)
    assert [cheapest_form(300, 0.01, f)[0][1] for f in (1, 100, 45_754, 10**7)] == \
        [7, 14, 23, 24]


def test_sizes_follow_the_protocols_formulas():
    assert ribbon_bytes(0, 7) == 24 + 56       # 64 rows at least
    assert ribbon_bytes(3_000, 7) == 2834       # m = 3211 (docs/BENCHMARKS.md)
    assert ribbon_bytes(30_000, 10) == 40357    # m = 32266
    size, fpp = bloom_choice(3_000, 0.01)
    assert abs(size - 3730) < 3730 / 30 and fpp <= 0.01


def test_many_ids_followed_read_precise_hours_rather_than_the_union():
    hours = [{"count": 280} for _ in range(23)] + [{"count": 0, "open": True}]
    assert hourly_is_cheaper(hours, 0.01, 3000, 45_754, 10240)
    # Read as v1 filters (a verifying client), 24 hours at 0.01 waste 24x the union's.
    assert not hourly_is_cheaper(hours, 0.01, 3000, 45_754, 10240, bloom_only=True)
    # One ID over many nearly empty hours: one union.
    small = [{"count": 5} for _ in range(47)] + [{"count": 5, "open": True}]
    assert not hourly_is_cheaper(small, 0.01, 3000, 1, 10240)


def test_selftest_takes_the_ribbon_vectors(capsys):
    from bloomcast_client.cli import main
    assert main(["selftest", str(VECTORS)]) == 0
    assert capsys.readouterr().out.strip() == "ok: 22 ribbon vectors"
