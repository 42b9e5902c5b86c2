"""In which hours since a given one may each of some IDs have changed? Every hour's
filter is fetched once; complete hours never change, so with a cache directory their
documents are also kept on disk, one file per hour per server, laid out as the Rust
client lays them out (the two share a cache), and a later run fetches only the hours it
has not seen complete. The cache is best-effort: an unreadable or unwritable file means
a fetch, never a wrong answer."""

import datetime
import hashlib
import json
import os
import pathlib
import sys

from . import (CorruptHours, Filter, HTTPError, ProtocolError, corrupt_hours, hour_path,
               of_hour, parse_hour)


def default_cache_dir():
    """$XDG_CACHE_HOME/bloomcast, else ~/.cache/bloomcast (None without either)."""
    if os.environ.get("XDG_CACHE_HOME"):
        return pathlib.Path(os.environ["XDG_CACHE_HOME"]) / "bloomcast"
    if os.environ.get("HOME"):
        return pathlib.Path(os.environ["HOME"]) / ".cache" / "bloomcast"
    return None


def rfc3339(hour):
    return hour.strftime("%Y-%m-%dT%H:00:00Z")


class History:
    """Looks IDs up hour by hour through `client`, keeping complete hours in `cache_dir`
    (None: nothing on disk). `cache_hits` counts hours read from the disk."""

    def __init__(self, client, cache_dir=None):
        self.client, self.cache_dir, self.cache_hits = client, cache_dir, 0

    def lookup(self, ids, since=None):
        """[(id, [hours])] from `since` (clamped to the oldest hour the server still has;
        None: that hour) through the server's current hour, in the order given.
        ValueError for a `since` after the current hour; CorruptHours naming the hours
        the server could not verify (listed `corrupt`, or answering 500 `corrupt`)
        whose complete filter is not kept."""
        index = self.client.index()
        now = parse_hour(index["current"]["hour"])
        oldest = max(parse_hour(index["genesis"]),
                     now - datetime.timedelta(hours=index["retention_hours"] - 1))
        hour = oldest if since is None else max(since, oldest)
        if hour > now:
            raise ValueError(f"{rfc3339(hour)} is after the server's current hour "
                             f"{rfc3339(now)}")
        # An hour the server could not verify is unknown, unless its complete filter is
        # kept from before: no history is given over it.
        unknown = [name for name in corrupt_hours(index, hour, now)
                   if not self._holds(parse_hour(name))]
        if unknown:
            raise CorruptHours(unknown)
        found = [(id_, []) for id_ in ids]
        while hour <= now:
            try:
                f = self._filter(hour)
            except HTTPError as e:
                raise of_hour(e, rfc3339(hour)) from None
            for id_, hours in found:
                if f.contains(id_):
                    hours.append(hour)
            hour += datetime.timedelta(hours=1)
        return found

    def _filter(self, hour):
        file = self._file(hour)
        doc = _read_complete(file) if file else None
        if doc is not None:
            self.cache_hits += 1
            return Filter.from_document(doc)
        doc = self.client.document(hour_path(hour))
        if file and doc["complete"]:
            try:
                _write_atomically(file, json.dumps(doc).encode())
            except OSError as e:  # best-effort: the next run fetches the hour again
                print(f"bloomcast-py: warning: cannot cache a filter in {file}: {e.strerror}",
                      file=sys.stderr)
        return Filter.from_document(doc)

    def _holds(self, hour):
        """Whether a complete filter of `hour` is kept, in memory or on disk."""
        file = self._file(hour)
        cached = self.client.cache.get(hour_path(hour))
        return bool(cached and cached[1]["complete"]) or \
            (file is not None and _read_complete(file) is not None)

    def _file(self, hour):
        """<dir>/<first 8 bytes of SHA-1(base), hex>/<YYYY-MM-DDTHH>.json."""
        if self.cache_dir is None:
            return None
        server = hashlib.sha1(self.client.base.encode()).digest()[:8].hex()
        return pathlib.Path(self.cache_dir) / server / hour.strftime("%Y-%m-%dT%H.json")


def _read_complete(file):
    try:
        doc = json.loads(file.read_bytes())
        Filter.from_document(doc)
    except (OSError, ValueError, ProtocolError, AttributeError):
        return None
    return doc if doc["complete"] else None


def _write_atomically(file, data):
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, file)
