"""Catching up (PROTOCOL.md section 12, "Catching up (`/since/YYYY/MM/DD/HH.ribbon2`)"):
Client.since_ribbon2, the planner's third way to read a range (the closed hours after the
last one held as one version 2 since-union at 2^-k, the hours before it and the open hour
each on its own: `cheapest_plan`, `compact_plan`), and changed_since and `check` reading
it (`strategy="compact"`, `--strategy compact`, and auto when it is the cheapest),
falling back to the v1 union (or, for a union that was to start after `since`, to hour
by hour) where it is not served."""

import json
import math
import urllib.parse

import pytest

from bloomcast_client import (Client, CorruptHours, HTTPError, ProtocolError, cheapest_plan,
                              compact_plan, compact_precision, hour_path, hourly_is_cheaper,
                              parse_hour)
from bloomcast_client.cli import main
from bloomcast_client.ribbon import RESPONSE_OVERHEAD, _payload
from bloomcast_client.ribbon2 import fpp_param, ribbon2_bytes
from conftest import NO_BINARY, bloomcast_binary, recording

HOURS, PER_HOUR = 30, 2_000
OPEN_IDS = [f"o:{i}" for i in range(50)]


def batch(h):
    return [f"m{h}:{i}" for i in range(PER_HOUR)]


@pytest.fixture(scope="module")
def catchup(tmp_path_factory):
    """A real server (capacity 2,000, as the Rust SDK's test sets it) with 30 sealed
    hours of 2,000 IDs `m{h}:{i}` (hour h, oldest first) and 50 IDs `o:{i}` in its open
    hour; `.hours` names the 31 hours. Made with time to spare before this hour ends, so
    that the hours stay as made while this module's tests run."""
    binary = bloomcast_binary()
    if binary is None:
        pytest.skip(NO_BINARY)
    from hostile import Sealed, away_from_the_hours_end
    away_from_the_hours_end(180)
    sealed = Sealed(binary, tmp_path_factory.mktemp("catchup"),
                    [batch(h) for h in range(HOURS)] + [OPEN_IDS],
                    settings={"BLOOMCAST_CAPACITY": str(PER_HOUR)})
    assert len(sealed.hours) == HOURS + 1
    yield sealed
    sealed.close()


def since_fpp(path):
    """The k of a `/since/....ribbon2?fpp=2^-k` path (a whole bit, canonically spelled)."""
    fpp = float(urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)["fpp"][0])
    k = -math.log2(fpp)
    assert k.is_integer() and path.endswith("?fpp=" + fpp_param(fpp)), path
    return int(k)


# --- Client.since_ribbon2 against the real server -----------------------------------------

def test_since_ribbon2_holds_every_closed_hour_and_names_the_last(catchup):
    client = Client(catchup.base)
    ribbon, last = client.since_ribbon2(catchup.hours[0], 2.0 ** -10)
    assert last == parse_hour(catchup.hours[HOURS - 1]), "Bloom-To: the last closed hour"
    assert ribbon.n == HOURS * PER_HOUR and ribbon.k == 10
    assert all(ribbon.contains(i) for h in range(HOURS) for i in batch(h)[:100])
    assert sum(ribbon.contains(i) for i in OPEN_IDS) < 5, "the open hour is not in it"
    # One closed hour: that hour's own body, named by Bloom-Hour.
    one, last = client.since_ribbon2(catchup.hours[HOURS - 1], 0.01)
    assert last == parse_hour(catchup.hours[HOURS - 1]) and one.n == PER_HOUR
    # Counted with the other version 2 bodies, never kept.
    assert (client.ribbon_fetches, client.ribbon2_fetches) == (2, 2)
    assert client.ribbons2 == {}


def test_since_ribbon2_from_the_open_hour_is_406(catchup):
    client = Client(catchup.base)
    with pytest.raises(HTTPError) as refused:
        client.since_ribbon2(catchup.hours[-1])
    assert (refused.value.status, refused.value.code) == (406, "not_acceptable")
    assert client.ribbon2_fetches == 0


