"""`bloomcast-py history`: each ID with the hours whose filter holds it, as the Rust verb
prints them; complete hours kept on disk (the Rust client's layout) so a second run
fetches only the open hour; its refusals and exit codes."""

import hashlib
import json

import pytest

from bloomcast_client.cli import main

HOURS = {"/2026/11/23/08": (["a"], True), "/2026/11/23/09": (["a", "b"], True),
         "/2026/11/23/10": (["b"], False)}


@pytest.fixture
def server(fake_server):
    return fake_server(current="2026-11-23T10:00:00Z", genesis="2026-11-23T08:00:00Z",
                       hours=HOURS)


def test_each_id_is_printed_with_its_hours_oldest_first(server, capsys):
    assert main(["history", "--server", server.base, "--no-cache", "a", "b", "c"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "a\t2026-11-23T08:00:00Z 2026-11-23T09:00:00Z",
        "b\t2026-11-23T09:00:00Z 2026-11-23T10:00:00Z",
        "c\t"]
    assert server.paths == ["/", "/2026/11/23/08", "/2026/11/23/09", "/2026/11/23/10"]


def test_json_is_the_rust_verbs_object(server, capsys):
    assert main(["history", "--server", server.base, "--no-cache", "--json", "b"]) == 0
    assert capsys.readouterr().out == (
        '{"cache_hits":0,"ids":[{"hours":["2026-11-23T09:00:00Z","2026-11-23T10:00:00Z"],'
        f'"id":"b"}}],"requests":4,"server":"http://{server.base}"}}\n')


def test_since_starts_later_and_is_clamped_to_the_oldest_hour(server, capsys):
    assert main(["history", "--server", server.base, "--no-cache", "--since",
                 "2026-11-23T09", "a"]) == 0
    assert capsys.readouterr().out == "a\t2026-11-23T09:00:00Z\n"
    assert main(["history", "--server", server.base, "--no-cache", "--since",
                 "2001-01-01T00", "a"]) == 0
    assert capsys.readouterr().out == "a\t2026-11-23T08:00:00Z 2026-11-23T09:00:00Z\n"


def test_a_since_after_the_current_hour_fails_naming_both(server, capsys):
    code = main(["history", "--server", server.base, "--no-cache", "--since",
                 "2026-11-23T11", "a"])
    assert code == 1
    assert capsys.readouterr().err == ("bloomcast-py: 2026-11-23T11:00:00Z is after the "
                                       "server's current hour 2026-11-23T10:00:00Z\n")


def test_a_second_run_reads_complete_hours_from_the_cache(server, tmp_path, capsys):
    argv = ["history", "--server", server.base, "--cache-dir", str(tmp_path), "--json", "a"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(argv) == 0
    second = json.loads(capsys.readouterr().out)
    assert (first["requests"], first["cache_hits"]) == (4, 0)
    assert (second["requests"], second["cache_hits"]) == (2, 2)
    assert second["ids"] == first["ids"]
    server_dir = hashlib.sha1(f"http://{server.base}".encode()).digest()[:8].hex()
    assert sorted(p.name for p in (tmp_path / server_dir).iterdir()) == [
        "2026-11-23T08.json", "2026-11-23T09.json"]


def test_the_default_cache_is_under_xdg_cache_home_and_no_cache_keeps_nothing(
        server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("BLOOMCAST_CACHE_DIR", raising=False)
    assert main(["history", "--server", server.base, "--no-cache", "a"]) == 0
    assert not (tmp_path / "bloomcast").exists()
    assert main(["history", "--server", server.base, "a"]) == 0
    assert len(list((tmp_path / "bloomcast").glob("*/*.json"))) == 2


@pytest.mark.parametrize("argv, refusal", [
    (["--cache-dir", "d", "--no-cache", "a"],
     "the argument '--cache-dir <CACHE_DIR>' cannot be used with '--no-cache'"),
    (["--no-cache", "--cache-dir", "d", "a"],
     "the argument '--no-cache' cannot be used with '--cache-dir <CACHE_DIR>'"),
    (["--since", "yesterday", "a"],
     "invalid value 'yesterday' for '--since <SINCE>': \"yesterday\" is not an hour: "
     "expected e.g. 2008-09-03T05 (UTC), 2008-09-03T05:00:00Z or 2008/09/03/05"),
    ([], "the following required arguments were not provided:\n  <IDS>..."),
])
def test_command_lines_the_rust_verb_refuses_are_refused_in_its_words(argv, refusal,
                                                                       monkeypatch, capsys):
    monkeypatch.delenv("BLOOMCAST_CACHE_DIR", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(["history", "--server", "127.0.0.1:1"] + argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.endswith(f"bloomcast-py history: error: {refusal}\n")


def test_a_cache_dir_from_the_environment_conflicts_with_no_cache(monkeypatch, capsys):
    monkeypatch.setenv("BLOOMCAST_CACHE_DIR", "/tmp/anywhere")
    with pytest.raises(SystemExit) as exit_:
        main(["history", "--server", "127.0.0.1:1", "--no-cache", "a"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.endswith(
        "error: the argument '--no-cache' cannot be used with '--cache-dir <CACHE_DIR>'\n")
