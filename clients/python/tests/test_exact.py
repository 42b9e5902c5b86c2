"""The exact-hour decoder (PROTOCOL.md section 14) against docs/exact-vectors.json, and
its decoding rules."""

import json

import pytest

from bloomcast_client import Exact, ExactError, key
from bloomcast_client.cli import main
from bloomcast_client.exact import row, salt, selector, selftest_exact
from conftest import ROOT

VECTORS = ROOT / "docs" / "exact-vectors.json"


def vectors():
    return json.loads(VECTORS.read_text(encoding="utf-8"))


def test_every_row_vector_holds():
    rows = vectors()["rows"]
    assert rows
    for v in rows:
        assert key(v["id"]) == (v["h1"], v["h2"]), v["id"]
        assert salt(v["tag"], v["seed"]) == int(v["salt"], 16), v
        assert selector(v["h1"], v["h2"]) == v["selector"], v
        assert row(v["h1"], v["h2"], v["tag"], v["seed"], v["m"]) == \
            (v["start"], int(v["coeff"], 16), int(v["fingerprint"], 16)), v


@pytest.mark.parametrize("index", range(len(vectors()["bodies"])))
def test_every_universe_id_answers_exactly(index):
    v = vectors()["bodies"][index]
    exact = Exact.from_bytes(bytes.fromhex(v["body"]))
    assert (exact.k, exact.split, exact.universe, exact.changed_count) == \
        (v["k"], v["split"], v["universe"], len(v["changed"]))
    assert (list(exact.rows), list(exact.seeds)) == (v["rows"], v["seeds"])
    assert exact.complemented is v["complemented"] is (bytes.fromhex(v["body"])[4] == 2)
    changed = set(v["changed"])
    wrong = [f"u:{i}" for i in range(v["universe"])
             if exact.changed(f"u:{i}") != (f"u:{i}" in changed)]
    assert wrong == []


def test_the_selftest_checks_every_vector(capsys):
    n = len(vectors()["rows"]) + len(vectors()["bodies"])
    assert selftest_exact(VECTORS) == n
    assert main(["selftest", str(VECTORS)]) == 0
    assert capsys.readouterr().out == f"ok: {n} exact vectors\n"


def _vector(universe=300, complemented=False):
    return next(b for b in vectors()["bodies"]
                if b["universe"] == universe and b["complemented"] is complemented)


def _body(universe=300, complemented=False):
    return bytearray.fromhex(_vector(universe, complemented)["body"])


def _put(body, offset, value):
    body[offset] = value
    return body


# The body over 300 IDs: header BCX1, version 1, k 3, split 200, then the varints N 300
# (ac 02, offsets 7-8), r 12 (9), mA 8 (10), mB 4 (11), mR 27 (12), sA 7, sB 36, sR 0
# (13-15): 16 bytes, then T = 4*8 + 3*4 + 27 = 71 solution bits in 9 bytes.
@pytest.mark.parametrize("offset,value,why", [
    (0, ord("X"), 'magic is .* not "BCX1"'),
    (4, 0, r"version 0 \(this client knows 1 and 2\)"),
    (4, 3, r"version 3 \(this client knows 1 and 2\)"),
    (5, 32, "k = 32 exceeds 31"),
    (10, 9, r"length 25 bytes, expected 26 \(16-byte header\) for T = 75"),
])
def test_broken_headers_are_refused(offset, value, why):
    with pytest.raises(ExactError, match=why):
        Exact.from_bytes(_put(_body(), offset, value))


def test_the_header_is_read_from_its_varints():
    body = _body()
    assert body[:16].hex() == "424358310103c8ac020c08041b072400"
    exact = Exact.from_bytes(body)
    assert (exact.universe, exact.changed_count, exact.rows, exact.seeds, exact.split) == \
        (300, 12, (8, 4, 27), (7, 36, 0), 200)


@pytest.mark.parametrize("varint,why", [
    ("8c00", "varint r is not minimally encoded"),
    ("8080808010", "varint r = 4294967296 is not below 2\\^32"),
    ("ffffffff1f", "varint r = 8589934591 is not below 2\\^32"),
    ("808080808001", "varint r is longer than 5 bytes"),
])
def test_varints_that_are_not_minimal_or_too_large_are_refused(varint, why):
    body = _body()
    body[9:10] = bytes.fromhex(varint)  # r, 12 as one byte
    with pytest.raises(ExactError, match=why):
        Exact.from_bytes(body)
    # The same value minimally encoded, where it fits, decodes (the length then differs).
    if varint == "8c00":
        body[9:11] = b"\x0c"
        assert Exact.from_bytes(body).changed_count == 12


