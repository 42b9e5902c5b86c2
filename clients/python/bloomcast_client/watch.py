"""Follow the open hour, and the next one at its boundary, reporting each of some IDs
the first time a version of the hour says it may have changed.

Polls read the hour's `.bin` form; with the `zstandard` package (extra `dcz`) they
travel as RFC 9842 `dcz` deltas against the last version the server offered as a
dictionary, so following an hour costs a little more than what changed in it (gzip
without it). With a verifying client (`pubkey`), each version of the open hour is
verified by its Bloom-Open-Signature (one made longer ago than the client's freshness
bound is refused: a replay would hide the changes since; one served unsigned is listed
in the client's `unverified`), and each hour's final bytes, read once it is sealed and
before moving on, by the hour chain.

`follow` drives a Watcher: by the server's event stream (`GET /events`) where it has
one, polling the hour on each `version` or `sealed` event (and on connecting) and not
between them; by polls every `every` seconds where it has none (a static mirror, an
older server) or while the stream is down, trying the stream again meanwhile."""

import datetime
import json
import time

from . import Filter, HTTPError, ProtocolError, hour_path, of_hour, parse_hour
from .events import EventSource, NoStream, StreamFailed
from .rustjson import dumps

# Polls between tries of a server that has no stream (404): a mirror never gets one, a
# server upgraded meanwhile is followed by its stream from then on.
NO_STREAM_POLLS = 6
# Seconds between tries of a stream that failed (its server restarting, busy): from its
# `retry` delay, doubling up to this, polling every `every` seconds meanwhile.
MOST_BACKOFF = 60


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

    def poll(self, fresh=False):
        """Polls the hour once and returns its events; moves to the next hour once this
        one is complete (its final bytes read first, so nothing of its end is missed).
        An hour the server could not verify raises CorruptHours naming it (the watch
        ends there, as on any error status). `fresh`: after an event of the stream, the
        caches between are asked for a copy no older than it."""
        bytes_before, deltas_before = self.client.wire_bytes, self.client.deltas
        try:
            doc, path = self._fetch(fresh)
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

    def follow(self, every=10, stream=True, sleep=time.sleep):
        """This watcher's events, poll by poll, forever (see `follow`): by the server's
        event stream where it has one (`stream`), else polls every `every` seconds."""
        source = EventSource(self.client) if stream else None
        try:
            yield from follow(self, source, every, sleep)
        finally:
            if source is not None:
                source.close()

    def _fetch(self, fresh=False):
        """(document, path) of the hour; a `.bin` without its Bloom-* headers (a static
        mirror) switches this watcher to the self-describing `.json` form."""
        path = hour_path(self.hour) + self.suffix
        try:
            return self.client.document(path, fresh=fresh), path
        except ProtocolError as e:
            if self.suffix != ".bin" or "missing header Bloom-" not in str(e):
                raise
        self.suffix = ".json"
        return self._fetch(fresh)


def follow(watcher, source, every, sleep=time.sleep):
    """Yields the Watcher's events, poll by poll (a list, maybe empty, per poll), forever.

    With `source` (an EventSource of the same server), each event of its stream makes
    the poll it says is due (see on_event), the stream opening makes one; none is made
    between events. A server without a stream (NoStream) is polled every `every`
    seconds and its stream tried again every NO_STREAM_POLLS polls; a stream that cannot
    be opened is polled for too, from at once, and one that drops and cannot be reopened
    after its `retry` delay from `every` seconds later; either is tried again every few
    seconds meanwhile (from `retry`, doubling up to MOST_BACKOFF). Without `source`: polls every `every` seconds."""
    tries = _Tries(source)
    connected = tries.open()
    while True:
        if connected:
            yield watcher.poll()  # what changed before the stream was opened
            for event in source.events():
                yield from on_event(watcher, event)
            sleep(source.retry)  # the stream ended: reconnect after its retry delay
            # Not back (its server restarting?): the next poll after `every` seconds,
            # unless the stream is back first.
            connected = tries.open() or tries.wait(every, sleep)
            continue
        yield watcher.poll()
        connected = tries.wait(every, sleep)


def on_event(watcher, event):
    """The polls (their events, list by list) an event of the stream calls for: on
    `version` or `sealed` of the watcher's hour or a later one, the hour (and, once it is
    complete, the next ones up to the event's hour); on `reset` (or an event whose data
    does not say its hour), the watcher's hour. None for a `version` naming the version
    the watcher holds, nor for an hour the watcher is past (a resumed stream's seals)."""
    if event.type not in ("version", "sealed", "reset"):
        return
    try:
        data = json.loads(event.data)
        hour = parse_hour(data["hour"])
    except (ValueError, KeyError, TypeError, AttributeError):
        data, hour = {}, None
    if event.type == "reset" or hour is None:
        yield watcher.poll(fresh=True)
        return
    if hour < watcher.hour:
        return
    if event.type == "version" and hour == watcher.hour and watcher.version is not None \
            and version_of(data.get("etag")) == watcher.version:
        return
    while True:
        at = watcher.hour
        yield watcher.poll(fresh=True)
        if watcher.hour == at or watcher.hour > hour:
            return


class _Tries:
    """When follow tries the stream: at once, then as the last try calls for."""

    def __init__(self, source):
        self.source = source
        self.absent = source is None  # no stream here: tried every NO_STREAM_POLLS polls
        self.polls = 0
        self.backoff = 0

    def open(self):
        """Whether the stream is open now."""
        if self.source is None:
            return False
        try:
            self.source.open()
        except NoStream:
            self.absent, self.polls = True, 0
            return False
        except StreamFailed:
            self.absent = False
            self.backoff = min(max(self.backoff * 2, self.source.retry), MOST_BACKOFF)
            return False
        self.absent, self.backoff = False, 0
        return True

    def wait(self, every, sleep):
        """Sleeps until the next poll is due, `every` seconds; whether the stream was
        opened meanwhile (then that is the next poll's moment)."""
        if self.absent:
            sleep(every)
            self.polls += 1
            return self.source is not None and self.polls % NO_STREAM_POLLS == 0 \
                and self.open()
        waited = 0
        while waited < every:
            step = min(self.backoff, every - waited)
            sleep(step)
            waited += step
            if self.open():
                return True
            if self.absent:  # it answers 404 now: polls alone, from the next one
                sleep(every - waited)
                return False
        return False
