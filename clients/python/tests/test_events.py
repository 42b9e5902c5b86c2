"""`watch` by the server's event stream (`GET /events`, PROTOCOL.md "Following changes"):
the event-stream parser on handmade bytes; the watch following the real server's stream
(an ID reported within seconds with `--every 3600`); polling where there is no stream, or
while it is down; resuming with Last-Event-ID after the stream drops, losing no sealed
hour."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading

import pytest

from bloomcast_client import cli_reading, watch
from bloomcast_client.cli import main
from bloomcast_client.events import Event, Parser
from conftest import ROOT, post_ids, stop_after

OPEN = "/2026/11/23/10"
NEXT = "/2026/11/23/11"


# --- the parser ---------------------------------------------------------------------------

def parse(*chunks):
    parser = Parser()
    events = [e for chunk in chunks for e in parser.feed(chunk)]
    return events, parser


STREAM = (b": a comment, as the server's heartbeats\n"
          b"retry: 2000\n"
          b"\n"
          b"id: 2026112310-3\n"
          b"event: version\n"
          b"data: {\"hour\": \"2026-11-23T10:00:00Z\",\n"
          b"data:  \"count\": 3}\n"
          b"\n"
          b":\n"
          b"event: reset\n"
          b"data:{\"reason\":\"old\"}\n"
          b"\n")


def test_fields_multi_line_data_comments_retry_and_ids():
    events, parser = parse(STREAM)
    assert events == [
        Event("version", '{"hour": "2026-11-23T10:00:00Z",\n "count": 3}', "2026112310-3"),
        # No id of its own: the last event ID stands (a `reset` names none).
        Event("reset", '{"reason":"old"}', "2026112310-3")]
    assert parser.retry == 2000 and parser.last_id == "2026112310-3"


@pytest.mark.parametrize("ending", [b"\r\n", b"\r", b"\n"])
def test_any_line_ending(ending):
    assert parse(STREAM.replace(b"\n", ending))[0] == parse(STREAM)[0]


def test_an_event_split_anywhere_across_reads_is_the_same_event():
    whole = parse(STREAM)[0]
    for stream in (STREAM, STREAM.replace(b"\n", b"\r\n")):
        assert parse(*[stream[i:i + 1] for i in range(len(stream))])[0] == whole
        for cut in range(len(stream)):
            assert parse(stream[:cut], stream[cut:])[0] == whole, cut


def test_an_event_is_dispatched_at_its_blank_line_and_a_cut_one_never():
    parser = Parser()
    assert parser.feed(b"id: 1\nevent: version\ndata: x\n") == []
    assert parser.feed(b"\n") == [Event("version", "x", "1")]
    assert parser.feed(b"id: 2\ndata: cut short by the end of the stream") == []
    assert parser.last_id == "1"


def test_the_specs_corner_cases():
    events, parser = parse(
        b"\xef\xbb\xbf"  # a BOM, skipped
        b"data\n"  # a field without a colon: empty value
        b"data:\n\n"
        b"data:  two spaces keep one\nunknown: ignored\nretry: 12s\n\n"
        b"id: 7\n\n"  # no data: nothing dispatched, but the id is taken
        b"id: with\0nul\ndata: d\n\n"  # an id with NUL is ignored
        b"id\ndata: e\n\n")  # an empty id clears it
    assert events == [Event("message", "\n", ""), Event("message", " two spaces keep one", ""),
                      Event("message", "d", "7"), Event("message", "e", "")]
    assert parser.retry is None


# --- following the real server's stream ----------------------------------------------------

def post(base, ids):
    return post_ids(base, "/updates", ids)


class Watch:
    """`bloomcast-py watch ARGS` running, its stdout lines in a queue."""

    def __init__(self, *args):
        env = dict(os.environ, PYTHONPATH=str(ROOT / "clients" / "python"))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bloomcast_client", "watch", *args], env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        self.lines = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line.rstrip("\n"))
                                         for line in self.process.stdout],
                         daemon=True).start()

    def next(self, within):
        """The next line printed within `within` seconds (fails otherwise)."""
        try:
            return json.loads(self.lines.get(timeout=within))
        except queue.Empty:
            pytest.fail(f"nothing printed in {within} s; stderr so far: "
                        f"{self.stop()[1]}")

    def stop(self):
        """(exit code, stderr) after Ctrl-C."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return self.process.returncode, self.process.stderr.read()


