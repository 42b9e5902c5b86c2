"""The version 2 compact form (PROTOCOL.md section 12, "Version 2"): the decoder against
docs/ribbon2-vectors.json, its decoding rules, the grades, Client.ribbon2 (on canned
responses, no server) and the choice of version 2 where the index lists it."""

import json
import math

import pytest

from bloomcast_client import (Client, HTTPError, ProtocolError, Ribbon2, RibbonError,
                              cheapest_form, grade_for_fpp, hour_path, hourly_is_cheaper)
from bloomcast_client.ribbon2 import (RIBBON2_GRID, fpp_param, grade_fpp, ribbon2_bytes, route,
                                      row, selftest_ribbon2)
from conftest import ROOT

VECTORS = ROOT / "docs" / "ribbon2-vectors.json"
SEALED, OPEN = "/2026/11/23/09", "/2026/11/23/10"
SEALED_NAME, OPEN_NAME = "2026-11-23T09:00:00Z", "2026-11-23T10:00:00Z"


def vectors():
    return json.loads(VECTORS.read_text(encoding="utf-8"))


def members(v):
    m = v["members"]
    return [f"{m['prefix']}{m['first'] + i * m['step']}" for i in range(m["count"])]


def body(count):
    """The body of the vectors' filter of `count` members."""
    v = next(f for f in vectors()["filters"] if f["members"]["count"] == count)
    return bytearray.fromhex(v["body"])


# --- the vectors ------------------------------------------------------------------------

def test_every_ribbon2_vector_holds():
    assert selftest_ribbon2(VECTORS) == 18 + 7 + 6


def test_rows_and_routes_match_the_vectors():
    for v in vectors()["rows"]:
        assert row(v["h1"], v["h2"], v["part"] == "A", v["seed"], v["m"]) == \
            (v["start"], int(v["coeff"], 16), int(v["fingerprint"], 16))
        r = v["route"]
        assert route(v["h1"], v["h2"], r["split"], r["sA"], r["sB"]) == \
            (r["part"] == "A", r["shard"])
    assert any(v["m"] == 0 and v["coeff"] == "0" * 32 for v in vectors()["rows"])


@pytest.mark.parametrize("index", range(6))
def test_members_answer_true_and_absent_ids_as_the_vectors_say(index):
    v = vectors()["filters"][index]
    ribbon = Ribbon2.from_bytes(bytes.fromhex(v["body"]))
    assert (ribbon.n, ribbon.k, ribbon.split) == (v["members"]["count"], v["k"], v["split"])
    assert [ribbon.shards_a, ribbon.shards_b] == v["shards"]
    assert ribbon.fpp == grade_fpp(v["k"], v["split"]) <= v["fpp"]
    assert all(ribbon.contains(i) for i in members(v))
    assert [ribbon.contains(a["id"]) for a in v["absent"]] == \
        [a["contains"] for a in v["absent"]]


def test_an_empty_filter_answers_false():
    ribbon = Ribbon2.from_bytes(body(0))
    assert (ribbon.n, ribbon.shards, ribbon.rows) == (0, [], 0)
    assert not any(ribbon.contains(f"x:{i}") for i in range(100))


def test_part_b_at_k_0_answers_true():
    # fpp 0.6: k = 0, split 205; part B's shard has no rows and answers true.
    ribbon = Ribbon2.from_bytes(body(300))
    assert (ribbon.k, ribbon.shards[1][0]) == (0, 0)
    found = sum(ribbon.contains(f"x:{i}") for i in range(4000))
    assert abs(found / 4000 - ribbon.fpp) < 0.05


def test_the_false_positive_rate_is_the_grades():
    ribbon = Ribbon2.from_bytes(body(9000))  # k = 4, split = 103: 0.04993
    found = sum(ribbon.contains(f"absent:{i}") for i in range(20_000))
    assert abs(found / 20_000 - ribbon.fpp) < 0.006


# --- grades -------------------------------------------------------------------------------

