"""Follow the open hour, and the next one at its boundary, reporting each of some IDs
the first time a version of the hour says it may have changed.

Polls read the hour's `.bin` form; with the `zstandard` package (extra `dcz`) they
travel as RFC 9842 `dcz` deltas against the last version the server offered as a
dictionary, so following an hour costs a little more than what changed in it (gzip
without it). With a verifying client (`pubkey`), each version of the open hour is
verified by its Bloom-Open-Signature (one made longer ago than the client's freshness
bound is refused: a replay would hide the changes since; one served unsigned is listed
in the client's `unverified`), and each hour's final bytes, read once it is sealed and
before moving on, by the hour chain."""

import datetime

from . import Filter, HTTPError, ProtocolError, hour_path, of_hour, parse_hour
from .rustjson import dumps


def rfc3339(hour):
    return hour.strftime("%Y-%m-%dT%H:00:00Z")


def version_of(etag):
    """The version an ETag names, whatever the encoding: W/, quotes, -gz, -dcz removed."""
    t = (etag or "")
    t = t[2:] if t.startswith("W/") else t
    t = t.strip('"')
    for suffix in ("-gz", "-dcz"):
        t = t[:-len(suffix)] if t.endswith(suffix) else t
    return t


def version_event(hour, version, count, nbytes, delta):
    return {"event": "version", "hour": rfc3339(hour), "version": version, "count": count,
            "bytes": nbytes, "delta": delta}


def changed_event(hour, version, id_, nbytes):
    return {"event": "changed", "hour": rfc3339(hour), "version": version, "id": id_,
            "bytes": nbytes}


def event_line(event, as_json):
    """What the Rust CLI prints for an event: its JSON, or the ID of a `changed` one
    (None: nothing for a `version` event without --json)."""
    if as_json:
        return dumps(event)
    return event["id"] if event["event"] == "changed" else None


class Watcher:
    """Follows one hour at a time for `ids`, starting at `hour` (a past hour is read once,
    complete, then the next, up to the open hour: resuming a watch where it stopped)."""

    def __init__(self, client, ids, hour):
        self.client, self.ids, self.hour = client, list(ids), hour
        self.version, self.reported = None, set()
        self.suffix = ".bin"

    @classmethod
    def start(cls, client, ids):
        """A watcher at the server's current hour."""
        return cls(client, ids, parse_hour(client.index()["current"]["hour"]))

    def poll(self):
        """Polls the hour once and returns its events; moves to the next hour once this
        one is complete (its final bytes read first, so nothing of its end is missed).
        An hour the server could not verify raises CorruptHours naming it (the watch
        ends there, as on any error status)."""
        bytes_before, deltas_before = self.client.wire_bytes, self.client.deltas
        try:
            doc, path = self._fetch()
        except HTTPError as e:  # a 500 corrupt names the hour: never moved past
            raise of_hour(e, rfc3339(self.hour)) from None
        nbytes = self.client.wire_bytes - bytes_before
        cached = self.client.cache.get(path)
        version = version_of(cached[0] if cached else None)
        events = []
        if self.version != version:
            events.append(version_event(self.hour, version, doc["count"], nbytes,
                                        self.client.deltas > deltas_before))
            f = Filter.from_document(doc)
            for id_ in self.ids:
                if id_ not in self.reported and f.contains(id_):
                    self.reported.add(id_)
                    events.append(changed_event(self.hour, version, id_, nbytes))
            self.version = version
        if doc["complete"]:
            self.hour += datetime.timedelta(hours=1)
            self.version, self.reported = None, set()
        return events

    def _fetch(self):
        """(document, path) of the hour; a `.bin` without its Bloom-* headers (a static
        mirror) switches this watcher to the self-describing `.json` form."""
        path = hour_path(self.hour) + self.suffix
        try:
            return self.client.document(path), path
        except ProtocolError as e:
            if self.suffix != ".bin" or "missing header Bloom-" not in str(e):
                raise
        self.suffix = ".json"
        return self._fetch()