def test_the_watch_follows_the_stream_not_its_polls(live_server):
    """With polls an hour apart, an ID ingested is reported within seconds: the stream
    said a new version exists."""
    watching = Watch("--server", live_server.base, "--every", "3600", "--json", "s:1", "s:2")
    try:
        first = watching.next(within=30)  # the poll made on connecting: the stream is open
        assert first["event"] == "version" and first["count"] == 0
        post(live_server.base, ["s:2", "other"])
        grown, changed = watching.next(within=10), watching.next(within=10)
        assert (grown["event"], grown["count"]) == ("version", 2)
        assert (changed["event"], changed["id"]) == ("changed", "s:2")
        post(live_server.base, ["s:1"])
        assert watching.next(within=10)["count"] == 3
        assert watching.next(within=10)["id"] == "s:1"
    finally:
        code, err = watching.stop()
    assert code == 0, err


def test_with_poll_the_watch_polls_alone(live_server):
    watching = Watch("--server", live_server.base, "--every", "1", "--poll", "--json", "p:1")
    try:
        assert watching.next(within=30)["count"] == 0
        post(live_server.base, ["p:1"])
        assert watching.next(within=15)["count"] == 1
        assert watching.next(within=10)["id"] == "p:1"
    finally:
        code, err = watching.stop()
    assert code == 0, err


# --- where there is no stream, or it is down ----------------------------------------------

def test_without_a_stream_the_watch_polls_every_every_seconds(fake_server, monkeypatch,
                                                               capsys):
    server = fake_server(hours={OPEN: (["a"], False)})  # /events: 404, as a static mirror's

    def publish(n):
        server.hours[OPEN] = (["a", "b"], False)
    sleep, calls = stop_after(3, publish)
    monkeypatch.setattr(cli_reading, "sleep", sleep)
    assert main(["watch", "--server", server.base, "--every", "7", "a", "b"]) == 0
    assert capsys.readouterr().out == "a\nb\n"
    assert calls == [7, 7, 7]
    assert [p for p in server.paths if p != "/"] == ["/events"] + [OPEN + ".bin"] * 3


def test_a_server_without_a_stream_is_asked_again_every_few_polls(fake_server, monkeypatch,
                                                                  capsys):
    server = fake_server(hours={OPEN: (["a"], False)})
    polls = 2 * watch.NO_STREAM_POLLS + 1
    monkeypatch.setattr(cli_reading, "sleep", stop_after(polls)[0])
    assert main(["watch", "--server", server.base, "a"]) == 0
    asked = [i for i, p in enumerate(p for p in server.paths if p != "/") if p == "/events"]
    assert asked == [0, 1 + watch.NO_STREAM_POLLS, 2 + 2 * watch.NO_STREAM_POLLS]


def test_an_answer_that_is_not_an_event_stream_is_no_stream(fake_server, monkeypatch,
                                                            capsys):
    """A catch-all answering any path with a JSON document: polled as without a stream."""
    server = fake_server(hours={OPEN: (["a"], False)}, events=[{"not": "a stream"}])
    sleep, calls = stop_after(2)
    monkeypatch.setattr(cli_reading, "sleep", sleep)
    assert main(["watch", "--server", server.base, "--every", "3", "a"]) == 0
    assert capsys.readouterr().out == "a\n"
    assert calls == [3, 3]
    assert [p for p in server.paths if p != "/"] == ["/events"] + [OPEN + ".bin"] * 2


def test_with_poll_there_is_no_stream(fake_server, monkeypatch, capsys):
    server = fake_server(hours={OPEN: (["a"], False)}, events=[b"retry: 1\n\n"] * 9)
    monkeypatch.setattr(cli_reading, "sleep", stop_after(2)[0])
    assert main(["watch", "--server", server.base, "--poll", "a"]) == 0
    assert "/events" not in server.paths


def version_event(hour, count, etag="x"):
    data = {"hour": f"2026-11-23T{hour}:00:00Z", "path": f"/2026/11/23/{hour}",
            "count": count, "etag": f'"{etag}"'}
    return (f"id: 20261123{hour}-{count}\nevent: version\n"
            f"data: {json.dumps(data)}\n\n").encode()


