"""Catching up with exact bodies (PROTOCOL.md section 14, "Ranges: a past day, and catching
up"): Client.since_exact, the planner's fourth way to read a range (for a caller that
declared its IDs registered, the closed hours after the last one held as one exact body,
the hours before it and the open hour each on its own: `cheapest_plan`'s ("exact",
start)), and changed_since reading it, falling back to hour by hour where the server
does not serve it."""

import contextlib
import datetime
import json

import pytest

from bloomcast_client import (Client, HTTPError, ProtocolError, cheapest_plan, hour_path,
                              parse_hour, universe_at_most)
from bloomcast_client.exact import floor_bits
from conftest import NO_BINARY, bloomcast_binary, post_ids, recording

# --- the planner --------------------------------------------------------------------------


def day_of_big_hours(exact_bytes=240_000):
    """24 missed hours of 400,000 IDs of a universe of 4M, each with an exact body of
    `exact_bytes` (about 4M * H(0.1) bits for 240,000), and an open hour of 2,000."""
    return [{"count": 400_000, "exact_bytes": exact_bytes} for _ in range(24)] + \
        [{"count": 2_000, "open": True}]


def plan(hours, followed=40_000, **kwargs):
    kwargs = {"ribbon_versions": [1, 2], "registered": True, **kwargs}
    return cheapest_plan(hours, 0.01, 400_000, followed, 10240, **kwargs)


def test_a_registered_caller_back_after_a_day_takes_the_closed_hours_as_one_exact_body():
    # Following 40,000 IDs: version 2 of the 9.6M keys costs about 11.4 MB with its
    # wasted fetches, the 24 exact bodies hour by hour 5.8 MB with a response each; the
    # day's one exact body is at most their sum, with one response and no wasted fetch.
    hours = day_of_big_hours()
    assert plan(hours) == ("exact", 0)
    # Whether or not the server serves version 2.
    assert plan(hours, ribbon_versions=None) == ("exact", 0)
    assert plan(hours, ribbon_versions=[1]) == ("exact", 0)


def test_the_exact_plan_is_not_for_an_unregistered_or_verifying_caller():
    hours = day_of_big_hours()
    assert plan(hours, registered=False)[0] == "compact"
    assert plan(hours, bloom_only=True) != ("exact", 0)
    assert plan(hours, compact=False) != ("exact", 0), "the caller may read no union"


def test_the_exact_plan_needs_an_exact_body_for_every_closed_hour():
    # One hour without one (before exact_since): no exact range; hour by hour, the
    # other 23 still read exact (240 KB each) and that one as a version 2 ribbon (704
    # KB), costs less than version 2 of the whole day (11.7 MB).
    hours = day_of_big_hours()
    hours[3]["exact_bytes"] = None
    assert plan(hours) == "hourly"
    # Without exact bodies to read hour by hour, version 2.
    for h in hours[:24]:
        h["exact_bytes"] = None
    assert plan(hours)[0] == "compact"
    # The open hour has none, and needs none: it is read on its own.
    assert "exact_bytes" not in day_of_big_hours()[-1]


def test_exact_bodies_dearer_than_version_2_are_not_read_as_one():
    hours = day_of_big_hours(exact_bytes=4_000_000)
    assert plan(hours)[0] == "compact"


def test_the_exact_body_starts_after_the_last_hour_held():
    # Hours 0..19 held: the exact body covers hours 20..23 (and the open hour alone).
    hours = day_of_big_hours()
    for h in hours[:20]:
        h["held_fpp"] = 0.01
    assert plan(hours) == ("exact", 20)
    # Every closed hour held: no union left; hour by hour reads the open hour alone.
    for h in hours[:24]:
        h["held_fpp"] = 0.0
    assert plan(hours) == "hourly"


def test_ties_go_to_hour_by_hour():
    # One closed hour: its exact body alone costs the same hour by hour as in a range of
    # one (one response either way), so hour by hour is kept.
    hours = [{"count": 300, "exact_bytes": 200}, {"count": 10, "open": True}]
    assert cheapest_plan(hours, 0.01, 3000, 3000, 10240, registered=True) == "hourly"
    # Two: one response saved.
    hours = hours[:1] * 2 + hours[1:]
    assert cheapest_plan(hours, 0.01, 3000, 3000, 10240, registered=True) == ("exact", 0)


