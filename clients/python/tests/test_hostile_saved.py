"""Issue 53, case 1: saved bodies verify offline. `inspect --pubkey` on a file a real
server served verifies what came with it (the headers saved with `curl -D`, a `.sig`
sidecar, or the mirror directory around it) and refuses, nonzero and naming what failed,
another service's key, a lowered count, flipped bits or an altered signature; with
nothing signed beside it, `--pubkey` is refused rather than answered "verified nothing".
`verify` takes a mirror directory (`--url file:///DIR`)."""

import json
import shutil

import pytest

from bloomcast_client import hour_path
from bloomcast_client.cli import main
from hostile import TamperingProxy, get

OTHER = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"  # RFC 8032 test 1


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def save(origin, path, dest):
    """The body at `path` and its headers (as `curl -D` writes them) into `dest`."""
    status, headers, body = get(origin.base + path, {"Accept-Encoding": "identity"})
    assert status == 200, body
    dest.write_bytes(body)
    head = dest.with_name(dest.name + ".headers")
    head.write_text("HTTP/1.1 200 OK\r\n" + "".join(f"{k}: {v}\r\n" for k, v in
                                                    headers.items()) + "\r\n")
    return dest, head


@pytest.fixture
def saved(origin, tmp_path):
    """The second sealed hour's JSON document and its headers."""
    return save(origin, hour_path(origin.hours[1]), tmp_path / "hour.json")


def test_a_saved_hour_without_what_signed_it_is_refused(origin, saved, capsys):
    code, out, err = run(capsys, "inspect", "--pubkey", origin.pubkey, saved[0])
    assert code == 1 and out == ""
    assert "--pubkey cannot verify it: nothing signed came with it; give --headers" in err