def sealed_event(hour, count):
    data = {"hour": f"2026-11-23T{hour}:00:00Z", "path": f"/2026/11/23/{hour}",
            "count": count, "digest": "00" * 32, "header": "00" * 32,
            "chain": f"/chain/2026/11/23/{hour}"}
    return (f"id: 20261123{hour}-sealed\nevent: sealed\n"
            f"data: {json.dumps(data)}\n\n").encode()


def test_each_version_event_is_polled_for_and_none_between(fake_server, monkeypatch, capsys):
    server = fake_server(hours={OPEN: (["a"], False)}, events=[
        b"retry: 5\n\n" + version_event(10, 1) + b": heartbeat\n\n" + version_event(10, 2)])
    sleep, calls = stop_after(1)  # the stream ends: its retry delay, then interrupted
    monkeypatch.setattr(cli_reading, "sleep", sleep)
    assert main(["watch", "--server", server.base, "--every", "3600", "a"]) == 0
    assert calls == [0.005]
    # One poll on connecting, one per version event; none for the heartbeat.
    assert [p for p in server.paths if p != "/"] == ["/events"] + [OPEN + ".bin"] * 3


def test_a_version_event_naming_the_version_held_is_not_polled_for(fake_server, monkeypatch,
                                                                    capsys):
    from bloomcast_client import Client, parse_hour
    from bloomcast_client.watch import Watcher, on_event
    server = fake_server(hours={OPEN: (["a"], False)})
    watcher = Watcher(Client(server.base), ["a"], parse_hour("2026-11-23T10"))
    watcher.poll()
    held = Event("version", version_event(10, 1, etag=watcher.version)
                 .decode().split("data: ")[1].strip(), "2026112310-1")
    assert list(on_event(watcher, held)) == []
    assert list(on_event(watcher, held._replace(type="reset"))) == [[]]
    assert server.paths.count(OPEN + ".bin") == 2


def test_a_stream_that_fails_is_polled_for_and_tried_again_meanwhile(fake_server,
                                                                     monkeypatch, capsys):
    server = fake_server(hours={OPEN: (["a"], False)},
                         events=[503, 503, b"retry: 1\n\n" + version_event(10, 2)])

    def publish(n):
        server.hours[OPEN] = (["a", "b"], False)
    sleep, calls = stop_after(3, publish)
    monkeypatch.setattr(cli_reading, "sleep", sleep)
    assert main(["watch", "--server", server.base, "--every", "10", "a", "b"]) == 0
    assert capsys.readouterr().out == "a\nb\n"
    # Polled at once, then the stream tried after 2 s (the default retry), 4 s: opened,
    # polled on connecting (b), its event polled for; it ends: its retry, 1 ms.
    assert calls == [2.0, 4.0, 0.001]
    assert [p for p in server.paths if p != "/"] == [
        "/events", OPEN + ".bin", "/events", "/events", OPEN + ".bin", OPEN + ".bin"]


def test_a_stream_that_drops_and_is_not_back_is_polled_for_after_every_seconds(
        fake_server, monkeypatch, capsys):
    """Its server restarting: no poll at once (it would fail, ending the watch), the
    stream tried again meanwhile."""
    server = fake_server(hours={OPEN: (["a"], False)},
                         events=[b"retry: 3000\n\n", 503, b"retry: 1\n\n"])
    sleep, calls = stop_after(3)
    monkeypatch.setattr(cli_reading, "sleep", sleep)
    assert main(["watch", "--server", server.base, "--every", "10", "a"]) == 0
    assert capsys.readouterr().out == "a\n"
    assert calls == [3.0, 3.0, 0.001]  # its retry; backoff from it: back; ended again
    assert [p for p in server.paths if p != "/"] == [
        "/events", OPEN + ".bin", "/events", "/events", OPEN + ".bin"]