def test_a_range_in_which_most_of_the_universe_changed_is_weighed_by_its_floor():
    # 24 hours of 400,000 of a universe of 11M: each hour's body about 320 KB, 7.7 MB
    # summed, more than version 2 at 2^-4 for 100 IDs (4.8 MB); the day's 9.6M of 11M
    # take at most 1.15 x 11M bits (1.6 MB). The universe comes from an hour's body.
    hour_bytes = int(1.08 * floor_bits(11_000_000, 400_000) / 8)
    n = universe_at_most(400_000, hour_bytes)
    assert 11_000_000 <= n < 16_000_000, n
    hours = [{"count": 400_000, "exact_bytes": hour_bytes} for _ in range(24)] + \
        [{"count": 0, "open": True}]
    got = plan(hours, followed=100)
    assert got[0] == "compact" and got[1] == 4, got
    assert plan(hours, followed=100, universe=n) == ("exact", 0)
    # The bound holds N below what a body that small can tell.
    assert floor_bits(n + 1, 400_000) > 8 * hour_bytes
    assert universe_at_most(0, 100) is None


def test_the_universe_is_bounded_by_the_newest_complete_hour_listed_with_a_change():
    # Newest first: the open hour, an empty sealed hour and one without exact_bytes say
    # nothing of the universe; the next complete one does.
    index = {"hours": [
        {"hour": "2026-01-01T05:00:00Z", "complete": False, "count": 10, "exact_bytes": 9},
        {"hour": "2026-01-01T04:00:00Z", "complete": True, "count": 0, "exact_bytes": 15},
        {"hour": "2026-01-01T03:00:00Z", "complete": True, "count": 50},
        {"hour": "2026-01-01T02:00:00Z", "complete": True, "count": 400, "exact_bytes": 600},
        {"hour": "2026-01-01T01:00:00Z", "complete": True, "count": 400, "exact_bytes": 90},
    ]}
    assert Client._universe(index) == universe_at_most(400, 600)
    assert Client._universe({"hours": index["hours"][:3]}) is None
    assert Client._universe({}) is None


# --- against the real server --------------------------------------------------------------

UNIVERSE = [f"u:{i}" for i in range(3000)]
CLOSED = 3
OPEN_IDS = [f"u:{i}" for i in range(9, 3000, 10)][:50]


def changed_in(h):
    """The IDs changed in closed hour h: u:i for i = h mod 10."""
    return [f"u:{i}" for i in range(h, 3000, 10)]


@pytest.fixture(scope="module")
def ranges(tmp_path_factory):
    """A real server with a universe of 3,000 IDs `u:{i}` registered in the first of 3
    sealed hours (its exact_since), 300 of them changed in each sealed hour h (i = h mod
    10) and 50 in its open hour (i = 9 mod 10); each sealed hour's exact body read once,
    so that the index lists its size. `.hours` names the 4 hours."""
    binary = bloomcast_binary()
    if binary is None:
        pytest.skip(NO_BINARY)
    from hostile import Sealed, away_from_the_hours_end, get
    away_from_the_hours_end(180)

    def during(server, i, hours):
        if i == 0:  # the universe created in the first hour: its exact_since
            assert register(server.base, UNIVERSE)["count"] == len(UNIVERSE)

    sealed = Sealed(binary, tmp_path_factory.mktemp("exact-ranges"),
                    [changed_in(h) for h in range(CLOSED)] + [OPEN_IDS], during=during)
    assert len(sealed.hours) == CLOSED + 1
    for name in sealed.hours[:-1]:
        status, _, _ = get(sealed.base + hour_path(name) + ".exact")
        assert status == 200, name
    yield sealed
    sealed.close()


@contextlib.contextmanager
def tampered(base, tamper):
    """A TamperingProxy in front of `base` for the block: its base URL."""
    from hostile import TamperingProxy
    proxy = TamperingProxy(base, tamper)
    try:
        yield proxy.base
    finally:
        proxy.close()


def register(base, ids):
    """POST /universe: the server's answer."""
    return post_ids(base, "/universe", ids)


def refusing_since_exact(status):
    """A tamper answering `status` for every since-range's exact body, as an older
    server does."""
    def tamper(path, got, headers, body):
        if path.startswith("/since/") and path.split("?")[0].endswith(".exact"):
            return status, {"content-type": "application/json"}, json.dumps(
                {"error": "not_found", "message": "no such resource"}).encode()
        return got, headers, body
    return tamper