def test_grades_match_the_vectors():
    for v in vectors()["grades"]:
        assert grade_for_fpp(v["fpp"]) == (v["k"], v["split"]), v
        assert grade_fpp(v["k"], v["split"]) == v["grade_fpp"]


def test_every_precision_maps_to_the_cheapest_grade_at_or_below_it():
    for q in range(4 * 31 + 1):
        p = 2.0 ** -(q / 4)
        if p >= 1:
            continue
        k, split = grade_for_fpp(p)
        assert grade_fpp(k, split) <= p
        # The next cheaper grade is above p.
        cheaper = (k, split - 1) if split else (k - 1, 255)
        assert cheaper[0] < 0 or grade_fpp(*cheaper) > p
    # Powers of two are exact: 2^-k is (k, 0), not (k - 1, 256) nor (k + 1, ...).
    assert [grade_for_fpp(2.0 ** -k) for k in (1, 7, 24, 31)] == \
        [(1, 0), (7, 0), (24, 0), (31, 0)]
    assert grade_for_fpp(0.99) == (0, 6)


@pytest.mark.parametrize("p", [1.0, 0.0, 2.0 ** -32, float("nan"), float("inf"), -0.5])
def test_a_precision_outside_the_grid_is_refused(p):
    with pytest.raises(ValueError, match="fpp"):
        grade_for_fpp(p)


# --- decoding rules -----------------------------------------------------------------------

def test_damaged_bodies_are_refused_with_the_reason():
    good = body(1000)
    assert Ribbon2.from_bytes(good).n == 1000
    with pytest.raises(RibbonError, match="shorter than the header"):
        Ribbon2.from_bytes(good[:3])
    with pytest.raises(RibbonError, match='magic is not "BCR2"'):
        Ribbon2.from_bytes(b"BCR1" + good[4:])
    with pytest.raises(RibbonError, match="expected"):
        Ribbon2.from_bytes(good[:-1])
    with pytest.raises(RibbonError, match="expected"):
        Ribbon2.from_bytes(good + b"\0")
    k = bytearray(good)
    k[4] = 40
    with pytest.raises(RibbonError, match="k = 40"):
        Ribbon2.from_bytes(k)
    with pytest.raises(RibbonError, match="the header ends inside"):
        Ribbon2.from_bytes(good[:7])


def test_set_padding_is_refused():
    good = body(3)  # 3 keys: 2 rows of 7 bits and 1 of 6, 20 bits: 4 padding bits
    ribbon = Ribbon2.from_bytes(good)
    assert sum(m * (ribbon.k + (i < ribbon.shards_a)) for i, (m, _) in
               enumerate(ribbon.shards)) % 8
    bad = bytearray(good)
    bad[-1] |= 0x80
    with pytest.raises(RibbonError, match="padding"):
        Ribbon2.from_bytes(bad)


def header(k, split, *varints):
    out = bytearray(b"BCR2" + bytes([k, split]))
    for v in varints:
        while v >= 0x80:
            out.append(v & 0x7F | 0x80)
            v >>= 7
        out.append(v)
    return out


@pytest.mark.parametrize("bad,why", [
    (header(31, 1, 0, 0, 0), "k = 31, split = 1"),
    (header(6, 0, 0, 1, 0) + b"\x01\0\0", "sA = 1 with split = 0"),
    (b"BCR2\x06\xb9\x80\x00\x00\x00", "n is not minimally encoded"),
    (b"BCR2\x06\xb9\x80\x80\x80\x80\x10\x00\x00", "n is 2.32 or more"),
    (b"BCR2\x06\xb9\x80\x80\x80\x80\x80\x00\x00", "n is longer than 5 bytes"),
    (b"BCR2\x06\xb9\x00\x00", "the header ends inside sB"),
    (header(6, 185, 3, 1, 1) + b"\x02", "do not fit"),
    (header(6, 185, 3, 1, 1) + b"\x02\x00\x80\x01", "the header ends inside a shard's seed"),
    (header(0, 10, 5, 1, 1) + b"\x05\x00\x01\x00" + bytes(1), "part B has m = 1 with k = 0"),
])
def test_broken_headers_are_refused(bad, why):
    with pytest.raises(RibbonError, match=why):
        Ribbon2.from_bytes(bytes(bad))


