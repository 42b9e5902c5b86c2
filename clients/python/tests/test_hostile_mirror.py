"""Issue 53, cases 3 and 4 on a real mirror (`bloomcast mirror` of a real server),
doctored and served by a plain file server, nginx (deploy/nginx-mirror.conf) or read as
a directory: the forged key list (the key given retired, a mirror's own key after it)
with an hour zeroed and signed by that key is refused naming the key; a mirror
withholding its newest hour behind the publisher's checkpoint, or stale, exits 3. The
honest mirror verifies; where today's `bloomcast mirror` writes no `.sig` sidecars or
checkpoint.json, what they would verify is reported, never passed."""

import json
import os
import shutil

import pytest

from bloomcast_client import coverage, hour_path
from bloomcast_client.cli import main
from hostile import Nginx, StaticFiles, get

PROBES = ["h0:7", "h1:7", "h2:7", "never:1", "never:2"]


def flagged(out, changed):
    """Whether `check` printed every changed ID, and otherwise only probes: an ID never
    published may be a false positive of the form read (its hours move with the clock)."""
    lines = out.split()
    return set(changed) <= set(lines) and set(lines) <= set(PROBES) \
        and len(lines) == len(set(lines))


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def check(capsys, source, origin, *extra):
    return run(capsys, "check", "--server", source, "--since", origin.hours[0], "--pubkey",
               origin.pubkey, *extra, *PROBES)


def verify(capsys, source, origin, *extra):
    return run(capsys, "verify", "--pubkey", origin.pubkey, "--since", origin.hours[0],
               "--url", source, *extra)


def needs_nginx():
    if not shutil.which("nginx") and not os.path.exists("/usr/sbin/nginx"):
        pytest.skip("no nginx: apt-get install nginx")


@pytest.fixture(scope="module")
def nginx(origin_mirror, tmp_path_factory):
    """nginx serving the honest mirror."""
    needs_nginx()
    served = Nginx(origin_mirror, tmp_path_factory.mktemp("nginx"))
    yield served
    served.close()


def expect_honest(code, out, err, mirror, sealed_hours):
    """An honest mirror's check: exit 0 with a checkpoint.json; without one (today's
    `bloomcast mirror`), exit 3 saying so: never taken as shown current."""
    if (mirror / "checkpoint.json").exists():
        assert code == 0, err
    else:
        assert code == 3 and "serves no signed checkpoint" in err, err
    assert flagged(out, ["h0:7", "h1:7", "h2:7"]), out


def test_the_honest_mirror_answers_from_a_directory_over_http_and_by_nginx(
        origin, origin_mirror, nginx, capsys):
    served = StaticFiles(origin_mirror)
    try:
        for source in (f"file://{origin_mirror}", served.base, nginx.base):
            code, out, err = check(capsys, source, origin)
            expect_honest(code, out, err, origin_mirror, 3)
    finally:
        served.close()


def test_the_honest_mirror_verifies_by_nginx_reporting_what_lacks_a_signature(
        origin, origin_mirror, nginx, capsys):
    code, out, err = verify(capsys, nginx.base, origin, "--accept-stale")
    assert out.splitlines() == [f"ok {h}" for h in origin.hours[:3]] + ["verified 3 hours"]
    if list(origin_mirror.rglob("*.sig")):
        assert code == 0, err
    else:
        assert code == 1 and "files could not be verified" in err, err


@pytest.fixture
def forged(origin, origin_mirror, tmp_path):
    """A copy of the mirror with the forged list (handmade.forge_list): the origin's key
    retired after its first hour, the second zeroed under a key of the mirror's own."""
    import handmade
    root = shutil.copytree(origin_mirror, tmp_path / "forged")
    forger = handmade.forge_list(root, origin.hours, origin.pubkey)
    return root, forger


def test_the_forged_list_is_refused_naming_the_mirrors_key(origin, forged, tmp_path, capsys):
    needs_nginx()
    root, forger = forged
    refusal = f"hour {origin.hours[1]}: it is listed under key {forger}, which is refused"
    served = StaticFiles(root)
    nginx = Nginx(root, tmp_path / "nginx")
    try:
        for source in (f"file://{root}", served.base, nginx.base):
            code, out, err = check(capsys, source, origin)
            assert code == 1 and refusal in err, err
            assert out == "", "no answer missing the 20 IDs of the zeroed hour"
            code, _, err = verify(capsys, source, origin)
            assert code == 1 and refusal in err, err
    finally:
        served.close()
        nginx.close()


def test_a_zeroed_hex_file_is_refused_naming_the_hour(origin, origin_mirror, tmp_path,
                                                    capsys):
    root = shutil.copytree(origin_mirror, tmp_path / "m")
    hex_file = root / (hour_path(origin.hours[1]).lstrip("/") + ".hex")
    hex_file.write_text("0" * len(hex_file.read_text().strip()))
    code, _, err = verify(capsys, f"file://{root}", origin, "--accept-stale")
    assert code == 1 and f"hour {origin.hours[1]}: {hour_path(origin.hours[1])}.hex: its " \
        "filter's digest is not the chain's" in err, err


def with_checkpoint(origin, root):
    """The mirror with the origin's checkpoint as the spec has it (checkpoint.json,
    urls.checkpoint), where `bloomcast mirror` does not write it yet."""
    if not (root / "checkpoint.json").exists():
        status, _, body = get(origin.base + "/checkpoint")
        assert status == 200, body
        (root / "checkpoint.json").write_bytes(body)
        index = json.loads((root / "index.json").read_text())
        index.setdefault("urls", {})["checkpoint"] = "/checkpoint.json"
        (root / "index.json").write_text(json.dumps(index))
    return root


def test_a_mirror_withholding_its_newest_hour_exits_3_naming_it(origin, origin_mirror,
                                                              tmp_path, capsys):
    root = with_checkpoint(origin, shutil.copytree(origin_mirror, tmp_path / "m"))
    index = json.loads((root / "index.json").read_text())
    index["hours"] = [h for h in index["hours"] if h["hour"] != origin.hours[2]]
    index["current"] = index["hours"][0]
    (root / "index.json").write_text(json.dumps(index))
    code, out, err = check(capsys, f"file://{root}", origin)
    assert code == 3 and flagged(out, ["h0:7", "h1:7"]), out
    assert f"withholds hours: the publisher's signed checkpoint names {origin.hours[2]} " \
        f"sealed, but it offers sealed hours only through {origin.hours[1]}" in err, err
    assert check(capsys, f"file://{root}", origin, "--accept-stale")[0] == 0


def test_a_stale_mirror_exits_3_naming_its_newest_hour(origin, origin_mirror, tmp_path,
                                                      capsys, monkeypatch):
    root = with_checkpoint(origin, shutil.copytree(origin_mirror, tmp_path / "m"))
    assert check(capsys, f"file://{root}", origin)[0] == 0
    later = coverage.clock() + 4 * 3600
    monkeypatch.setattr(coverage, "clock", lambda: later)
    code, out, err = check(capsys, f"file://{root}", origin)
    assert code == 3 and flagged(out, ["h0:7", "h1:7", "h2:7"]), out
    assert f"the newest hour it offers is {origin.hours[2]} (mirrored)" in err, err
    assert "the publisher's checkpoint it serves was made" in err
