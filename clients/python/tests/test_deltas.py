"""Open-hour deltas (RFC 9842 dcz, PROTOCOL.md): the worked example decodes, a poll
offers the last dictionary and decodes the delta when zstandard is installed, and falls
back to gzip without it."""

import hashlib
import http.server
import json
import threading

import pytest

import bloomcast_client
from bloomcast_client import Client, Filter, available_dictionary, dcz_decode

needs_zstd = pytest.mark.skipif(bloomcast_client.zstandard is None,
                                reason="zstandard is not installed (extra `dcz`)")


@needs_zstd
def test_the_worked_example_decodes(vectors_path):
    v = json.loads((vectors_path.parent / "dcz-vectors.json").read_text())
    dictionary = bytes.fromhex(v["dictionary_hex"])
    assert available_dictionary(dictionary) == v["available_dictionary"]
    assert dcz_decode(dictionary, bytes.fromhex(v["dcz_hex"])) == bytes.fromhex(v["version_hex"])
    with pytest.raises(bloomcast_client.ProtocolError, match="another dictionary"):
        dcz_decode(dictionary[1:], bytes.fromhex(v["dcz_hex"]))


class OpenHour:
    """Serves one open hour as JSON, every version kept as a dictionary, with dcz
    deltas against any version it served; records the requests' headers."""

    PATH = "/2026/11/23/10"

    def __init__(self):
        self.ids, self.kept, self.requests = [], {}, []
        hour = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                hour.requests.append(dict(self.headers))
                f = Filter(959, 7)
                for id_ in hour.ids:
                    f.add(id_)
                body = json.dumps({"hour": "2026-11-23T10:00:00Z", "complete": False,
                                   "count": len(hour.ids), "m": 959, "k": 7,
                                   "hash": "sha1-km32", "fpp": 0.01,
                                   "filter": f.hex()}).encode()
                sha = hashlib.sha256(body).hexdigest()
                hour.kept[available_dictionary(body)] = body
                offered = hour.kept.get(self.headers.get("Available-Dictionary") or "")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("ETag", f'"{sha[:20]}"')
                self.send_header("Use-As-Dictionary", f'match="{hour.PATH}", id="{sha[:20]}"')
                if offered and "dcz" in (self.headers.get("Accept-Encoding") or ""):
                    import zstandard
                    d = zstandard.ZstdCompressionDict(
                        offered, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
                    frame = zstandard.ZstdCompressor(dict_data=d).compress(body)
                    body = bytes.fromhex("5e2a4d1820000000") + hashlib.sha256(offered).digest() + frame
                    self.send_header("Content-Encoding", "dcz")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def open_hour():
    server = OpenHour()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def poll_twice(server):
    client = Client(server.base)
    server.ids = [f"user:{i}" for i in range(40)]
    client.document(OpenHour.PATH)
    server.ids += ["user:40", "user:41"]
    doc = client.document(OpenHour.PATH)
    assert Filter.from_document(doc).contains("user:41")
    assert doc["count"] == 42
    return client


@needs_zstd
def test_a_poll_offers_the_last_dictionary_and_decodes_the_delta(open_hour):
    client = poll_twice(open_hour)
    first, second = open_hour.requests
    assert "Available-Dictionary" not in first
    assert second["Available-Dictionary"] in open_hour.kept
    assert second["Accept-Encoding"] == "dcz, gzip"
    assert client.deltas == 1


def test_without_zstandard_polls_use_gzip(open_hour, monkeypatch):
    monkeypatch.setattr(bloomcast_client, "zstandard", None)
    client = poll_twice(open_hour)
    assert all("Available-Dictionary" not in r for r in open_hour.requests)
    assert client.deltas == 0