def test_the_largest_varint_is_read():
    # n = 2^32 - 1 (5 bytes), no shard, no solution.
    ribbon = Ribbon2.from_bytes(b"BCR2\x06\xb9\xff\xff\xff\xff\x0f\x00\x00")
    assert ribbon.n == 2**32 - 1 and not ribbon.contains("a")


# --- Client.ribbon2, on canned responses ----------------------------------------------------

class Canned:
    """Stands in for Client._request: answers each path from `bodies` (or an HTTPError
    status), records paths and headers."""

    def __init__(self, bodies):
        self.bodies, self.paths, self.headers = bodies, [], []

    def __call__(self, path, headers=None, body=None, dictionary=None):
        self.paths.append(path)
        self.headers.append(headers or {})
        answer = self.bodies[path.split("?")[0]]
        if isinstance(answer, int):
            raise HTTPError(answer, "not_acceptable", "no compact form")
        return 200, {}, bytes(answer)


def test_client_ribbon2_asks_for_version_2_and_holds_the_most_precise():
    client = Client("127.0.0.1:1")
    canned = client._request = Canned({SEALED + ".ribbon2": body(1000), OPEN + ".ribbon2": 406})
    ribbon = client.ribbon2("2026-11-23T09", 0.001)
    assert canned.paths == [SEALED + ".ribbon2?fpp=1e-3"]
    assert canned.headers[0]["Accept"] == "application/vnd.bloomcast.ribbon; v=2"
    assert (ribbon.n, ribbon.k, ribbon.split) == (1000, 9, 250)
    assert client.ribbon2("2026-11-23T09", 0.01) is ribbon  # held, as precise or more
    assert client.ribbon2(SEALED, 0.001) is ribbon
    assert len(canned.paths) == 1
    assert (client.ribbon_fetches, client.ribbon2_fetches) == (1, 1)
    # Less precise than asked for: fetched again; the more precise stays held.
    canned.bodies[SEALED + ".ribbon2"] = body(9000)
    worse = client.ribbon2(SEALED, 0.0001)
    assert worse.k == 4 and client.ribbons2[SEALED] is ribbon
    assert canned.paths[-1] == SEALED + ".ribbon2?fpp=1e-4"
    client.ribbon2(SEALED)  # without fpp: the server's target, always asked
    assert canned.paths[-1] == SEALED + ".ribbon2"
    with pytest.raises(HTTPError) as e:
        client.ribbon2(OPEN)
    assert e.value.status == 406


def test_client_ribbon2_refuses_a_damaged_body_naming_the_url():
    client = Client("127.0.0.1:1")
    client._request = Canned({SEALED + ".ribbon2": body(1000)[:-1]})
    with pytest.raises(ProtocolError, match=r"/2026/11/23/09.ribbon2\?fpp=1e-2: .*expected"):
        client.ribbon2(SEALED, 0.01)


# --- choosing version 2 --------------------------------------------------------------------

def test_the_cheapest_form_is_version_2_where_the_index_lists_it():
    for args in [(280, 0.01, 45_754), (3_000, 0.01, 45_754, 0), (300, 0.01, 1),
                 (300, 0.01, 100), (30_000, 0.01, 10**7)]:
        v1, cost1 = cheapest_form(*args)
        assert cheapest_form(*args, ribbon_versions=[1]) == (v1, cost1)
        assert cheapest_form(*args, ribbon_versions=None) == (v1, cost1)
        (name, p), cost2 = cheapest_form(*args, ribbon_versions=[1, 2])
        assert v1[0] == "ribbon" and name == "ribbon2", args
        assert p in RIBBON2_GRID and cost2 < cost1
    # Following many IDs: the most precise grid points; following none, the coarsest.
    assert cheapest_form(280, 0.01, 45_754, ribbon_versions=[1, 2])[0] == \
        ("ribbon2", 2.0 ** -23)
    assert cheapest_form(3_000, 0.01, 45_754, 0, ribbon_versions=[1, 2])[0] == \
        ("ribbon2", 0.0625)
    # An empty hour: a v2 body of no key answers false, and is smaller than v1's.
    assert cheapest_form(0, 0.01, 45_754)[0] == ("bloom", None)
    assert cheapest_form(0, 0.01, 45_754, ribbon_versions=[1, 2])[0][0] == "ribbon2"


