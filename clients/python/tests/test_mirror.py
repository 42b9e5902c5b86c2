"""A static mirror in the format of PROTOCOL.md section 13, made by hand (handmade.py),
read by `check` and `verify` offline (file:///DIR, --dir) and over HTTP (a plain file
server): an honest one verifies, every file and sidecar; each doctored one is refused
naming what failed, or, when it merely lacks something signed, reported and never
passed. Needs `cryptography` (skipped, saying so, without it)."""

import json
import pathlib
import shutil

import pytest

from bloomcast_client import hour_path
from bloomcast_client.cli import main
from conftest import at_hour

pytest.importorskip("cryptography", reason="signatures need the cryptography package "
                    "(extra verify)")

import handmade  # noqa: E402  (needs cryptography)
from handmade import HOURS, K  # noqa: E402
from hostile import StaticFiles  # noqa: E402

MIDDLE = HOURS[1]


@pytest.fixture
def clock(monkeypatch):
    """The client's clock at half past CLOCK; returns a function moving it."""
    def at(hour=handmade.CLOCK, minutes=30):
        at_hour(monkeypatch, hour, minutes)
        from bloomcast_client import coverage
        return coverage.clock()
    at()
    return at


@pytest.fixture
def mirror(tmp_path, clock):
    return handmade.make(tmp_path / "mirror", made=clock() - 60)


def stem(root, name, suffix=""):
    path = pathlib.Path(root, hour_path(name).lstrip("/"))
    return path.with_name(path.name + suffix)