def test_since_ribbon2_without_the_range_it_covers_is_a_protocol_error(catchup):
    from hostile import TamperingProxy

    def strip(path, status, headers, body):
        return status, {k: v for k, v in headers.items()
                        if k not in ("bloom-to", "bloom-hour")}, body
    proxy = TamperingProxy(catchup.base, strip)
    try:
        with pytest.raises(ProtocolError, match="no Bloom-To or Bloom-Hour"):
            Client(proxy.base).since_ribbon2(catchup.hours[0], 0.01)
    finally:
        proxy.close()


# --- reading a range with it ----------------------------------------------------------------

def test_strategy_compact_reads_two_closed_hours_in_one_body_and_the_open_hour(catchup):
    first, last, open_ = catchup.hours[-3:]
    updated = batch(HOURS - 2) + batch(HOURS - 1)
    quiet = [f"quiet:{i}" for i in range(1000)]
    client = Client(catchup.base)
    paths = recording(client)
    changes = client.changed_since(updated + OPEN_IDS + quiet, first, strategy="compact")
    assert [(f, t) for f, t, _ in changes] == [(first, last), (open_, open_)]
    assert set(updated) <= set(changes[0][2])
    assert set(OPEN_IDS) <= set(changes[1][2])
    flagged = sum(i.startswith("quiet:") for _, _, ids in changes for i in ids)
    assert flagged < 20, f"{flagged} of 1,000 quiet IDs flagged"
    # The index, the version 2 union of the closed hours, the open hour.
    assert paths[0] == "/" and paths[2] == hour_path(open_), paths
    assert paths[1].startswith("/since" + hour_path(first) + ".ribbon2?fpp="), paths
    assert len(paths) == client.requests == 3
    assert (client.ribbon_fetches, client.ribbon2_fetches) == (1, 1)
    assert (changes.first, changes.last, changes.stale) == (first, open_, [])