def test_version_2_sizes_follow_the_formula_and_the_vectors():
    # 12 + 4 S + ceil(n bits 1.005 / 8) + S bits / 2, within a few bytes of the vectors'.
    assert ribbon2_bytes(0, 0.01) == 12
    assert ribbon2_bytes(3_000, 2.0 ** -7) == 12 + 4 + 2639 + 3.5
    for v in vectors()["filters"]:
        if v["members"]["count"] >= 1000:
            predicted = ribbon2_bytes(v["members"]["count"], v["fpp"])
            assert abs(predicted - len(v["body"]) / 2) < 0.01 * len(v["body"]) / 2 + 12


def test_version_2_makes_reading_hour_by_hour_cheaper():
    hours = [{"count": 280} for _ in range(23)] + [{"count": 0, "open": True}]
    assert hourly_is_cheaper(hours, 0.01, 3000, 45_754, 10240, ribbon_versions=[1, 2])
    # Same answers without version 2 as before.
    assert hourly_is_cheaper(hours, 0.01, 3000, 45_754, 10240)
    small = [{"count": 5} for _ in range(47)] + [{"count": 5, "open": True}]
    assert not hourly_is_cheaper(small, 0.01, 3000, 1, 10240, ribbon_versions=[1, 2])


def index(versions=None, count=280):
    out = {"target_fpp": 0.01, "capacity": 3000,
           "hours": [{"hour": SEALED_NAME, "count": count}, {"hour": OPEN_NAME, "count": 0}]}
    if versions is not None:
        out["ribbon_versions"] = versions
    return out


IDS = [f"f:{i}" for i in range(2000)]


@pytest.mark.parametrize("versions,suffix", [
    (None, ".ribbon?fpp="), ([1], ".ribbon?fpp="), ([1, 2], ".ribbon2?fpp=")])
def test_changed_since_asks_for_the_version_the_index_lists(fake_server, versions, suffix):
    # The stub server has no compact form (404): the v1 filter answers instead.
    server = fake_server(index=index(versions),
                         hours={SEALED: (["f:1"], True), OPEN: ([], False)})
    client = Client(server.base)
    found = client.changed_since(IDS, "2026-11-23T09", per_hour=True)
    assert found[0][:2] == (SEALED_NAME, SEALED_NAME) and "f:1" in found[0][2]
    asked = [(p, h) for p, h in zip(server.paths, server.headers) if ".ribbon" in p]
    assert len(asked) == 1 and asked[0][0].startswith(SEALED + suffix), server.paths
    if versions == [1, 2]:
        p = float(asked[0][0].split("=", 1)[1])
        assert p in RIBBON2_GRID and asked[0][0].endswith("=" + fpp_param(p))
        assert asked[0][1]["Accept"] == "application/vnd.bloomcast.ribbon; v=2"
    else:  # 2^-r, whole bits
        assert math.log2(float(asked[0][0].split("=", 1)[1])).is_integer()
        assert "Accept" not in asked[0][1]