def test_a_dropped_stream_resumes_with_last_event_id_and_loses_no_sealed_hour(
        fake_server, monkeypatch, capsys):
    """The stream drops in hour 10; meanwhile hour 10 gets b and is sealed, and hour 11
    (opened) gets c: the stream, resumed with the last id it sent, says hour 10 was
    sealed and hour 11 has a version; each is read."""
    server = fake_server(hours={OPEN: (["a"], False)}, events=[
        b"retry: 50\n\n" + version_event(10, 1),
        sealed_event(10, 2) + version_event(11, 1)])

    def meanwhile(n):
        if n == 1:  # the first stream dropped: while reconnecting
            server.hours[OPEN] = (["a", "b"], True)
            server.hours[NEXT] = (["c"], False)
            server.current = "2026-11-23T11:00:00Z"
    sleep, calls = stop_after(2, meanwhile)
    monkeypatch.setattr(cli_reading, "sleep", sleep)
    assert main(["watch", "--server", server.base, "--every", "3600", "a", "b", "c"]) == 0
    assert capsys.readouterr().out == "a\nb\nc\n"
    assert calls == [0.05, 0.05]
    asked = [{k.lower(): v for k, v in h.items()}
             for p, h in zip(server.paths, server.headers) if p == "/events"]
    assert [h.get("last-event-id") for h in asked] == [None, "2026112310-1"]
    assert [p for p in server.paths if p != "/"] == [
        "/events", OPEN + ".bin", OPEN + ".bin",  # on connecting, its version event
        "/events", OPEN + ".bin",  # on reconnecting: hour 10's final bytes, read once
        NEXT + ".bin"]  # hour 10's seal (read already), then hour 11's version


# --- resuming on the real server across an hour's seal ------------------------------------

class Relay:
    """A TCP relay on a port of its own to `backend` (host, port), so that a watch keeps
    its server address while the server behind it is replaced. `cut()` drops every
    connection and holds new ones (for up to 60 s) until a backend is set again."""

    def __init__(self):
        import socket
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.base = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.backend, self.live = None, []
        self.ready = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import socket
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.ready.wait(60):
                client.close()
                continue
            upstream = socket.create_connection(self.backend, timeout=30)
            upstream.settimeout(None)
            self.live += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        import socket
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def to(self, base):
        host, port = base.removeprefix("http://").rsplit(":", 1)
        self.backend = (host, int(port))
        self.ready.set()

    def cut(self):
        import socket
        self.ready.clear()
        for s in self.live:  # shut down first: that wakes a recv blocked on it, and says FIN
            for end in (lambda: s.shutdown(socket.SHUT_RDWR), s.close):
                try:
                    end()
                except OSError:
                    pass
        self.live = []

    def close(self):
        self.cut()
        self.listener.close()


def test_a_watch_resumed_on_the_real_server_loses_no_sealed_hour(tmp_path):
    """The server runs an hour behind (hour H-1 open), the watch follows it; its stream
    is cut, an ID is ingested unseen, and the server is started again at the real time,
    sealing H-1: the watch, reconnected, reads H-1's final bytes (the ID unseen) and
    follows hour H."""
    from conftest import LiveServer, bloomcast_binary, NO_BINARY
    from hostile import TOLERANCE, away_from_the_hours_end
    binary = bloomcast_binary()
    if binary is None:
        pytest.skip(NO_BINARY)
    away_from_the_hours_end()
    data = tmp_path / "server"
    data.mkdir()
    relay, servers = Relay(), []
    servers.append(LiveServer(binary, data, BLOOMCAST_CLOCK_OFFSET_SECONDS="-3600"))
    relay.to(servers[0].base)
    watching = Watch("--server", relay.base, "--every", "3600", "--json", "r:1", "r:2", "r:3")
    try:
        before = watching.next(within=30)
        post(servers[0].base, ["r:1"])
        assert watching.next(within=10)["count"] == 1
        assert watching.next(within=10)["id"] == "r:1"
        relay.cut()  # the stream drops; the watch reconnects, held by the relay
        post(servers[0].base, ["r:2"])  # unseen: no stream, no poll
        servers[0].close()
        servers.append(LiveServer(binary, data, **TOLERANCE))  # hour H-1 is sealed
        relay.to(servers[1].base)
        final, unseen = watching.next(within=30), watching.next(within=10)
        assert (final["hour"], final["count"]) == (before["hour"], 2)
        assert (unseen["hour"], unseen["id"]) == (before["hour"], "r:2")
        opened = watching.next(within=10)  # hour H, following on
        assert opened["hour"] > before["hour"] and opened["count"] == 0
        post(servers[1].base, ["r:3"])
        assert watching.next(within=10)["count"] == 1
        changed = watching.next(within=10)
        assert (changed["hour"], changed["id"]) == (opened["hour"], "r:3")
    finally:
        code, err = watching.stop()
        relay.close()
        for server in servers:
            server.close()
    assert code == 0, err
