"""`bloomcast-py watch`: each ID once per hour, the first time a version of the hour may
hold it, polled as `.bin` (deltas with zstandard), as the Rust verb; it runs until
interrupted, so the tests end it through the hook it sleeps with (`cli_reading.sleep`)
or drive the Watcher one poll at a time."""

import datetime
import hashlib
import json

import pytest

import bloomcast_client
from bloomcast_client import Client, VerificationError, cli_reading, parse_hour
from bloomcast_client.cli import main
from bloomcast_client.watch import Watcher, version_of
from conftest import ROOT, hour_filter, stop_after

OPEN = "/2026/11/23/10"
needs_zstd = pytest.mark.skipif(bloomcast_client.zstandard is None,
                                reason="zstandard is not installed (extra `dcz`)")


def version(ids):
    return hashlib.sha256(bytes(hour_filter(ids).data)).hexdigest()[:20]


def test_each_id_is_reported_once_per_hour_then_the_next_hour_is_followed(fake_server):
    server = fake_server(hours={OPEN: (["a"], False)})
    watcher = Watcher(Client(server.base), ["a", "b"], parse_hour("2026-11-23T10"))
    first = watcher.poll()
    again = watcher.poll()  # 304: the same version
    server.hours[OPEN] = (["a", "b"], False)
    grown = watcher.poll()
    server.hours[OPEN] = (["a", "b"], True)  # sealed: read once more, then move on
    sealed = watcher.poll()
    assert [(e["event"], e.get("id")) for e in first] == [("version", None), ("changed", "a")]
    assert again == []
    assert [(e["event"], e.get("id")) for e in grown] == [("version", None), ("changed", "b")]
    assert [e["event"] for e in sealed] == ["version"]  # its final version, nothing new
    assert watcher.hour == parse_hour("2026-11-23T11")
    assert [p for p in server.paths if p != "/"] == [OPEN + ".bin"] * 4


def test_watch_prints_each_id_the_first_time_until_interrupted(fake_server, monkeypatch,
                                                               capsys):
    server = fake_server(hours={OPEN: (["a"], False)})

    def publish(n):
        server.hours[OPEN] = (["a", "b", "c"], False)
    sleep, calls = stop_after(3, publish)
    monkeypatch.setattr(cli_reading, "sleep", sleep)
    assert main(["watch", "--server", server.base, "--every", "7", "a", "b", "zzz"]) == 0
    assert capsys.readouterr().out == "a\nb\n"
    assert calls == [7, 7, 7]


def test_json_prints_every_event_as_the_rust_verb(fake_server, monkeypatch, capsys):
    monkeypatch.setattr(bloomcast_client, "zstandard", None)  # whole bodies: known sizes
    server = fake_server(hours={OPEN: (["a"], False)})
    monkeypatch.setattr(cli_reading, "sleep", stop_after(1)[0])
    assert main(["watch", "--server", server.base, "--json", "a", "b"]) == 0
    v = version(["a"])
    assert capsys.readouterr().out.splitlines() == [
        '{"bytes":120,"count":1,"delta":false,"event":"version",'
        f'"hour":"2026-11-23T10:00:00Z","version":"{v}"}}',
        '{"bytes":120,"event":"changed","hour":"2026-11-23T10:00:00Z","id":"a",'
        f'"version":"{v}"}}']