def test_check_strategy_compact_json(catchup, capsys):
    first, last, open_ = catchup.hours[-3:]
    followed = [f"m{HOURS - 2}:5", f"m{HOURS - 1}:9", "o:3"]
    assert main(["check", "--server", catchup.base, "--since", first, "--strategy",
                 "compact", "--json", *followed]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["changed"] == followed
    assert [(r["from"], r["to"]) for r in doc["ranges"]] == [(first, last), (open_, open_)]
    assert set(doc["ranges"][0]["ids"]) >= set(followed[:2])
    assert doc["ranges"][1]["ids"] == ["o:3"]
    assert (doc["from"], doc["to"]) == (first, open_)
    assert (doc["requests"], doc["ribbons"], doc["ribbons2"]) == (3, 1, 1)


def test_auto_takes_the_version_2_union_for_a_client_back_after_thirty_hours(catchup,
                                                                              capsys):
    # 30 missed hours of 2,000 IDs, 20 IDs followed: one v1 union costs its 72 KB at
    # 1%, hour by hour 31 requests; the closed hours in version 2 at the precision that
    # suits 20 IDs (about 30 KB), and the open hour, cost least.
    followed = [f"m{h}:{7 + h}" for h in range(HOURS) if h % 3 != 2]
    assert len(followed) == 20
    client = Client(catchup.base)
    paths = recording(client)
    changes = client.changed_since(followed, catchup.hours[0], per_hour=None)
    assert len(paths) == 3, paths
    assert paths[1].startswith("/since" + hour_path(catchup.hours[0]) + ".ribbon2?fpp=")
    assert paths[2] == hour_path(catchup.hours[-1])
    k = since_fpp(paths[1])
    assert 4 <= k <= 8, "few IDs followed: a coarse precision"
    found = {i for _, _, ids in changes for i in ids}
    assert set(followed) <= found, "no false negative"
    assert changes[0][:2] == (catchup.hours[0], catchup.hours[HOURS - 1])
    # The same through the command line (auto is its default).
    assert main(["check", "--server", catchup.base, "--since", catchup.hours[0],
                 "--json", *followed]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["requests"], doc["ribbons2"], doc["changed"]) == (3, 1, followed)
    assert doc["ranges"][0]["from"] == catchup.hours[0]
    assert doc["ranges"][0]["to"] == catchup.hours[HOURS - 1]


def holding(client, hours):
    """`client` reading each of `hours` completely on its own (a version 2 ribbon at
    2^-12), as a poller that read them before holds them."""
    for name in hours:
        client.ribbon2(name, 2.0 ** -12)
    assert client.ribbon2_fetches == len(hours)


def spread():
    """Two IDs changed in each closed hour (each at a place of its own) and one of the
    open hour's."""
    return [f"m{h}:{(37 * h + j) % PER_HOUR}" for h in range(HOURS) for j in (0, 1000)] + \
        ["o:7"]


@pytest.mark.parametrize("kwargs", [{"strategy": "compact"}, {"per_hour": None}])
def test_a_client_holding_the_first_hours_takes_the_version_2_union_after_them(catchup,
                                                                               kwargs):
    # Held complete, hours 0..19 are answered from what is held, at no request; the
    # union starts at hour 20, the first not held. Auto takes it too: the 10 hours left
    # hour by hour cost a request each.
    held = 20
    client = Client(catchup.base)
    holding(client, catchup.hours[:held])
    paths = recording(client)
    followed = spread()
    changes = client.changed_since(followed, catchup.hours[0], **kwargs)
    assert len(paths) == 3 == client.requests - held, paths
    assert paths[0] == "/"
    assert paths[1].startswith("/since" + hour_path(catchup.hours[held]) + ".ribbon2?fpp=")
    assert paths[2] == hour_path(catchup.hours[-1])
    assert not any(p.startswith(hour_path(name)) for name in catchup.hours[:held]
                   for p in paths), "a held hour costs no request"
    ranges = [(f, t) for f, t, _ in changes]
    assert ranges == [(name, name) for name in catchup.hours[:held]] + \
        [(catchup.hours[held], catchup.hours[HOURS - 1]), (catchup.hours[-1],) * 2]
    found = {i for _, _, ids in changes for i in ids}
    assert set(followed) <= found, "no changed ID missed"
    for (name, _, ids), h in zip(changes, range(held)):
        assert set(followed[2 * h:2 * h + 2]) <= set(ids), name
    assert set(followed[2 * held:-1]) <= set(changes[held][2])
    assert "o:7" in changes[-1][2]
    assert (changes.first, changes.last, changes.stale) == \
        (catchup.hours[0], catchup.hours[-1], [])
    assert client.ribbon2_fetches == held + 1


def test_hours_before_the_last_held_not_held_are_read_on_their_own(catchup):
    # Hours 3..19 held, 0..2 not: the version 2 union (read first) starts at hour 20,
    # hours 0..2 are read one by one, 3..19 from what is held.
    client = Client(catchup.base)
    holding(client, catchup.hours[3:20])
    paths = recording(client)
    followed = spread()
    changes = client.changed_since(followed, catchup.hours[0], strategy="compact")
    assert paths[1].startswith("/since" + hour_path(catchup.hours[20]) + ".ribbon2?fpp=")
    assert [p.split(".")[0] for p in paths[2:-1]] == \
        [hour_path(name) for name in catchup.hours[:3]], paths
    assert paths[-1] == hour_path(catchup.hours[-1]) and len(paths) == 6
    found = {i for _, _, ids in changes for i in ids}
    assert set(followed) <= found, "no changed ID missed"
    assert [(f, t) for f, t, _ in changes][19:] == \
        [(catchup.hours[19],) * 2, (catchup.hours[20], catchup.hours[HOURS - 1]),
         (catchup.hours[-1],) * 2]


def test_a_union_after_held_hours_not_served_is_read_hour_by_hour(catchup):
    """An older server (406 for every since compact form): a union that was to start
    after the hours held is read hour by hour, never as a v1 union from `since`."""
    from hostile import TamperingProxy

    def older(path, status, headers, body):
        if path.startswith("/since/") and ".ribbon2" in path:
            return 406, {"content-type": "application/json"}, json.dumps(
                {"error": "not_acceptable", "message": "no compact since-range"}).encode()
        return status, headers, body
    proxy = TamperingProxy(catchup.base, older)
    try:
        held = 20
        client = Client(proxy.base)
        holding(client, catchup.hours[:held])
        paths = recording(client)
        followed = spread()
        changes = client.changed_since(followed, catchup.hours[0], strategy="compact")
        assert paths[1].startswith("/since" + hour_path(catchup.hours[held]) + ".ribbon2")
        assert not any(p.startswith("/since" + hour_path(catchup.hours[0]))
                       for p in paths), paths
        assert [p.split(".")[0].split("?")[0] for p in paths[2:]] == \
            [hour_path(name) for name in catchup.hours[held:]], paths
        assert [(f, t) for f, t, _ in changes] == [(name, name) for name in catchup.hours]
        found = {i for _, _, ids in changes for i in ids}
        assert set(followed) <= found, "no changed ID missed"
    finally:
        proxy.close()


def test_a_regular_poller_holding_every_closed_hour_reads_hour_by_hour(catchup):
    # Every closed hour held: no union left to read; auto reads the open hour alone,
    # and "compact" (no closed hour to put in version 2) the v1 union.
    client = Client(catchup.base)
    holding(client, catchup.hours[-4:-1])
    paths = recording(client)
    changes = client.changed_since(["m28:5", "o:7"], catchup.hours[-4], per_hour=None)
    assert paths == ["/", hour_path(catchup.hours[-1])]
    assert {i for _, _, ids in changes for i in ids} >= {"m28:5", "o:7"}
    paths.clear()
    client.changed_since(["m28:5", "o:7"], catchup.hours[-4], strategy="compact")
    assert paths == ["/", "/since" + hour_path(catchup.hours[-4])]


def test_the_same_client_verifying_reads_hour_by_hour(catchup):
    pytest.importorskip("cryptography", reason="signatures need the cryptography package "
                        "(extra verify)")
    from hostile import pubkey_of
    client = Client(catchup.base, pubkey=pubkey_of(catchup.server))
    paths = recording(client)
    changes = client.changed_since(["m28:1"], catchup.hours[-3], strategy="compact")
    assert not any(".ribbon2" in p and p.startswith("/since/") for p in paths), paths
    assert not any(p.startswith("/since/") for p in paths), "unions are not signed"
    assert [(f, t) for f, t, _ in changes][0] == (catchup.hours[-3], catchup.hours[-3])


# --- falling back to the v1 union ---------------------------------------------------------

def test_a_server_answering_406_for_the_since_ribbon2_is_read_as_the_v1_union(catchup):
    """An older server (406 for every since compact form) before the real one."""
    from hostile import TamperingProxy

    def older(path, status, headers, body):
        if path.startswith("/since/") and ".ribbon2" in path:
            return 406, {"content-type": "application/json"}, json.dumps(
                {"error": "not_acceptable", "message": "no compact since-range"}).encode()
        return status, headers, body
    proxy = TamperingProxy(catchup.base, older)
    try:
        followed = [f"m{h}:{7 + h}" for h in range(HOURS) if h % 3 != 2] + ["o:1"]
        for kwargs in ({"strategy": "compact"}, {"per_hour": None}):
            client = Client(proxy.base)
            paths = recording(client)
            changes = client.changed_since(followed, catchup.hours[0], **kwargs)
            since = "/since" + hour_path(catchup.hours[0])
            assert paths[0] == "/" and paths[1].startswith(since + ".ribbon2?fpp="), paths
            assert paths[2:] == [since], "then the v1 union through the open hour"
            assert [(f, t) for f, t, _ in changes] == \
                [(catchup.hours[0], catchup.hours[-1])]
            assert set(followed) <= set(changes[0][2])
            assert client.ribbon2_fetches == 0
    finally:
        proxy.close()


def test_compact_from_the_open_hour_reads_the_v1_union(catchup):
    # No closed hour: nothing for version 2 to hold; the union alone (no 406 asked for).
    client = Client(catchup.base)
    paths = recording(client)
    changes = client.changed_since(["o:1", "nobody"], catchup.hours[-1], strategy="compact")
    assert paths == ["/", "/since" + hour_path(catchup.hours[-1])]
    assert [(f, t) for f, t, _ in changes] == [(catchup.hours[-1], catchup.hours[-1])]
    assert "o:1" in changes[0][2]


SEALED, OPEN = "/2026/11/23/09", "/2026/11/23/10"
SEALED_NAME, OPEN_NAME = "2026-11-23T09:00:00Z", "2026-11-23T10:00:00Z"


def stub_index(versions=(1, 2)):
    return {"target_fpp": 0.01, "capacity": 3000, "ribbon_versions": list(versions),
            "hours": [{"hour": OPEN_NAME, "count": 1, "complete": False},
                      {"hour": SEALED_NAME, "count": 1, "complete": True}]}


def test_a_server_without_version_2_404_is_read_as_the_v1_union(fake_server):
    # The stub serves no compact form (404) though its index lists version 2.
    server = fake_server(index=stub_index(), ids=["a"],
                         hours={SEALED: (["a"], True), OPEN: ([], False)})
    client = Client(server.base)
    changes = client.changed_since(["a", "b"], "2026-11-23T09", strategy="compact")
    assert server.paths[0] == "/" and server.paths[2] == "/since" + SEALED, server.paths
    assert server.paths[1].startswith("/since" + SEALED + ".ribbon2?fpp=")
    assert len(server.paths) == 3 and changes[0][2] == ["a"]


def test_compact_over_a_damaged_hour_held_names_it(fake_server):
    # The client holds the damaged hour, the only closed one: no version 2 union is left
    # after it, so "compact" reads the v1 union, whose 500 over it is named.
    lines = [{"hour": OPEN_NAME, "count": 1, "complete": False},
             {"hour": SEALED_NAME, "count": 1, "complete": True}]
    server = fake_server(index={**stub_index(), "hours": lines},
                         hours={SEALED: (["a"], True), OPEN: (["c"], False)})
    client = Client(server.base)
    client.changed_since(["a"], "2026-11-23T09", per_hour=True)  # holds the sealed hour
    server.corrupt.add(SEALED)
    server.index["hours"] = [{"hour": OPEN_NAME, "count": 1, "complete": False},
                             {"hour": SEALED_NAME, "complete": True, "corrupt": True}]
    with pytest.raises(CorruptHours) as failed:
        client.changed_since(["a"], "2026-11-23T09", strategy="compact")
    assert failed.value.hours == [SEALED_NAME]
    assert not any(".ribbon2" in p and p.startswith("/since/") for p in server.paths)
    assert server.paths[-1] == "/since" + SEALED, server.paths
    # Auto reads the hours held instead.
    assert client.changed_since(["a"], "2026-11-23T09", per_hour=None)[0][2] == ["a"]


def test_a_union_after_a_damaged_hour_held_starts_after_it(fake_server):
    # 08 damaged and held, 09 not: the version 2 union would start at 09, never over the
    # damaged hour; the stub serves none (404), so 09 is read on its own, 08 from what is
    # held, with no request.
    before, before_name = "/2026/11/23/08", "2026-11-23T08:00:00Z"
    lines = [{"hour": OPEN_NAME, "count": 1, "complete": False},
             {"hour": SEALED_NAME, "count": 1, "complete": True},
             {"hour": before_name, "count": 1, "complete": True}]
    server = fake_server(index={**stub_index(), "hours": lines},
                         hours={before: (["z"], True), SEALED: (["a"], True),
                                OPEN: (["c"], False)})
    client = Client(server.base)
    client.document(before)  # holds 08
    server.corrupt.add(before)
    server.index["hours"] = lines[:2] + [{"hour": before_name, "complete": True,
                                          "corrupt": True}]
    server.paths.clear()
    changes = client.changed_since(["z", "a", "c"], "2026-11-23T08", strategy="compact")
    assert server.paths[0] == "/" and \
        server.paths[1].startswith("/since" + SEALED + ".ribbon2?fpp="), server.paths
    assert not any(p.startswith(before) or p.startswith("/since" + before)
                   for p in server.paths), server.paths
    assert [(f, t, ids) for f, t, ids in changes] == \
        [(before_name, before_name, ["z"]), (SEALED_NAME, SEALED_NAME, ["a"]),
         (OPEN_NAME, OPEN_NAME, ["c"])]


def test_an_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="unknown strategy 'fast'"):
        Client("127.0.0.1:1").changed_since(["a"], "2026-11-23T09", strategy="fast")