def test_rows_of_part_b_without_fingerprint_bits_are_refused():
    body = _body(2000)  # k = 0: N d0 0f, r e8 07, mA 00, mB 00 (offset 12), mR ef 0f
    with pytest.raises(ExactError, match=r"mB = 1 rows with k = 0"):
        Exact.from_bytes(_put(body, 12, 1))


def test_a_wrong_length_and_set_padding_are_refused():
    with pytest.raises(ExactError, match=r"shorter than the smallest header \(15 bytes\)"):
        Exact.from_bytes(b"BCX1\x01")
    with pytest.raises(ExactError, match="the header ends inside varint sR"):
        Exact.from_bytes(b"BCX1\x01\x00\x00" + bytes(7) + b"\x80")
    with pytest.raises(ExactError, match="expected 25"):
        Exact.from_bytes(_body()[:-1])
    with pytest.raises(ExactError, match="expected 25"):
        Exact.from_bytes(_body() + b"\0")
    # T = 71 bits: the last byte's bit 7 is padding.
    body = _body()
    body[-1] |= 0x80
    with pytest.raises(ExactError, match="padding bits past T = 71 are set"):
        Exact.from_bytes(body)


def test_an_empty_universe_answers_false():
    exact = Exact.from_bytes(_body(0))
    assert len(_body(0)) == 15  # the smallest header, no solution
    assert exact.rows == (0, 0, 0) and not exact.changed("u:0")


# --- version 2: complemented bodies ---------------------------------------------------

def test_the_vectors_hold_complemented_bodies_where_most_of_the_universe_changed():
    bodies = vectors()["bodies"]
    complemented = [v for v in bodies if v["complemented"]]
    assert {(v["universe"], len(v["changed"])) for v in complemented} >= \
        {(20, 17), (400, 332), (3000, 3000)}
    # A server complements exactly where more than half changed.
    for v in bodies:
        assert v["complemented"] is (2 * len(v["changed"]) > v["universe"]), v["universe"]


def test_a_complemented_body_decodes_and_answers_exactly():
    v = _vector(400, complemented=True)
    exact = Exact.from_bytes(bytes.fromhex(v["body"]))
    # r is the IDs that changed, not the (fewer) unchanged ones its levels hold.
    assert (exact.complemented, exact.universe, exact.changed_count) == (True, 400, 332)
    changed = set(v["changed"])
    assert [i for i in range(400) if exact.changed(f"u:{i}") != (f"u:{i}" in changed)] == []
    # Every ID changed: the levels hold nothing, the body is its header, and every ID of
    # the universe answers changed.
    every = Exact.from_bytes(_body(3000, complemented=True))
    assert every.complemented and every.rows == (0, 0, 0)
    assert all(every.changed(f"u:{i}") for i in range(3000))


@pytest.mark.parametrize("universe", sorted({v["universe"] for v in vectors()["bodies"]
                                             if not v["complemented"]}))
def test_version_two_negates_every_answer_of_a_version_one_body(universe):
    # Byte 4 alone says whether the levels' answers are negated: the rest of the body,
    # its header included, reads the same.
    plain = Exact.from_bytes(_body(universe))
    flipped = Exact.from_bytes(_put(_body(universe), 4, 2))
    assert (plain.complemented, flipped.complemented) == (False, True)
    assert (flipped.k, flipped.split, flipped.universe, flipped.changed_count,
            flipped.rows, flipped.seeds) == \
        (plain.k, plain.split, plain.universe, plain.changed_count, plain.rows, plain.seeds)
    ids = [f"u:{i}" for i in range(universe)] + [f"nobody:{i}" for i in range(50)]
    assert [i for i in ids if flipped.changed(i) == plain.changed(i)] == []
    h1, h2 = key("u:0")
    assert flipped.changed_key(h1, h2) is not plain.changed_key(h1, h2)


def test_the_selftest_refuses_a_vector_whose_complemented_field_disagrees(tmp_path):
    doc = vectors()
    doc["bodies"] = [dict(_vector(400, complemented=True), complemented=False)]
    path = tmp_path / "exact-vectors.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ExactError, match="over 400 IDs is version 2 but the vector says "
                                         "complemented false"):
        selftest_exact(path)


def test_inspect_prints_whether_a_saved_body_is_complemented(tmp_path, capsys):
    for complemented in (False, True):
        saved = tmp_path / f"{complemented}.exact"
        saved.write_bytes(_body(20, complemented))
        assert main(["inspect", "--json", str(saved)]) == 0
        fields = json.loads(capsys.readouterr().out)
        assert (fields["universe"], fields["changed"], fields["complemented"]) == \
            (20, 17 if complemented else 3, complemented)
