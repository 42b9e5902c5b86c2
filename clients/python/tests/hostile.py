"""The hostile mirror, for the tests of issue 53: a real server with sealed hours, a
tampering proxy in front of it, a static file server for a (doctored) mirror directory,
nginx with deploy/nginx-mirror.conf, and the doctoring itself, each written as a mirror
or a cache could do it.

Each hour the server seals is made by running it with its clock moved back
(BLOOMCAST_CLOCK_OFFSET_SECONDS), ingesting, and starting it again an hour later, as
tests/test_exact_client.py does; so its hours are this machine's last few hours."""

import hashlib
import http.client
import http.server
import json
import os
import pathlib
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request

from conftest import LIVE_TOKEN, ROOT, LiveServer

TOLERANCE = {"BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS": "14400"}


def post(base, ids):
    """Publishes `ids`; returns the receipt's hour."""
    request = urllib.request.Request(
        base + "/updates", data=json.dumps({"ids": ids}).encode(),
        headers={"Authorization": "Bearer " + LIVE_TOKEN, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["hour"]


def get(url, headers=None):
    """(status, headers, body) of a GET, error statuses included."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def away_from_the_hours_end(seconds=90):
    """Waits for the next hour when fewer than `seconds` are left of this one, so that a
    setup's hours are the ones it expects."""
    left = 3600 - time.time() % 3600
    if left < seconds:
        time.sleep(left + 1)


def pubkey_of(server):
    import re
    return re.search(r"--pubkey ([0-9a-f]{64})", server.log_text()).group(1)


class Sealed:
    """`batches[i]` ingested into each of the hours before the current one (oldest
    first), the last into the open hour; `hours`: their names (RFC 3339), `server` the
    running server, `pubkey` its key. `between(data_dir, i)`, if given, runs while the
    server is stopped before hour i (e.g. `bloomcast rotate-key`); `during(server, i,
    hours)` while it runs in hour i, the hours before sealed. `settings`: more
    BLOOMCAST_* variables for every start (e.g. its capacity)."""

    def __init__(self, binary, data, batches, between=None, during=None, settings=None):
        away_from_the_hours_end()
        self.binary, self.data, self.hours = binary, data, []
        settings = dict(settings or {})
        n = len(batches) - 1
        for i, batch in enumerate(batches[:-1]):
            if between:
                between(data, i)
            extra = {**(TOLERANCE if i else {}), **settings}
            server = LiveServer(binary, data,
                                BLOOMCAST_CLOCK_OFFSET_SECONDS=str(-3600 * (n - i)), **extra)
            try:
                if self.hours:  # the hour before, sealed now that it is over
                    from bloomcast_client import hour_path
                    get(server.base + hour_path(self.hours[-1]) + ".bin")
                self.hours.append(post(server.base, batch))
                if during:
                    during(server, i, self.hours)
            finally:
                server.close()
        if between:
            between(data, n)
        self.server = LiveServer(binary, data, **TOLERANCE, **settings)
        from bloomcast_client import hour_path
        get(self.server.base + hour_path(self.hours[-1]) + ".bin")
        self.hours.append(post(self.server.base, batches[-1]))
        self.pubkey = pubkey_of(self.server)
        self.base = self.server.base

    def close(self):
        self.server.close()


def rotate_key(binary, data):
    """`bloomcast rotate-key` with the server's data directory (stopped)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLOOMCAST_")}
    env.update(BLOOMCAST_DATA_DIR=str(data), BLOOMCAST_INGEST_TOKENS=LIVE_TOKEN)
    done = subprocess.run([binary, "rotate-key"], env=env, cwd=data, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def mirror(binary, base, directory):
    """`bloomcast mirror DIRECTORY --url BASE` (today's mirror format)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLOOMCAST_")}
    done = subprocess.run([binary, "mirror", str(directory), "--url", base], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return pathlib.Path(directory)


# --- serving -----------------------------------------------------------------------------

class _Server:
    def __init__(self, handler):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class TamperingProxy(_Server):
    """Forwards GETs to `upstream` (asking it for identity bodies; `Range` and
    `If-Range` passed on, so a 206 carries its `content-range`), passing each answer
    through `tamper(path, status, headers, body) -> (status, headers, body)` (headers a
    dict, names lowercase) before sending it on. A body it changes gets a Repr-Digest of
    its own, as a careful forger would make it."""

    def __init__(self, upstream, tamper):
        self.tamper, self.paths = tamper, []
        up = urllib.parse.urlsplit(upstream)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                proxy.paths.append(self.path)
                ask = {k: v for k, v in self.headers.items()
                       if k.lower() in ("accept", "if-none-match", "range", "if-range")}
                ask["Accept-Encoding"] = "identity"
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=30)
                conn.request("GET", self.path, headers=ask)
                r = conn.getresponse()
                status, body = r.status, r.read()
                headers = {k.lower(): v for k, v in r.getheaders()
                           if k.lower() not in ("content-length", "transfer-encoding",
                                                "connection", "content-encoding")}
                conn.close()
                new = proxy.tamper(self.path, status, dict(headers), body)
                status, out_headers, out = new
                if out != body:
                    import base64
                    out_headers["repr-digest"] = "sha-256=:" + base64.b64encode(
                        hashlib.sha256(out).digest()).decode() + ":"
                self.send_response(status)
                for name, value in out_headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        super().__init__(Handler)


class StaticFiles(_Server):
    """A mirror directory served as a plain file server would serve it: `/` is
    index.json, query strings are ignored, anything missing is 404."""

    def __init__(self, root):
        from bloomcast_client.files import path_in
        root = str(root)

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                file = path_in(root, self.path)
                if file is None or not os.path.isfile(file):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    return self.end_headers()
                body = pathlib.Path(file).read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(Handler)


class Nginx:
    """nginx serving `root` with deploy/nginx-mirror.conf on a free port."""

    def __init__(self, root, work):
        import socket
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
        # nginx's workers (user nobody when started as root) walk down to the files.
        for parent in pathlib.Path(root).parents:
            if str(parent) in ("/", "/tmp"):
                break
            os.chmod(parent, 0o755)
        server = (ROOT / "deploy" / "nginx-mirror.conf").read_text() \
            .replace("listen 8080;", f"listen 127.0.0.1:{port};") \
            .replace("root /srv/bloomcast-mirror;", f"root {root};")
        w = pathlib.Path(work)
        w.mkdir(parents=True, exist_ok=True)
        temps = "".join(f" {t}_temp_path {w}/{t};\n"
                        for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        (w / "nginx.conf").write_text(
            f"daemon off;\nmaster_process off;\npid {w}/nginx.pid;\nerror_log {w}/error.log;\n"
            "events { worker_connections 64; }\n"
            f"http {{\n access_log off;\n{temps}{server}\n}}\n")
        self.process = subprocess.Popen([nginx, "-c", str(w / "nginx.conf"), "-e",
                                         str(w / "error.log")], stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.close()
        raise RuntimeError(f"nginx did not start: {(w / 'error.log').read_text()}")

    def close(self):
        self.process.kill()
        self.process.wait()


# --- doctoring a mirror ---------------------------------------------------------------------

def hour_files(root, name):
    """The files of the hour `name` (RFC 3339) in a mirror directory, sidecars included."""
    from bloomcast_client import hour_path
    stem = pathlib.Path(root, hour_path(name).lstrip("/"))
    return sorted(p for p in stem.parent.iterdir()
                  if p.name == stem.name or p.name.startswith(stem.name + "."))


def signer(seed):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    return Ed25519PrivateKey.from_private_bytes(seed)


def public_bytes(key):
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