def run(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def check(capsys, source, *extra, ids=None):
    return run(capsys, "check", "--server", source, "--since", HOURS[0], "--pubkey", K,
               *extra, *(ids or handmade.ids_of(1)))


def verify(capsys, root, *extra):
    return run(capsys, "verify", "--pubkey", K, "--since", HOURS[0], "--dir", str(root),
               *extra)


# --- honest -------------------------------------------------------------------------------

def test_an_honest_mirror_verifies_every_file_offline(mirror, capsys):
    code, out, err = verify(capsys, mirror)
    assert code == 0, err
    assert out.splitlines() == [f"ok {h}" for h in HOURS] + ["verified 3 hours"]
    assert err == ""


def test_an_honest_mirror_answers_check_offline_and_over_http(mirror, capsys):
    served = StaticFiles(mirror)
    try:
        for source in ("file://" + str(mirror), served.base):
            code, out, err = check(capsys, source, "--json")
            assert code == 0, err
            doc = json.loads(out)
            assert doc["changed"] == handmade.ids_of(1)
            assert (doc["from"], doc["to"]) == (HOURS[0], HOURS[-1])
            assert doc["unverified"] == [] and doc["stale"] == []
    finally:
        served.close()


def test_signed_ribbons_are_read_and_verified_when_cheapest(mirror, capsys):
    code, out, err = check(capsys, "file://" + str(mirror), "--json", "--fetch-cost",
                           "100000000")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ribbons"] > 0 and doc["changed"] == handmade.ids_of(1)


def test_a_rotation_with_a_signed_succession_verifies_from_either_key(tmp_path, clock,
                                                                     capsys):
    seeds = handmade.SEEDS
    root = handmade.make(tmp_path / "rotated", clock() - 60, [seeds[1], seeds[2], seeds[2]])
    for given in (K, handmade.public(seeds[2]).hex()):
        code, out, err = run(capsys, "verify", "--pubkey", given, "--since", HOURS[0],
                             "--dir", str(root))
        assert code == 0, err
        code, _, err = run(capsys, "check", "--server", "file://" + str(root), "--since",
                           HOURS[0], "--pubkey", given, "x")
        assert code == 0, err


# --- refused ------------------------------------------------------------------------------

def test_a_forged_key_list_is_refused_naming_the_mirrors_key(mirror, capsys):
    forger = handmade.forge_list(mirror)
    served = StaticFiles(mirror)
    try:
        for source in ("file://" + str(mirror), served.base):
            code, _, err = check(capsys, source)
            assert code == 1
            assert f"hour {MIDDLE}: it is listed under key {forger}, which is refused: no " \
                "key you trust vouched for it" in err, err
            code, _, err = run(capsys, "verify", "--pubkey", K, "--since", HOURS[0],
                               "--url", source)
            assert code == 1 and forger in err and MIDDLE in err, err
    finally:
        served.close()


def test_a_list_that_does_not_name_the_key_given_is_refused(mirror, capsys):
    other = handmade.public(handmade.FORGER_SEED).hex()
    code, _, err = run(capsys, "verify", "--pubkey", other, "--since", HOURS[0], "--dir",
                       str(mirror))
    assert code == 1 and "does not list the key you trust" in err, err


@pytest.mark.parametrize("suffix", [".ribbon", ".ribbon.json", ".ribbon2"])
def test_a_forged_derived_form_with_its_sidecar_is_refused(mirror, capsys, suffix):
    # The first hour's body (a valid one, of no ID) in place of the middle hour's.
    shutil.copy(stem(mirror, HOURS[0], suffix), stem(mirror, MIDDLE, suffix))
    code, _, err = verify(capsys, mirror)
    assert code == 1 and f"hour {MIDDLE}:" in err and "signature does not verify" in err, err
    if suffix == ".ribbon.json":
        return  # check reads the binary forms
    if suffix == ".ribbon":  # read where the index lists version 1 only
        index = json.loads((mirror / "index.json").read_text())
        (mirror / "index.json").write_text(json.dumps({**index, "ribbon_versions": [1]}))
    code, _, err = check(capsys, "file://" + str(mirror), "--fetch-cost", "100000000")
    assert code == 1 and f"hour {MIDDLE}:" in err and "signature does not verify" in err, err


def test_a_derived_form_without_its_sidecar_is_reported_never_passed(mirror, capsys):
    stem(mirror, MIDDLE, ".ribbon2.sig").unlink()
    code, out, err = verify(capsys, mirror)
    assert code == 1
    assert f"unverified: {MIDDLE}: {hour_path(MIDDLE)}.ribbon2 has no signature" in err
    assert "1 files could not be verified" in err
    # check reads the hour's v1 filter instead: verified, and the answer is whole.
    code, out, err = check(capsys, "file://" + str(mirror), "--fetch-cost", "100000000",
                           "--json")
    assert code == 0, err
    assert json.loads(out)["changed"] == handmade.ids_of(1)


@pytest.mark.parametrize("suffix", ["", ".json", ".hex", ".bin", ".json.gz"])
def test_zeroed_v1_files_are_refused_naming_the_file(mirror, capsys, suffix):
    import gzip
    path = stem(mirror, MIDDLE, suffix)
    if suffix in ("", ".json", ".json.gz"):
        doc = json.loads(gzip.decompress(path.read_bytes()) if suffix.endswith(".gz")
                         else path.read_text())
        doc["filter"] = "00" * (len(doc["filter"]) // 2)
        doc["count"], doc["digest"] = 0, None
        body = json.dumps({k: v for k, v in doc.items() if v is not None}).encode()
        path.write_bytes(gzip.compress(body) if suffix.endswith(".gz") else body)
    elif suffix == ".hex":
        path.write_text("00" * (len(path.read_text()) // 2))
    else:
        path.write_bytes(bytes(len(path.read_bytes())))
    code, _, err = verify(capsys, mirror)
    assert code == 1 and f"hour {MIDDLE}: " in err and "digest is not the chain's" in err
    if suffix:  # the plain path is also the one the chain's hours are read at
        assert f"{hour_path(MIDDLE)}{suffix}: its filter's digest" in err, err


def test_a_lowered_count_is_refused(mirror, capsys):
    path = stem(mirror, MIDDLE, ".json")
    doc = json.loads(path.read_text())
    doc["count"] = 0
    path.write_text(json.dumps(doc))
    code, _, err = verify(capsys, mirror)
    assert code == 1 and "count is 0, but the filter has" in err, err


def test_a_raised_count_is_refused_against_the_signed_ribbon(mirror, capsys):
    path = stem(mirror, MIDDLE)
    doc = json.loads(path.read_text())
    doc["count"] = 100005
    path.write_text(json.dumps(doc))
    code, _, err = verify(capsys, mirror)
    assert code == 1 and "says count 100005, but the signed" in err and "holds 3 IDs" in err


# --- coverage -----------------------------------------------------------------------------

def test_a_stale_mirror_exits_3_naming_its_newest_hour(mirror, capsys, clock):
    clock("2025-12-20T19")  # three hours past what the mirror offers next
    code, out, err = check(capsys, "file://" + str(mirror), "--json")
    assert code == 3
    doc = json.loads(out)
    assert doc["changed"] == handmade.ids_of(1) and doc["to"] == HOURS[-1]
    assert f"the newest hour it offers is {HOURS[-1]} (mirrored)" in err
    assert "checkpoint it serves was made 181 minutes ago" in err, "as old"
    assert doc["stale"] and len(doc["stale"]) == 2
    code, _, err = check(capsys, "file://" + str(mirror), "--accept-stale")
    assert code == 0 and "(accepted: --accept-stale)" in err
    code, _, err = verify(capsys, mirror)
    assert code == 3 and "is stale" in err


def test_a_mirror_withholding_its_newest_hour_exits_3(mirror, capsys):
    index = json.loads((mirror / "index.json").read_text())
    index["hours"] = index["hours"][1:]
    index["current"] = index["hours"][0]
    (mirror / "index.json").write_text(json.dumps(index))
    code, _, err = check(capsys, "file://" + str(mirror))
    assert code == 3
    assert f"withholds hours: the publisher's signed checkpoint names {HOURS[-1]} sealed, " \
        f"but it offers sealed hours only through {MIDDLE}" in err, err


def test_a_mirror_without_a_checkpoint_is_not_shown_current(mirror, capsys):
    (mirror / "checkpoint.json").unlink()
    code, _, err = check(capsys, "file://" + str(mirror))
    assert code == 3 and "serves no signed checkpoint" in err, err
    assert check(capsys, "file://" + str(mirror), "--accept-stale")[0] == 0


def test_a_tampered_checkpoint_is_refused(mirror, capsys):
    path = mirror / "checkpoint.json"
    doc = json.loads(path.read_text())
    doc["made"] += 3600
    path.write_text(json.dumps(doc))
    code, _, err = check(capsys, "file://" + str(mirror))
    assert code == 1 and "the checkpoint's signature does not verify" in err, err


def test_without_a_key_only_the_lag_is_judged(mirror, capsys, clock):
    code, _, err = run(capsys, "check", "--server", "file://" + str(mirror), "--since",
                       HOURS[0], "x")
    assert code == 0 and "read 2025-12-20T13:00:00Z through 2025-12-20T15:00:00Z" in err
    clock("2025-12-20T19")
    code, _, err = run(capsys, "check", "--server", "file://" + str(mirror), "--since",
                       HOURS[0], "x")
    assert code == 3 and "is stale" in err
