"""An hour the server could not verify (PROTOCOL.md section 9: listed `corrupt` in the
index, without a count; its filter answers 500 `corrupt`) is unknown, never "no change":
check, changed_since, history and watch fail naming it, unless its complete filter is
held from before; a range without it is answered as ever."""

import json
import sqlite3

import pytest

from bloomcast_client import Client, CorruptHours, hour_path, parse_hour
from bloomcast_client.cli import main
from bloomcast_client.history import History
from bloomcast_client.watch import Watcher
from conftest import LIVE_TOKEN, NO_BINARY, LiveServer, bloomcast_binary

BEFORE, DAMAGED, OPEN = "/2026/11/23/08", "/2026/11/23/09", "/2026/11/23/10"
NAME = "2026-11-23T09:00:00Z"
HOURS = {BEFORE: (["a"], True), DAMAGED: (["b"], True), OPEN: (["c"], False)}
LINES = [
    {"hour": "2026-11-23T10:00:00Z", "url": OPEN, "count": 1, "complete": False},
    {"hour": NAME, "url": DAMAGED, "complete": False, "corrupt": True},
    {"hour": "2026-11-23T08:00:00Z", "url": BEFORE, "count": 1, "complete": True},
]


@pytest.fixture
def server(fake_server):
    return fake_server(current="2026-11-23T10:00:00Z", genesis="2026-11-23T08:00:00Z",
                       hours=HOURS, index={"hours": LINES, "target_fpp": 0.01,
                                           "capacity": 3000},
                       corrupt={DAMAGED})


@pytest.mark.parametrize("strategy", ["auto", "hourly", "union", "compact"])
def test_check_fails_naming_the_hour_and_json_says_so(server, strategy, capsys):
    args = ["check", "--server", server.base, "--since", "2026-11-23T08",
            "--strategy", strategy]
    assert main(args + ["a", "b", "c"]) == 1
    out = capsys.readouterr()
    assert out.out == "" and NAME in out.err, out
    assert main(args + ["--json", "a", "b", "c"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"] == "corrupt" and doc["hours"] == [NAME], doc
    assert "changed" not in doc


def test_a_range_without_it_is_checked_as_ever(server, capsys):
    assert main(["check", "--server", server.base, "--since", "2026-11-23T10",
                 "--strategy", "hourly", "c"]) == 0
    assert capsys.readouterr().out.split() == ["c"]


def test_history_fails_naming_the_hour(server, capsys):
    assert main(["history", "--server", server.base, "--no-cache", "a"]) == 1
    assert NAME in capsys.readouterr().err


def test_a_watch_reaching_it_fails_naming_it(server):
    watcher = Watcher(Client(server.base), ["b"], parse_hour("2026-11-23T09"))
    with pytest.raises(CorruptHours) as failed:
        watcher.poll()
    assert failed.value.hours == [NAME] and failed.value.status == 500
    assert watcher.hour == parse_hour("2026-11-23T09"), "never moved past it"


def test_a_500_corrupt_the_index_does_not_list_still_names_the_hour(server):
    server.index["hours"] = [line for line in LINES if not line.get("corrupt")]
    with pytest.raises(CorruptHours) as failed:
        Client(server.base).changed_since(["b"], "2026-11-23T08", per_hour=True)
    assert failed.value.hours == [NAME]


def test_a_client_holding_its_complete_filter_answers_from_it(server):
    server.corrupt.clear()
    server.index["hours"] = [line for line in LINES if not line.get("corrupt")]
    client = Client(server.base)
    first = client.changed_since(["a", "b", "c"], "2026-11-23T08", per_hour=True)
    server.corrupt.add(DAMAGED)
    server.index["hours"] = LINES
    for per_hour in (True, None):
        again = client.changed_since(["a", "b", "c"], "2026-11-23T08", per_hour=per_hour)
        assert again == first
    with pytest.raises(CorruptHours):
        Client(server.base).changed_since(["b"], "2026-11-23T08", per_hour=True)
    assert History(client).lookup(["b"], parse_hour("2026-11-23T08"))[0][1] == \
        [parse_hour("2026-11-23T09")]


def test_a_real_server_lists_a_damaged_open_hour_corrupt_and_check_names_it(tmp_path,
                                                                          capsys):
    binary = bloomcast_binary()
    if binary is None:
        pytest.skip(NO_BINARY)
    data = tmp_path / "server"
    data.mkdir()
    server = LiveServer(binary, data)
    try:
        for batch in (["x:1"], ["x:2"]):
            Client(server.base).publish(batch, LIVE_TOKEN)
        hour = Client(server.base).index()["current"]["hour"]
    finally:
        server.close()
    # Every batch still there; only the record of how many there are is gone.
    with sqlite3.connect(data / "bloomcast.sqlite3") as db:
        db.execute("DELETE FROM batch_counts")
    db.close()
    server = LiveServer(binary, data)
    try:
        index = Client(server.base).index()
        line = next(line for line in index["hours"] if line["hour"] == hour)
        assert line == {"hour": hour, "url": hour_path(hour), "complete": False,
                        "corrupt": True}, "no count: it would read as no change"
        assert main(["check", "--server", server.base, "--since", hour, "--json",
                     "x:1"]) == 1
        doc = json.loads(capsys.readouterr().out)
        assert doc["error"] == "corrupt" and doc["hours"] == [hour], doc
    finally:
        server.close()