def test_a_saved_hour_verifies_by_its_headers(origin, saved, capsys):
    code, out, err = run(capsys, "inspect", "--pubkey", origin.pubkey, saved[0],
                         "--headers", saved[1], "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["count"] == 20 and doc["verified"].startswith(origin.hours[1] + " under key ")


def test_another_services_key_is_refused(origin, saved, capsys):
    code, _, err = run(capsys, "inspect", "--pubkey", OTHER, saved[0], "--headers", saved[1])
    assert code == 1 and f"hour {origin.hours[1]}: signed by key " in err, err


def test_a_lowered_count_is_refused_naming_it(origin, saved, capsys):
    doc = json.loads(saved[0].read_text())
    saved[0].write_text(json.dumps({**doc, "count": 1}))
    code, _, err = run(capsys, "inspect", "--pubkey", origin.pubkey, saved[0], "--headers",
                       saved[1])
    assert code == 1 and "count is 1, but the filter has" in err and "count was altered" in err


@pytest.mark.parametrize("with_digest", [False, True])
def test_flipped_bits_are_refused_naming_the_hour(origin, saved, capsys, with_digest):
    import hashlib
    doc = json.loads(saved[0].read_text())
    data = bytearray.fromhex(doc["filter"])
    data[3] ^= 0x10
    doc["filter"] = data.hex()
    if with_digest:  # its digest made again, as a forger would
        doc["digest"] = hashlib.sha256(bytes(data)).hexdigest()
    saved[0].write_text(json.dumps(doc))
    code, _, err = run(capsys, "inspect", "--pubkey", origin.pubkey, saved[0], "--headers",
                       saved[1])
    assert code == 1 and f"hour {origin.hours[1]}: " in err, err
    assert ("signature does not verify" if with_digest else "the document says") in err


def test_an_altered_signature_is_refused(origin, saved, capsys):
    head = saved[1].read_text()
    start = head.lower().index("bloom-signature: ") + len("bloom-signature: ")
    flipped = "0" if head[start] != "0" else "1"
    saved[1].write_text(head[:start] + flipped + head[start + 1:])
    code, _, err = run(capsys, "inspect", "--pubkey", origin.pubkey, saved[0], "--headers",
                       saved[1])
    assert code == 1 and "signature does not verify" in err, err


def test_a_raw_body_verifies_with_its_headers(origin, tmp_path, capsys):
    body, head = save(origin, hour_path(origin.hours[0]) + ".bin", tmp_path / "hour.bin")
    code, out, err = run(capsys, "inspect", "--pubkey", origin.pubkey, body, "--headers", head)
    assert code == 0 and "verified" in out, err


def test_the_open_hours_saved_version_verifies_and_refuses_flipped_bits(origin, tmp_path,
                                                                       capsys):
    body, head = save(origin, hour_path(origin.hours[-1]), tmp_path / "open.json")
    code, out, err = run(capsys, "inspect", "--pubkey", origin.pubkey, body, "--headers", head)
    assert code == 0 and f"{origin.hours[-1]} (open, made=" in out, err
    doc = json.loads(body.read_text())
    doc["filter"], doc["digest"] = "00" * (len(doc["filter"]) // 2), None
    body.write_text(json.dumps({k: v for k, v in doc.items() if v is not None}))
    code, _, err = run(capsys, "inspect", "--pubkey", origin.pubkey, body, "--headers", head)
    assert code == 1 and f"hour {origin.hours[-1]} (open): the signature" in err, err


def test_a_mirrored_file_verifies_by_the_mirror_around_it(origin, origin_mirror, tmp_path,
                                                          capsys):
    root = shutil.copytree(origin_mirror, tmp_path / "m")
    stem = root / hour_path(origin.hours[1]).lstrip("/")
    code, out, err = run(capsys, "inspect", "--pubkey", origin.pubkey,
                         stem.with_name(stem.name + ".json"))
    assert code == 0 and "verified" in out, err
    ribbon = stem.with_name(stem.name + ".ribbon2")
    code, out, err = run(capsys, "inspect", "--pubkey", origin.pubkey, ribbon)
    if ribbon.with_name(ribbon.name + ".sig").exists():
        assert code == 0, err
    else:  # today's mirror format: no sidecar, so nothing signed is there
        assert code == 1 and "nothing signed came with it" in err, err
    # The sidecar the spec gives it: the response's Bloom-Signature.
    _, headers, _ = get(origin.base + hour_path(origin.hours[1]) + ".ribbon2")
    ribbon.with_name(ribbon.name + ".sig").write_text(headers["Bloom-Signature"] + "\n")
    code, out, err = run(capsys, "inspect", "--pubkey", origin.pubkey, ribbon, "--json")
    assert code == 0 and json.loads(out)["count"] == 20, err
    other = root / hour_path(origin.hours[0]).lstrip("/")
    shutil.copy(other.with_name(other.name + ".ribbon2"), ribbon)
    code, _, err = run(capsys, "inspect", "--pubkey", origin.pubkey, ribbon)
    assert code == 1 and "version 2 ribbon's signature does not verify" in err, err


def test_a_ribbon_url_verifies_and_one_swapped_by_a_proxy_is_refused(origin, capsys):
    path = hour_path(origin.hours[1]) + ".ribbon2"
    code, out, err = run(capsys, "inspect", "--pubkey", origin.pubkey, origin.base + path)
    assert code == 0 and f"verified        {hour_path(origin.hours[1])}" in out, err

    def swap(p, status, headers, body):
        if p == path:
            return status, headers, get(origin.base + hour_path(origin.hours[0]) +
                                        ".ribbon2")[2]
        return status, headers, body
    proxy = TamperingProxy(origin.base, swap)
    try:
        code, _, err = run(capsys, "inspect", "--pubkey", origin.pubkey, proxy.base + path)
    finally:
        proxy.close()
    assert code == 1 and f"hour {origin.hours[1]}: the version 2 ribbon's signature does " \
        "not verify" in err, err


def test_verify_takes_a_mirror_directory(origin, origin_mirror, capsys):
    code, out, err = run(capsys, "verify", "--pubkey", origin.pubkey, "--since",
                         origin.hours[0], "--url", f"file://{origin_mirror}",
                         "--accept-stale")
    assert out.splitlines()[:3] == [f"ok {h}" for h in origin.hours[:3]], err
    sidecars = list(origin_mirror.rglob("*.sig"))
    if sidecars:
        assert code == 0, err
    else:  # today's mirror format: its ribbons are reported, never passed
        assert code == 1 and "files could not be verified" in err
        assert all("has no signature" in line for line in err.splitlines()
                   if "unverified:" in line)


def test_a_union_or_an_unsigned_open_hour_is_refused_under_a_key(origin, capsys):
    since = origin.base + "/since" + hour_path(origin.hours[0])
    code, _, err = run(capsys, "inspect", "--pubkey", origin.pubkey, since)
    assert code == 1 and "unions (days, since) are not signed" in err, err

    def strip(path, status, headers, body):
        headers.pop("bloom-open-signature", None)
        return status, headers, body
    proxy = TamperingProxy(origin.base, strip)
    try:
        code, _, err = run(capsys, "inspect", "--pubkey", origin.pubkey,
                           proxy.base + hour_path(origin.hours[-1]))
    finally:
        proxy.close()
    assert code == 1 and f"hour {origin.hours[-1]} (open): no Bloom-Open-Signature" in err