def test_check_refuses_exact_with_compact(fake_server, capsys):
    server = fake_server(index=stub_index())
    assert main(["check", "--server", server.base, "--since", "2026-11-23T09", "--exact",
                 "--strategy", "compact", "a"]) == 1
    assert "--strategy compact" in capsys.readouterr().err and not server.paths


# --- the planner --------------------------------------------------------------------------

def day_of_big_hours():
    """24 missed hours of 400,000 IDs and an open hour of 2,000 (capacity 400,000)."""
    return [{"count": 400_000} for _ in range(24)] + [{"count": 2_000, "open": True}]


def plan(hours, followed, **kwargs):
    return cheapest_plan(hours, 0.01, 400_000, followed, 10240, **kwargs)


def test_a_client_back_after_a_day_of_big_hours_takes_the_closed_hours_in_version_2():
    # Following 40,000 IDs: the v1 union is 11.5 MB and wastes 4 MB at 1%; hour by hour,
    # 24 ribbons near 12 bits cost about 18 MB; the closed hours in version 2 near 8 bits
    # a key, about 11.4 MB all told.
    hours = day_of_big_hours()
    got = plan(hours, 40_000, ribbon_versions=[1, 2])
    assert got[0] == "compact" and 6 <= got[1] <= 10 and got[2] == 0, got
    assert compact_precision(hours, 400_000, 40_000, 10240, [1, 2]) == got[1]
    assert compact_plan(hours, 400_000, 40_000, 10240, [1, 2]) == got
    # Not where the server does not serve version 2, nor for a client verifying (its
    # hours are v1 filters), nor when the caller rules it out: the v1 union.
    assert plan(hours, 40_000) == "union"
    assert plan(hours, 40_000, ribbon_versions=[1]) == "union"
    assert plan(hours, 40_000, ribbon_versions=[1, 2], bloom_only=True) == "union"
    assert plan(hours, 40_000, ribbon_versions=[1, 2], compact=False) == "union"
    assert compact_precision(hours, 400_000, 40_000, 10240, [1, 2], bloom_only=True) is None
    assert compact_plan(hours, 400_000, 40_000, 10240, [1, 2], bloom_only=True) is None


