"""Shared fixtures: the repository's test vectors, and a small in-process HTTP server
speaking the parts of PROTOCOL.md the CLI tests need (an index and filter documents)."""

import http.server
import json
import pathlib
import threading

import pytest

from bloomcast_client import Filter, optimal

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture
def vectors_path():
    return ROOT / "docs" / "test-vectors.json"


class FakeServer:
    """Serves GET / and any filter path with a document holding `ids`; records paths."""

    def __init__(self, current="2026-11-23T10:00:00Z", genesis="2026-11-01T00:00:00Z",
                 ids=()):
        self.current, self.genesis, self.ids = current, genesis, list(ids)
        self.paths, self.posted = [], []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, doc):
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                fake.paths.append(self.path)
                if self.path == "/":
                    return self._send(200, {
                        "service": "bloomcast", "retention_hours": 720,
                        "genesis": fake.genesis,
                        "current": {"hour": fake.current, "url": "/x"}})
                m, k = optimal(max(len(fake.ids), 1), 0.01)
                f = Filter(m, k)
                for id_ in fake.ids:
                    f.add(id_)
                doc = {"complete": False, "count": len(fake.ids), "m": m, "k": k,
                       "hash": "sha1-km32", "fpp": 0.01, "filter": f.hex()}
                if self.path.startswith("/since/"):
                    doc.update({"from": "from", "to": fake.current})
                else:
                    doc["hour"] = fake.current
                return self._send(200, doc)

            def do_POST(self):
                length = int(self.headers["Content-Length"])
                batch = json.loads(self.rfile.read(length))["ids"]
                fake.posted.append(batch)
                self._send(200, {"hour": fake.current, "accepted": len(batch)})

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_server():
    servers = []

    def make(**kwargs):
        server = FakeServer(**kwargs)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()