def test_changed_since_reads_a_version_2_hour_and_keeps_it(fake_server):
    server = fake_server(index=index([1, 2], count=1000),
                         hours={SEALED: ([], True), OPEN: ([], False)})
    client = Client(server.base)
    real = client._request
    served = []

    def request(path, headers=None, body_=None, dictionary=None):
        if ".ribbon2" in path:
            served.append(path)
            return 200, {}, bytes(body(1000))
        return real(path, headers, body_, dictionary)

    client._request = request
    v = vectors()["filters"][3]
    ids = members(v)[:50] + [a["id"] for a in v["absent"]]
    want = members(v)[:50] + [a["id"] for a in v["absent"] if a["contains"]]
    assert client.changed_since(ids, "2026-11-23T09", per_hour=True) == \
        [(SEALED_NAME, SEALED_NAME, want)]
    assert len(served) == 1 and client.ribbon2_fetches == 1
    assert SEALED not in server.paths and SEALED + ".bin" not in server.paths
    # Held: asked again, the hour is answered from it.
    client.changed_since(ids, "2026-11-23T09", per_hour=True)
    assert len(served) == 1


# --- against the real server -------------------------------------------------------------

def _closed_hour_on_a_live_server(tmp_path, ids):
    """A real server whose clock is set so that its hour ends a few seconds after start,
    `ids` ingested into that hour, and the hour closed: (server, hour). Skips without a
    bloomcast binary; tries again if the ingest slipped into the next hour."""
    import datetime
    import urllib.request
    from conftest import LIVE_TOKEN, NO_BINARY, LiveServer, bloomcast_binary

    binary = bloomcast_binary()
    if binary is None:
        pytest.skip(NO_BINARY)
    for attempt in range(3):
        now = datetime.datetime.now(datetime.timezone.utc).timestamp()
        offset = int(3600 - 6 - now % 3600)  # the server's hour ends in 6 s
        data = tmp_path / f"server{attempt}"
        data.mkdir()
        server = LiveServer(binary, data, BLOOMCAST_CLOCK_OFFSET_SECONDS=str(offset))
        request = urllib.request.Request(
            server.base + "/updates", data="\n".join(ids).encode(), method="POST",
            headers={"Authorization": f"Bearer {LIVE_TOKEN}", "Content-Type": "text/plain"})
        with urllib.request.urlopen(request, timeout=30) as reply:
            hour = json.load(reply)["hour"]
        ending = datetime.datetime.fromtimestamp(now + offset, datetime.timezone.utc)
        if hour.startswith(ending.strftime("%Y-%m-%dT%H")):
            return server, hour
        server.close()
    pytest.fail("the ingest kept landing in the next hour")


def test_a_live_server_serves_every_precision_this_decoder_reads(tmp_path):
    import time
    ids = [f"user:{i}" for i in range(3000)]
    server, hour = _closed_hour_on_a_live_server(tmp_path, ids)
    try:
        client = Client(server.base)
        deadline = time.monotonic() + 30
        while True:  # 406 until the hour closes
            try:
                f = client.ribbon2(hour, 0.05)
                break
            except HTTPError as e:
                if e.status != 406 or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        import urllib.request
        for fpp in (0.05, 0.0437, 0.01, 0.001, 2.2e-5, 2.0 ** -20):
            f = client.ribbon2(hour, fpp)
            assert f.fpp <= fpp and f.n == 3000
            assert all(f.contains(i) for i in ids), fpp
            url = f"{server.base}{hour_path(hour)}.ribbon2?fpp={fpp_param(fpp)}"
            with urllib.request.urlopen(url, timeout=30) as reply:
                body = reply.read()
            # Near the floor of the published grade served (the next stricter).
            assert len(body) <= 1.05 * 3000 * math.log2(1 / f.fpp) / 8, (fpp, len(body))
            assert Ribbon2.from_bytes(body).fpp == f.fpp
        # 0.05 and 0.0437 are one grade (2^-5, the next stricter of the server's set): the
        # body held for the first answers the second.
        assert client.ribbon2_fetches == 5
        positives = sum(f.contains(f"absent:{i}") for i in range(20000))
        assert positives <= 20000 * 2.0 ** -20 + 3.3 * math.sqrt(20000 * 2.0 ** -20) + 1
    finally:
        server.close()
