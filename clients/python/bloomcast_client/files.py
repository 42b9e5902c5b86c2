"""A mirror directory read as its file server would serve it (PROTOCOL.md section 13), so
that a client given `file:///DIR` checks and verifies a static mirror offline, byte for
byte what nginx or a CDN would send: the index at `/` is `index.json`, query strings are
ignored, a missing file is a 404, and no `Bloom-*` header comes with anything.

    status, headers, body = get("/srv/mirror", "/chain/2008/09/03/13?limit=1000")
"""

import email.message
import os
import urllib.parse


def root_of(base):
    """The directory of a `file://` base URL (`file:///srv/mirror` -> `/srv/mirror`)."""
    return urllib.parse.unquote(urllib.parse.urlsplit(base).path) or "/"


def path_in(root, path):
    """The file a URL path names under `root`, or None for one that would leave it."""
    path = urllib.parse.unquote(path.split("?", 1)[0].split("#", 1)[0])
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        return None
    if not parts:
        parts = ["index.json"]
    return os.path.join(root, *parts)


def get(root, path, range_=None):
    """(200, headers, body) of the file at URL `path` under `root`; None when there is
    no such file (the caller answers 404). `range_`: a request's `Range` value; one
    range `bytes=A-B` within the file is answered as a file server answers it, (206,
    headers with Content-Range, those bytes); anything else, the whole file."""
    file = path_in(root, path)
    if file is None or not os.path.isfile(file):
        return None
    with open(file, "rb") as f:
        body = f.read()
    headers = email.message.Message()
    cut = _single_range(range_, len(body))
    if cut is not None:
        first, last = cut
        headers["Content-Range"] = f"bytes {first}-{last}/{len(body)}"
        headers["Content-Length"] = str(last - first + 1)
        return 206, headers, body[first:last + 1]
    headers["Content-Length"] = str(len(body))
    return 200, headers, body


def _single_range(value, size):
    """(first, last) of a Range value naming one range of bytes within `size`, else None."""
    unit, _, spec = (value or "").partition("=")
    first, dash, last = spec.strip().partition("-")
    if unit.strip().lower() != "bytes" or not dash or not first.isdigit() \
            or not last.isdigit():
        return None
    first, last = int(first), min(int(last), size - 1)
    return (first, last) if first <= last else None