def test_since_exact_holds_every_closed_hour_exactly_and_names_the_last(ranges):
    client = Client(ranges.base)
    index = client.index()
    assert index["exact_since"] == ranges.hours[0]
    assert "exact_ranges" in index["urls"]
    exact, last = client.since_exact(ranges.hours[0])
    assert last == parse_hour(ranges.hours[CLOSED - 1]), "Bloom-To: the last closed hour"
    changed = {i for h in range(CLOSED) for i in changed_in(h)}
    assert exact.changed_count == len(changed) and exact.universe == len(UNIVERSE)
    assert {i for i in UNIVERSE if exact.changed(i)} == changed, "exact, no false positive"
    # One closed hour: that hour's changes alone.
    one, last = client.since_exact(ranges.hours[CLOSED - 1])
    assert last == parse_hour(ranges.hours[CLOSED - 1])
    assert {i for i in UNIVERSE if one.changed(i)} == set(changed_in(CLOSED - 1))
    # Counted with the exact bodies, never kept (it grows by the hour).
    assert client.exact_fetches == 2 and client.exacts == {}


def test_since_exact_from_the_open_hour_is_406_and_before_exact_since_404(ranges):
    client = Client(ranges.base)
    with pytest.raises(HTTPError) as refused:
        client.since_exact(ranges.hours[-1])
    assert refused.value.status == 406
    before = parse_hour(ranges.hours[0]) - datetime.timedelta(hours=1)
    with pytest.raises(HTTPError) as missing:
        client.since_exact(before)
    assert missing.value.status == 404
    assert client.exact_fetches == 0


def test_since_exact_not_from_the_hour_asked_is_a_protocol_error(ranges):

    def shifted(path, status, headers, body):
        if path.startswith("/since/"):
            headers["bloom-from"] = ranges.hours[1]
        return status, headers, body
    with tampered(ranges.base, shifted) as base:
        with pytest.raises(ProtocolError, match="not a range from"):
            Client(base).since_exact(ranges.hours[0])

    def one_hour(path, status, headers, body):
        headers = {k: v for k, v in headers.items() if k not in ("bloom-from", "bloom-to")}
        if path.startswith("/since/"):
            headers["bloom-hour"] = ranges.hours[0]
        return status, headers, body
    with tampered(ranges.base, one_hour) as base:
        # Named by Bloom-Hour alone: a range of that hour.
        exact, last = Client(base).since_exact(ranges.hours[0])
        assert last == parse_hour(ranges.hours[0])

    def bare(path, status, headers, body):
        return status, {k: v for k, v in headers.items()
                        if k not in ("bloom-from", "bloom-to", "bloom-hour")}, body
    with tampered(ranges.base, bare) as base:
        with pytest.raises(ProtocolError, match="no Bloom-From and Bloom-To"):
            Client(base).since_exact(ranges.hours[0])


def test_since_exact_disagreeing_with_its_headers_is_refused(ranges):

    def miscounted(path, status, headers, body):
        if path.startswith("/since/"):
            headers["bloom-count"] = "1"
        return status, headers, body
    with tampered(ranges.base, miscounted) as base:
        with pytest.raises(ProtocolError, match="Bloom-Count is 1, the body says 900"):
            Client(base).since_exact(ranges.hours[0])


def test_a_registered_client_back_after_the_sealed_hours_reads_them_as_one_exact_body(
        ranges, capsys):
    client = Client(ranges.base, registered=True)
    paths = recording(client)
    changes = client.changed_since(UNIVERSE, ranges.hours[0], per_hour=None)
    # The index, one exact body of the three sealed hours, the open hour.
    assert paths == ["/", "/since" + hour_path(ranges.hours[0]) + ".exact",
                     hour_path(ranges.hours[-1])], paths
    assert [(f, t) for f, t, _ in changes] == \
        [(ranges.hours[0], ranges.hours[CLOSED - 1]), (ranges.hours[-1],) * 2]
    changed = {i for h in range(CLOSED) for i in changed_in(h)}
    assert set(changes[0][2]) == changed, "exact for the universe's IDs"
    assert set(OPEN_IDS) <= set(changes[1][2])
    assert (changes.first, changes.last, changes.stale) == \
        (ranges.hours[0], ranges.hours[-1], [])
    assert client.exact_fetches == 1 and client.requests == 3
    # The same through the command line (auto is its default).
    from bloomcast_client.cli import main
    assert main(["check", "--server", ranges.base, "--since", ranges.hours[0],
                 "--registered", "--json", *UNIVERSE]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["requests"], doc["exact"]) == (3, 1)
    assert doc["ranges"][0]["from"] == ranges.hours[0]
    assert doc["ranges"][0]["to"] == ranges.hours[CLOSED - 1]
    assert set(doc["ranges"][0]["ids"]) == changed


