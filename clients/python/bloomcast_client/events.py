"""`GET /events` (PROTOCOL.md, "Following changes"): a Server-Sent Events reader in the
standard library, as the client makes its other requests (urllib: its proxies and TLS).

`Parser` is the WHATWG HTML event-stream interpretation, fed bytes as they arrive:
fields `event`, `data` (several lines joined with LF), `id` (kept across events, as
`EventSource`'s last event ID), `retry`; comments (`:` lines, the server's heartbeats)
ignored; lines ending in CRLF, LF or CR, split anywhere across reads; an event is
dispatched at the blank line ending it, never before (one cut short by the end of the
stream is dropped).

`EventSource` opens the stream with `Last-Event-ID` when it has one, and says whether
the server has a stream at all: `404` (a static mirror, an older server) or an answer
that is not `text/event-stream` is NoStream; a failed connection or any other status is
a failure to retry after a while. Reading ends when the stream ends or falls silent
longer than `silence` seconds (heartbeats come every 30 s)."""

import collections
import http.client
import urllib.error
import urllib.request

# An event as dispatched: its type ("message" when the stream names none), its data,
# and the last event ID (the stream's, as it stood at this event).
Event = collections.namedtuple("Event", "type data id")


class Parser:
    """Incremental event-stream parser: feed(bytes) returns the events those bytes
    complete. `last_id`: the last event ID; `retry`: the reconnection time the stream
    set, in milliseconds (None until it sets one)."""

    def __init__(self, last_id=""):
        self.last_id, self.retry = last_id, None
        self._id = last_id  # the last event ID buffer
        self._data, self._type = [], ""
        self._pending = b""  # a line not ended yet
        self._after_cr = False  # the last byte read was a CR: an LF right after ends nothing
        self._first = True  # a UTF-8 BOM at the start of the stream is skipped

    def feed(self, chunk):
        events = []
        if self._after_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._after_cr = False
        if not chunk:
            return events
        self._after_cr = chunk.endswith(b"\r")
        text = self._pending + chunk
        if self._first:
            if len(text) < 3 and b"\xef\xbb\xbf".startswith(text):
                self._pending = text
                return events
            text = text.removeprefix(b"\xef\xbb\xbf")
            self._first = False
        start, n = 0, len(text)
        while True:
            cr, lf = text.find(b"\r", start), text.find(b"\n", start)
            ends = [i for i in (cr, lf) if i >= 0]
            if not ends:
                break
            end = min(ends)
            line = text[start:end]
            start = end + 1
            if end == cr and start < n and text[start:start + 1] == b"\n":
                start += 1  # CRLF
            event = self._line(line.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
        self._pending = text[start:]
        return events

    def _line(self, line):
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment: a heartbeat
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "event":
            self._type = value
        elif field == "data":
            self._data.append(value)
        elif field == "id":
            if "\0" not in value:
                self._id = value
        elif field == "retry":
            if value and all(c in "0123456789" for c in value):
                self.retry = int(value)
        return None  # any other field is ignored

    def _dispatch(self):
        self.last_id = self._id
        data, kind = self._data, self._type or "message"
        self._data, self._type = [], ""
        if not data:
            return None
        return Event(kind, "\n".join(data), self.last_id)


class NoStream(Exception):
    """The server has no event stream: 404 (a static mirror, a server before /events),
    or an answer that is not text/event-stream."""


class StreamFailed(Exception):
    """The stream could not be opened now (no connection, a timeout, an error status:
    503 busy, ...): worth trying again later."""


class EventSource:
    """`GET /events` of a Client's server, resumed where it stopped. `retry`: seconds to
    wait before reconnecting (the server's `retry:`, 2 s until it says)."""

    def __init__(self, client, path="/events", silence=75):
        self.client, self.path = client, path
        self.silence = silence  # seconds without a byte (heartbeats included): dropped
        self.last_id = ""
        self.retry = 2.0
        self.wire_bytes = 0
        self._response = None

    def open(self):
        """Opens the stream (closing one open before). NoStream when the server has none,
        StreamFailed when it cannot be had now."""
        self.close()
        if self.client.base.startswith("file://"):
            raise NoStream("a mirror directory has no event stream")
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store",
                   "Accept-Encoding": "identity"}
        if self.last_id:
            headers["Last-Event-ID"] = self.last_id
        request = urllib.request.Request(self.client.base + self.path, headers=headers)
        self.client.requests += 1
        try:
            # The socket's timeout bounds the connection, then each read: longer than the
            # client's when that is shorter than a silence the server may keep.
            response = urllib.request.urlopen(request, timeout=max(self.client.timeout,
                                                                   self.silence))
        except urllib.error.HTTPError as e:
            e.close()
            if e.code == 404:
                raise NoStream(f"{self.path}: 404") from None
            raise StreamFailed(f"{self.path}: {e.code} {e.reason}") from None
        except (OSError, http.client.HTTPException) as e:  # URLError, timeouts, resets
            raise StreamFailed(f"{self.path}: {e}") from None
        kind = (response.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if response.status != 200 or kind != "text/event-stream":
            response.close()
            raise NoStream(f"{self.path}: {response.status} {kind or 'no Content-Type'}")
        self._response = response

    def events(self):
        """The events of the open stream, as they come, until it ends, fails or falls
        silent; then the stream is closed (open() again to resume)."""
        response, parser = self._response, Parser(self.last_id)
        try:
            while response is not None:
                try:
                    chunk = response.read1(65536)
                except (OSError, http.client.HTTPException, ValueError):
                    return  # reset, timed out (silent too long), cut mid-chunk, closed
                if not chunk:
                    return
                self.wire_bytes += len(chunk)
                for event in parser.feed(chunk):
                    self._took(parser)
                    yield event
                self._took(parser)
        finally:
            self._took(parser)
            self.close()

    def _took(self, parser):
        self.last_id = parser.last_id
        if parser.retry is not None:
            self.retry = parser.retry / 1000

    def close(self):
        if self._response is not None:
            response, self._response = self._response, None
            try:
                response.close()
            except (OSError, http.client.HTTPException):
                pass

