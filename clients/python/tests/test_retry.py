"""A read answered 503 with a short Retry-After is tried again after it (at most
READ_TRIES tries); a longer wait, or a write, is answered at once."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bloomcast_client import READ_TRIES, Client, HTTPError

INDEX = {"service": "bloomcast", "current": {"hour": "2026-11-23T10:00:00Z",
                                             "url": "/2026/11/23/10"}}


@pytest.fixture
def busy_stub():
    servers = []

    def start(busy, retry_after):
        hits = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                hits.append((self.command, self.path))
                if len(hits) <= busy or self.command == "POST":
                    body = json.dumps({"error": "busy", "message": "builds are busy"})
                    self.send_response(503)
                    self.send_header("Retry-After", retry_after)
                else:
                    body = json.dumps(INDEX)
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            do_GET = do_POST = _answer

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", hits

    yield start
    for server in servers:
        server.shutdown()


def test_busy_twice_then_served_answers_on_the_third_try(busy_stub):
    base, hits = busy_stub(2, "0")
    client = Client(base)
    assert client.index()["current"]["hour"] == INDEX["current"]["hour"]
    assert len(hits) == 3 and client.requests == 3


def test_busy_every_time_is_the_answer_after_the_last_try(busy_stub):
    base, hits = busy_stub(READ_TRIES, "0")
    with pytest.raises(HTTPError) as e:
        Client(base).index()
    assert e.value.status == 503 and len(hits) == READ_TRIES


def test_one_try_asked_for_is_the_first_refusal(busy_stub):
    base, hits = busy_stub(1, "1")
    with pytest.raises(HTTPError):
        Client(base, read_tries=1).index()
    assert len(hits) == 1


def test_a_long_retry_after_or_a_write_is_answered_at_once(busy_stub):
    base, hits = busy_stub(1, "60")
    client = Client(base)
    with pytest.raises(HTTPError) as e:
        client.index()
    assert (e.value.status, e.value.retry_after, len(hits)) == (503, 60, 1)
    with pytest.raises(HTTPError):
        client.publish(["x"], "t0ken-t0ken")
    assert [m for m, _ in hits] == ["GET", "POST"]