@needs_zstd
def test_polls_travel_as_deltas_when_zstandard_is_installed(fake_server, monkeypatch,
                                                            capsys):
    server = fake_server(hours={OPEN: (["a"], False)})

    def publish(n):
        server.hours[OPEN] = (["a", "b"], False)
    monkeypatch.setattr(cli_reading, "sleep", stop_after(2, publish)[0])
    assert main(["watch", "--server", server.base, "--json", "b"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(e["event"], e.get("delta")) for e in events] == [
        ("version", False), ("version", True), ("changed", None)]
    assert events[1]["version"] == version(["a", "b"])  # the -dcz suffix removed
    assert events[1]["bytes"] < 120
    assert server.headers[-1]["Accept-Encoding"] == "dcz, gzip"


def test_ids_come_from_arguments_and_a_file(fake_server, tmp_path, monkeypatch, capsys):
    server = fake_server(hours={OPEN: (["a", "from file"], False)})
    ids = tmp_path / "ids.txt"
    ids.write_bytes(b"from file\r\n\n  \nnot there\n")
    monkeypatch.setattr(cli_reading, "sleep", stop_after(1)[0])
    assert main(["watch", "--server", server.base, "--file", str(ids), "a"]) == 0
    assert capsys.readouterr().out == "a\nfrom file\n"


def test_no_ids_and_a_missing_file_fail_with_the_rust_verbs_words(capsys):
    assert main(["watch", "--server", "127.0.0.1:1"]) == 1
    assert capsys.readouterr().err == (
        "bloomcast-py: no IDs: pass them as arguments, - to read stdin, or --file\n")
    assert main(["watch", "--server", "127.0.0.1:1", "--file", "missing.txt"]) == 1
    assert capsys.readouterr().err == (
        "bloomcast-py: cannot open missing.txt: No such file or directory (os error 2)\n")


@pytest.mark.parametrize("argv, refusal", [
    (["--every", "0"], "invalid value '0' for '--every <EVERY>': 0 is not in "
     "1..18446744073709551615"),
    (["--every", "x"], "invalid value 'x' for '--every <EVERY>': invalid digit found in "
     "string"),
    (["--pubkey", "zz"], "invalid value 'zz' for '--pubkey <PUBKEY>': not a public key: zz "
     "(expected 64 hex digits, an Ed25519 public key)"),
])
def test_command_lines_the_rust_verb_refuses_are_refused_in_its_words(argv, refusal,
                                                                       capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["watch", "--server", "127.0.0.1:1"] + argv + ["a"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.endswith(f"bloomcast-py watch: error: {refusal}\n")


@pytest.mark.parametrize("etag, name", [
    ('"abc"', "abc"), ('"abc-gz"', "abc"), ('"abc-dcz"', "abc"), ('W/"abc"', "abc"),
    (None, ""),
])
def test_a_version_is_its_etag_whatever_the_encoding(etag, name):
    assert version_of(etag) == name


def test_a_sealed_hour_is_verified_before_moving_on_and_a_tampered_one_ends_the_watch(
        fake_server):
    pytest.importorskip("cryptography", reason="signature checks need cryptography")
    v = json.loads((ROOT / "docs" / "chain-vectors.json").read_text())
    h = v["hours"][1]
    path = "/" + h["hour"][:13].replace("-", "/").replace("T", "/")
    server = fake_server(hours={path: (h["ids"], True, h)})
    watcher = Watcher(Client(server.base, pubkey=v["public_key"]), h["ids"][:1],
                      parse_hour(h["hour"]))
    assert [e["event"] for e in watcher.poll()] == ["version", "changed"]
    assert watcher.hour == parse_hour(h["hour"]) + datetime.timedelta(hours=1)
    tampered = dict(h, prev=v["hours"][2]["prev"])
    server.hours[path] = (h["ids"], True, tampered)
    with pytest.raises(VerificationError, match=h["hour"]):
        Watcher(Client(server.base, pubkey=v["public_key"]), ["x"],
                parse_hour(h["hour"])).poll()


def test_a_static_mirror_without_bloom_headers_is_followed_in_json(fake_server):
    server = fake_server(hours={OPEN: (["a"], True)}, static=True)
    watcher = Watcher(Client(server.base), ["a"], parse_hour("2026-11-23T10"))
    assert [(e["event"], e.get("id")) for e in watcher.poll()] == [
        ("version", None), ("changed", "a")]
    assert server.paths == [OPEN + ".bin", OPEN + ".json"]
    assert watcher.hour == parse_hour("2026-11-23T11")