def test_the_exact_body_starts_after_the_hours_held(ranges):
    # Hour 0 held (its exact body, read before): the range is hours 1..2.
    client = Client(ranges.base, registered=True)
    client.exact(ranges.hours[0])
    paths = recording(client)
    changes = client.changed_since(UNIVERSE, ranges.hours[0], per_hour=None)
    assert paths == ["/", "/since" + hour_path(ranges.hours[1]) + ".exact",
                     hour_path(ranges.hours[-1])], paths
    assert [(f, t) for f, t, _ in changes] == \
        [(ranges.hours[0],) * 2, (ranges.hours[1], ranges.hours[CLOSED - 1]),
         (ranges.hours[-1],) * 2]
    assert set(changes[0][2]) == set(changed_in(0))
    assert set(changes[1][2]) == set(changed_in(1)) | set(changed_in(2))


def test_an_unregistered_client_reads_no_exact_range(ranges):
    client = Client(ranges.base)
    paths = recording(client)
    changes = client.changed_since(UNIVERSE, ranges.hours[0], per_hour=None)
    assert not any(p.startswith("/since/") and ".exact" in p for p in paths), paths
    found = {i for _, _, ids in changes for i in ids}
    assert {i for h in range(CLOSED) for i in changed_in(h)} <= found
    # Nor a registered one told to read no exact body.
    client = Client(ranges.base, registered=True)
    paths = recording(client)
    client.changed_since(UNIVERSE, ranges.hours[0], per_hour=None, exact=False)
    assert not any(".exact" in p for p in paths), paths


def test_a_verifying_client_reads_no_exact_range(ranges):
    pytest.importorskip("cryptography", reason="signatures need the cryptography package "
                        "(extra verify)")
    client = Client(ranges.base, pubkey=ranges.pubkey, registered=True)
    paths = recording(client)
    changes = client.changed_since(UNIVERSE, ranges.hours[0], per_hour=None)
    assert not any(p.startswith("/since/") for p in paths), "unions are not signed"
    assert [(f, t) for f, t, _ in changes][:CLOSED] == \
        [(name, name) for name in ranges.hours[:CLOSED]]


@pytest.mark.parametrize("status", [404, 406])
def test_a_server_without_exact_ranges_is_read_hour_by_hour(ranges, status):
    with tampered(ranges.base, refusing_since_exact(status)) as base:
        client = Client(base, registered=True)
        paths = recording(client)
        changes = client.changed_since(UNIVERSE, ranges.hours[0], per_hour=None)
        assert paths[:2] == ["/", "/since" + hour_path(ranges.hours[0]) + ".exact"], paths
        # Then each sealed hour's own exact body, and the open hour: never a v1 union.
        assert paths[2:] == [hour_path(name) + ".exact" for name in ranges.hours[:CLOSED]] \
            + [hour_path(ranges.hours[-1])], paths
        assert [(f, t) for f, t, _ in changes] == [(name, name) for name in ranges.hours]
        for h in range(CLOSED):
            assert set(changes[h][2]) == set(changed_in(h)), ranges.hours[h]
        assert set(OPEN_IDS) <= set(changes[-1][2])
        assert client.exact_fetches == CLOSED


def test_an_hour_listed_without_its_exact_size_is_weighed_at_the_v1_body_s_bytes():
    # PROTOCOL.md section 14, "Choosing it": the index lists exact_bytes once the body is
    # built; until then a client assumes the v1 body's expected bytes, as for an hour it
    # does not list, so such an hour does not rule out the exact range plan.
    from bloomcast_client.ribbon import bloom_choice
    first = datetime.datetime(2008, 9, 3, 13, tzinfo=datetime.timezone.utc)
    hour, name = first + datetime.timedelta(hours=2), "2008-09-03T15:00:00Z"
    v1 = bloom_choice(200, 0.01)[0]
    listed = {name: {"hour": name, "count": 200, "complete": True}}
    assert Client._exact_bytes(hour, name, listed, first, 200, 0.01) == v1
    assert Client._exact_bytes(hour, name, {}, first, 200, 0.01) == v1
    listed[name]["exact_bytes"] = 150
    assert Client._exact_bytes(hour, name, listed, first, 200, 0.01) == 150
    # Before exact_since, or with no universe, none.
    assert Client._exact_bytes(first - datetime.timedelta(hours=1), name, listed, first,
                               200, 0.01) is None
    assert Client._exact_bytes(hour, name, listed, None, 200, 0.01) is None
