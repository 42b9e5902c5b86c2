"""bloomcast-py's command line: help on every verb, the Rust CLI's defaults, and
failures as one line on stderr with a non-zero exit."""

import json
import socket

import pytest

from bloomcast_client.cli import main


@pytest.mark.parametrize("verb", [[], ["check"], ["estimate"], ["history"], ["ingest"],
                                  ["inspect"], ["selftest"], ["verify"], ["watch"]])
def test_every_verb_has_help(verb, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(verb + ["--help"])
    assert exit_.value.code == 0
    assert "usage: bloomcast-py" in capsys.readouterr().out


def test_check_defaults_to_the_last_24_hours(fake_server, capsys):
    server = fake_server(current="2026-11-23T10:00:00Z", ids=["user:1"])
    assert main(["check", "--server", server.base, "user:1", "nobody"]) == 0
    out = capsys.readouterr().out
    assert out.split() == ["user:1"]
    assert server.paths[-1] == "/since/2026/11/22/11"


def test_hours_takes_a_number_not_an_id(fake_server, capsys):
    server = fake_server(current="2026-11-23T10:00:00Z", ids=["a"])
    assert main(["check", "--server", server.base, "--hours", "3", "--json", "a"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["checked"] == 1 and doc["changed"] == ["a"]
    assert doc["since"] == "2026-11-23T08:00:00Z"


def test_the_window_starts_no_earlier_than_the_servers_first_hour(fake_server, capsys):
    server = fake_server(current="2026-11-23T10:00:00Z", genesis="2026-11-23T09:00:00Z")
    assert main(["check", "--server", server.base, "x"]) == 0
    assert "checking from there" in capsys.readouterr().err
    assert server.paths[-1] == "/since/2026/11/23/09"


def test_ingest_sends_batches(fake_server, capsys):
    server = fake_server()
    ids = [str(i) for i in range(5)]
    assert main(["ingest", "--server", server.base, "--token", "t" * 10, "--batch", "2"]
                + ids) == 0
    assert server.posted == [["0", "1"], ["2", "3"], ["4"]]
    assert "ingested 5 IDs" in capsys.readouterr().err


def test_a_refused_connection_is_one_line_naming_the_server(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["ingest", "--server", f"127.0.0.1:{port}", "--token", "t" * 10, "a"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and f"http://127.0.0.1:{port}" in err, err


def test_bad_arguments_are_named_as_typed(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--server", "x", "--since", "yesterday", "a"])
    assert exit_.value.code == 2
    assert "'yesterday'" in capsys.readouterr().err
    assert main(["check", "--server", "ftp://x", "a"]) == 1
    assert capsys.readouterr().err.strip() == (
        "bloomcast-py: bad server URL 'ftp://x': expected http://HOST:PORT, "
        "https://HOST:PORT, HOST:PORT or file:///DIR (a mirror directory)")


def test_inspect_reads_a_saved_document(tmp_path, fake_server, capsys):
    server = fake_server(ids=["a", "b"])
    assert main(["inspect", "--json", f"http://{server.base}/2026/11/23/10"]) == 0
    fields = json.loads(capsys.readouterr().out)
    saved = tmp_path / "hour.json"
    saved.write_text(json.dumps({"hour": "h", "complete": True, "count": 0, "m": 8,
                                 "k": 1, "hash": "sha1-km32", "fpp": 0, "filter": "00"}))
    assert main(["inspect", str(saved)]) == 0
    out = capsys.readouterr().out
    assert fields["count"] == 2 and fields["bits_set"] > 0
    assert "bits_set        0" in out
    assert main(["inspect", str(tmp_path / "missing.json")]) == 1
    assert "cannot read" in capsys.readouterr().err