def test_following_few_ids_the_compact_plan_takes_the_coarsest_precision():
    # 100 IDs at 10 KiB waste 64 KB at 2^-4; each further bit costs 1.2 MB of the 9.6
    # million keys: 4 bits. Without version 2, v1 ribbons hour by hour (about 6.7 MB)
    # beat the v1 union (11.5 MB); verifying (v1 hours at 1%), the union.
    hours = day_of_big_hours()
    n = 24 * 400_000
    assert plan(hours, 100, ribbon_versions=[1, 2]) == ("compact", 4, 0)
    cost = ribbon2_bytes(n, 2.0 ** -4) + 100 * 2.0 ** -4 * 10240
    assert cost < ribbon2_bytes(n, 2.0 ** -5) + 100 * 2.0 ** -5 * 10240
    assert cost + RESPONSE_OVERHEAD < _payload(n + 2_000, 0.01)
    assert plan(hours, 100) == "hourly"
    assert plan(hours, 100, ribbon_versions=[1, 2], bloom_only=True) == "union"


def test_the_compact_plan_needs_a_closed_hour_and_counts_the_open_hour_as_hourly():
    only_open = [{"count": 2_000, "open": True}]
    assert compact_precision(only_open, 3000, 10, 10240, [1, 2]) is None
    assert compact_plan(only_open, 3000, 10, 10240, [1, 2]) is None
    assert plan(only_open, 10, ribbon_versions=[1, 2]) in ("hourly", "union")
    # A huge open hour makes hour by hour and compact dear alike: the v1 union, sized
    # for the count, wins over both.
    hours = [{"count": 10} for _ in range(3)] + [{"count": 10, "open": True}]
    assert cheapest_plan(hours, 0.01, 10**7, 5, 10240, ribbon_versions=[1, 2]) == "union"


def test_a_client_holding_every_hour_reads_hour_by_hour():
    # Every closed hour held exactly, the open hour unchanged (a 304): cheaper than any
    # union, version 2 or not.
    hours = [{"count": 0, "held_fpp": 0.0} for _ in range(3)] + \
        [{"count": 0, "open": True, "unchanged": True}]
    assert plan(hours, 1, ribbon_versions=[1, 2]) == "hourly"
    assert hourly_is_cheaper(hours, 0.01, 400_000, 1, 10240, ribbon_versions=[1, 2])


def test_hourly_is_cheaper_never_weighs_the_compact_plan():
    # Where compact would win, hourly_is_cheaper still compares hour by hour with the
    # v1 union alone, as it always did.
    hours = day_of_big_hours()
    assert plan(hours, 100, ribbon_versions=[1, 2])[0] == "compact"
    assert hourly_is_cheaper(hours, 0.01, 400_000, 100, 10240, ribbon_versions=[1, 2])
    assert not hourly_is_cheaper(hours, 0.01, 400_000, 40_000, 10240, ribbon_versions=[1, 2])


def test_the_version_2_union_starts_after_the_last_hour_held():
    # A poller holding the first 20 of 30 hours of 50,000: only the last 10 (and the
    # open hour) are to be read.
    hours = [{"count": 50_000, "held_fpp": 0.01 if i < 20 else None} for i in range(30)] + \
        [{"count": 1_000, "open": True}]
    got = cheapest_plan(hours, 0.01, 50_000, 100, 10240, ribbon_versions=[1, 2])
    assert got[0] == "compact" and got[2] == 20, got
    assert compact_plan(hours, 50_000, 100, 10240, [1, 2])[::2] == ("compact", 20)
    # Its precision is that of the 10 hours' 500,000 keys, not of all 30.
    n = 10 * 50_000
    k = compact_precision(hours, 50_000, 100, 10240, [1, 2])
    assert k == min(range(4, 25), key=lambda b: ribbon2_bytes(n, 2.0 ** -b)
                    + 100 * 2.0 ** -b * 10240)
    # A held hour in the middle: the union starts after it, the hours before it (held
    # or not) read on their own.
    gap = [{"count": 50_000, "held_fpp": 0.01 if i == 12 else None} for i in range(30)] + \
        [{"count": 1_000, "open": True}]
    assert compact_plan(gap, 50_000, 100, 10240, [1, 2])[2] == 13
    # An open hour held does not move it.
    opened = [{"count": 50_000} for _ in range(30)] + \
        [{"count": 1_000, "open": True, "held_fpp": 0.01, "unchanged": True}]
    assert compact_plan(opened, 50_000, 100, 10240, [1, 2])[2] == 0


def test_a_regular_poller_holding_past_hours_goes_hourly_even_with_version_2():
    # 23 closed hours of 280 held, the open hour unchanged, 3 IDs followed: every closed
    # hour held leaves no union to read (the flaw: counting held hours as to be read).
    hours = [{"count": 280, "held_fpp": 0.01} for _ in range(23)] + \
        [{"count": 280, "open": True, "unchanged": True}]
    assert cheapest_plan(hours, 0.01, 3000, 3, 10240, ribbon_versions=[1, 2]) == "hourly"
    assert compact_plan(hours, 3000, 3, 10240, [1, 2]) is None, "every closed hour held"
    assert compact_precision(hours, 3000, 3, 10240, [1, 2]) is None
