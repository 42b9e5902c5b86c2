"""Exact hours through the client (PROTOCOL.md section 14) against the stub server:
Client.exact, `check` choosing and forcing the exact form, Repr-Digest and signatures;
and against the real server (skipped without its binary)."""

import hashlib
import json
import sys

import pytest

from bloomcast_client import (Client, Exact, HTTPError, MissingDependency, ProtocolError,
                              VerificationError)
from bloomcast_client.cli import main
from bloomcast_client.verify import exact_message, header, hour_index, signed_message
from conftest import ROOT

SEALED, OPEN = "/2026/11/23/09", "/2026/11/23/10"
SEALED_NAME, OPEN_NAME = "2026-11-23T09:00:00Z", "2026-11-23T10:00:00Z"
# RFC 8032 test 1: the key docs/chain-vectors.json signs with.
SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
PUBKEY = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"


def vector(universe=1000):
    bodies = json.loads((ROOT / "docs" / "exact-vectors.json").read_text("utf-8"))["bodies"]
    return next(b for b in bodies if b["universe"] == universe)


def universe(v):
    return [f"u:{i}" for i in range(v["universe"])]


def index(exact_since=SEALED_NAME, exact_bytes=None, count=200):
    sealed = {"hour": SEALED_NAME, "count": count}
    if exact_bytes is not None:
        sealed["exact_bytes"] = exact_bytes
    return {"exact_since": exact_since, "target_fpp": 0.01, "capacity": 3000,
            "hours": [sealed, {"hour": OPEN_NAME, "count": 0}]}


def serve(fake_server, body=None, headers=None, **kwargs):
    v = vector()
    body = bytes.fromhex(v["body"]) if body is None else body
    kwargs.setdefault("index", index(exact_bytes=len(body)))
    return fake_server(hours={SEALED: (v["changed"], True), OPEN: ([], False)},
                       exact={SEALED: (body, headers or {})}, **kwargs)


def check(server, *args, ids=None):
    return main(["check", "--server", server.base, "--since", "2026-11-23T09", "--json",
                 *args, *(ids or universe(vector()))])


def test_client_exact_reads_a_sealed_hour_and_answers_exactly(fake_server):
    server = serve(fake_server)
    client = Client(server.base)
    exact = client.exact("2026-11-23T09")
    v = vector()
    assert (exact.universe, exact.changed_count, exact.k) == (1000, 200, v["k"])
    assert [i for i in universe(v) if exact.changed(i)] == v["changed"]
    assert client.exact("2026-11-23T09") is exact  # held: immutable
    assert server.paths == [SEALED + ".exact"]
    assert server.headers[0]["Accept"] == "application/vnd.bloomcast.exact"


def test_no_exact_body_is_none_and_the_open_hour_is_406(fake_server):
    server = serve(fake_server)
    client = Client(server.base)
    assert client.exact("2026-11-23T08") is None
    with pytest.raises(HTTPError) as e:
        client.exact("2026-11-23T10")
    assert e.value.status == 406


def test_check_of_ids_declared_registered_prefers_the_exact_body_alone(fake_server, capsys):
    server = serve(fake_server)
    assert check(server, "--registered") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["changed"] == vector()["changed"]  # no false positive among 1000 IDs
    assert out["exact"] == 1 and out["ribbons"] == 0
    assert out["exacts"] == 1  # as `bloomcast check --json` writes it too, when above 0
    assert SEALED + ".exact" in server.paths
    assert not any(p.startswith(SEALED) and not p.endswith(".exact") for p in server.paths)
    assert any(p.startswith(OPEN) for p in server.paths)  # the open hour: v1
    assert not any(p.startswith(OPEN) and p.endswith(".exact") for p in server.paths)


def test_an_hour_not_listed_is_judged_by_the_v1_bodys_expected_bytes(fake_server, capsys):
    # exact_since before the listed hours: 08 is not listed, and has no exact body (404),
    # so the v1 filter answers for it; 09 is read exact.
    size = len(bytes.fromhex(vector()["body"]))
    server = serve(fake_server, index={**index(exact_bytes=size),
                                       "exact_since": "2026-11-23T08:00:00Z"})
    assert main(["check", "--server", server.base, "--since", "2026-11-23T08", "--json",
                 "--strategy", "hourly", "--registered", *universe(vector())]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "/2026/11/23/08.exact" in server.paths and SEALED + ".exact" in server.paths
    assert set(vector()["changed"]) <= set(out["changed"])


def test_after_one_exact_body_refused_hours_as_large_are_not_asked(fake_server, capsys):
    # The server will not build these hours' exact bodies (406: over its build budget).
    # Later hours hold at least the universe the first had: one refusal, then the
    # approximate forms; nothing missed.
    v = vector()
    hours = ["/2026/11/23/06", "/2026/11/23/07", "/2026/11/23/08", SEALED]
    names = [f"2026-11-23T{h[-2:]}:00:00Z" for h in hours]
    server = fake_server(
        hours={**{h: (v["changed"], True) for h in hours}, OPEN: ([], False)},
        exact={h: 406 for h in hours},
        index={"exact_since": names[0], "target_fpp": 0.01, "capacity": 3000,
               "hours": [{"hour": n, "count": 200} for n in names] +
               [{"hour": OPEN_NAME, "count": 0}]})
    assert main(["check", "--server", server.base, "--since", "2026-11-23T06", "--json",
                 "--strategy", "hourly", "--registered", *universe(v)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(v["changed"]) <= set(out["changed"])
    assert out["exact"] == 0
    assert [p for p in server.paths if p.endswith(".exact")] == [hours[0] + ".exact"]


def test_a_larger_exact_body_than_the_cheapest_form_is_not_read(fake_server, capsys):
    server = serve(fake_server, index=index(exact_bytes=10_000_000))
    assert check(server, "--strategy", "hourly", ids=["u:0"]) == 0
    json.loads(capsys.readouterr().out)
    assert SEALED + ".exact" not in server.paths


def test_without_exact_since_no_exact_body_is_asked_for(fake_server, capsys):
    server = serve(fake_server, index=index(exact_since=None))
    assert check(server, "--strategy", "hourly") == 0
    capsys.readouterr()
    assert not any(p.endswith(".exact") for p in server.paths)


def test_forced_exact_reads_every_sealed_hour_exact(fake_server, capsys):
    # Listed without exact_bytes, and a large one: --exact reads it exact all the same:
    # alone for IDs declared registered, else with the v1 filter it refines.
    for declared in (["--registered"], []):
        server = serve(fake_server, index=index())
        assert check(server, "--exact", *declared) == 0
        assert json.loads(capsys.readouterr().out)["changed"] == vector()["changed"]
        assert SEALED + ".exact" in server.paths
        filters = [p for p in server.paths if p.startswith(SEALED) and ".exact" not in p]
        assert bool(filters) == (not declared), server.paths


def test_forced_exact_fails_clearly_without_a_universe(fake_server, capsys):
    server = serve(fake_server, index=index(exact_since=None))
    assert check(server, "--exact") == 1
    err = capsys.readouterr().err
    assert "no exact hours" in err and "exact_since null" in err
    assert not any(p.endswith(".exact") for p in server.paths)


def test_forced_exact_fails_clearly_on_a_missing_body(fake_server, capsys):
    server = serve(fake_server, index={**index(), "exact_since": "2026-11-23T08:00:00Z"})
    assert main(["check", "--server", server.base, "--since", "2026-11-23T08",
                 "--exact", "u:0"]) == 1
    assert "hour 2026-11-23T08:00:00Z: the server has no exact body for it" in \
        capsys.readouterr().err


def test_forced_exact_refuses_a_union(fake_server, capsys):
    server = serve(fake_server)
    assert check(server, "--exact", "--strategy", "union") == 1
    assert "--exact" in capsys.readouterr().err and not server.paths


def tampered():
    body = bytearray.fromhex(vector()["body"])
    body[60] ^= 0x10  # a solution bit: still a well-formed body
    return bytes(body)


def test_a_tampered_body_fails_its_repr_digest(fake_server, capsys):
    original = bytes.fromhex(vector()["body"])
    import base64
    digest = "sha-256=:" + base64.b64encode(hashlib.sha256(original).digest()).decode() + ":"
    server = serve(fake_server, body=tampered(), headers={"Repr-Digest": digest})
    with pytest.raises(ProtocolError, match="does not match its Repr-Digest"):
        Client(server.base).exact(SEALED)
    assert check(server, "--registered") == 1
    assert "Repr-Digest" in capsys.readouterr().err


def test_headers_that_disagree_with_the_body_are_refused(fake_server):
    server = serve(fake_server, headers={"Bloom-Universe": "999"})
    with pytest.raises(ProtocolError, match="Bloom-Universe is 999, the body says 1000"):
        Client(server.base).exact(SEALED)


def test_an_exact_body_refines_the_filter_for_ids_not_declared_registered(fake_server):
    # IDs outside the universe that the exact body alone calls changed (its answer for
    # them is arbitrary) but the hour's filter does not hold: refined, never flagged.
    server = serve(fake_server)
    body = Exact.from_bytes(bytes.fromhex(vector()["body"]))
    hour_filter = Client(server.base).filter(SEALED)
    outsiders = [f"nobody:{i}" for i in range(1000)]
    wrong = [i for i in outsiders if body.changed(i) and not hour_filter.contains(i)]
    assert len(wrong) > 100
    ids = universe(vector()) + wrong

    refined = Client(server.base).changed_since(ids, SEALED_NAME, exact=True)
    alone = Client(server.base, registered=True).changed_since(ids, SEALED_NAME, exact=True)

    assert refined == [(SEALED_NAME, SEALED_NAME, vector()["changed"])]
    assert alone == [(SEALED_NAME, SEALED_NAME, vector()["changed"] + wrong)]


# --- signatures (section 14, signatures and the chain) ----------------------------------

@pytest.fixture
def signer():
    ed25519 = pytest.importorskip(
        "cryptography.hazmat.primitives.asymmetric.ed25519",
        reason="signatures need the cryptography package (extra verify)")
    return ed25519.Ed25519PrivateKey.from_private_bytes(SEED)


def signed(signer, body, signed_body=None):
    """The stub's exact headers and chain entry for SEALED, its exact body signed
    (signed_body: the bytes the signature was made over, when not `body`)."""
    index_ = hour_index(__import__("bloomcast_client").parse_hour(SEALED_NAME))
    digest, prev = hashlib.sha256(b"the v1 hour's bytes").digest(), bytes(32)
    h = header(digest, prev)
    entry = {"hour": SEALED_NAME, "digest": digest.hex(), "prev": prev.hex(),
             "header": h.hex(), "signature": signer.sign(signed_message(index_, h)).hex(),
             "key_id": "21fe31dfa154a261"}
    signature = signer.sign(exact_message(index_, h, signed_body or body)).hex()
    headers = {"Bloom-Signature": f'{signature}; keyid="21fe31dfa154a261"',
               "Bloom-Prev-Header": prev.hex()}
    return headers, {SEALED: entry}


def checkpoint(signer):
    """A checkpoint of SEALED, the newest sealed hour, made now (the client's clock)."""
    from bloomcast_client import coverage
    from bloomcast_client.trust import checkpoint_message
    index_ = hour_index(__import__("bloomcast_client").parse_hour(SEALED_NAME))
    h = header(hashlib.sha256(b"the v1 hour's bytes").digest(), bytes(32))
    made = int(coverage.clock())
    return {"hour": SEALED_NAME, "header": h.hex(), "made": made, "key_id": "21fe31dfa154a261",
            "signature": signer.sign(checkpoint_message(made, index_, h)).hex()}


def test_a_signed_exact_body_verifies_against_its_chain_entry(fake_server, signer, capsys):
    body = bytes.fromhex(vector()["body"])
    headers, chain = signed(signer, body)
    server = serve(fake_server, body=body, headers=headers, chain=chain)
    server.checkpoint = checkpoint(signer)
    assert Client(server.base, pubkey=PUBKEY).exact(SEALED).universe == 1000
    assert "/chain" + SEALED + "?limit=" in "".join(server.paths)
    assert check(server, "--pubkey", PUBKEY, "--registered") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["changed"] == vector()["changed"]
    assert out["unverified"] == [OPEN_NAME], "the stub's open hour is not signed"


def test_a_tampered_signed_body_fails_its_signature(fake_server, signer, capsys):
    # Repr-Digest made for the altered bytes (as a mirror could): the signature catches it.
    original = bytes.fromhex(vector()["body"])
    headers, chain = signed(signer, tampered(), signed_body=original)
    server = serve(fake_server, body=tampered(), headers=headers, chain=chain)
    with pytest.raises(VerificationError, match="2026-11-23T09:00:00Z: the exact body's "
                       "signature does not verify"):
        Client(server.base, pubkey=PUBKEY).exact(SEALED)
    assert check(server, "--pubkey", PUBKEY) == 1
    assert "signature does not verify" in capsys.readouterr().err


def test_an_exact_body_signed_for_another_hour_fails(fake_server, signer):
    body = bytes.fromhex(vector()["body"])
    headers, chain = signed(signer, body)
    chain[SEALED]["hour"] = "2026-11-23T08:00:00Z"  # the chain has no entry for 09
    server = serve(fake_server, body=body, headers=headers, chain=chain)
    with pytest.raises(VerificationError):
        Client(server.base, pubkey=PUBKEY).exact(SEALED)


def test_an_unsigned_exact_body_fails_under_a_pubkey(fake_server, signer):
    body = bytes.fromhex(vector()["body"])
    _, chain = signed(signer, body)
    server = serve(fake_server, body=body, chain=chain)
    with pytest.raises(VerificationError, match="exact body carries no signature"):
        Client(server.base, pubkey=PUBKEY).exact(SEALED)


def test_an_exact_body_makes_reading_hour_by_hour_cheaper_than_a_union():
    from bloomcast_client import hourly_is_cheaper
    # 24 sealed hours of 3000 IDs, 100 IDs followed at 10 KiB a fetch: one union costs
    # fewer bytes than any filter hour by hour, but not than exact bodies of 400 bytes.
    hours = [{"count": 3000} for _ in range(24)] + [{"count": 0, "open": True}]
    assert not hourly_is_cheaper(hours, 0.01, 3000, 100, 10240)
    exact = [{"count": 3000, "exact_bytes": 400} for _ in range(24)] + hours[-1:]
    assert hourly_is_cheaper(exact, 0.01, 3000, 100, 10240, registered=True)
    # Not declared registered, each would be read with a filter at the target as well:
    # the union stays cheaper.
    assert not hourly_is_cheaper(exact, 0.01, 3000, 100, 10240)


def test_the_signed_message_is_domain_index_header_and_body_digest():
    h = bytes(range(32))
    message = exact_message(-1, h, b"BCX1")
    assert len(message) == 18 + 8 + 32 + 32
    assert message == (b"bloomcast-exact-v1" + b"\xff" * 8 + h
                       + hashlib.sha256(b"BCX1").digest())


def test_a_v1_hour_held_is_kept_unless_its_wasted_fetches_cost_more(fake_server):
    server = serve(fake_server)
    client = Client(server.base, registered=True)
    client.cache[SEALED] = ('"v1"', client.document(SEALED))  # the v1 hour, complete
    server.paths.clear()
    client.changed_since(["u:0"], "2026-11-23T09", per_hour=True)  # 1 x 0.01 x 10 KiB
    assert SEALED + ".exact" not in server.paths
    found = client.changed_since(universe(vector()), "2026-11-23T09", per_hour=True)
    assert SEALED + ".exact" in server.paths  # 1000 x 0.01 x 10 KiB: the exact body
    assert found == [(SEALED_NAME, SEALED_NAME, vector()["changed"])]


# --- the real server ----------------------------------------------------------------------

def test_the_real_servers_exact_hour_answers_exactly_and_verifies(tmp_path):
    """A universe and changes recorded an hour back (clock_offset_seconds), the server
    restarted on time: the hour is sealed, and `check --exact` reads it exact, signed."""
    import re
    import urllib.request

    from conftest import LIVE_TOKEN, NO_BINARY, LiveServer, bloomcast_binary
    binary = bloomcast_binary()
    if binary is None:
        pytest.skip(NO_BINARY)
    data = tmp_path / "server"
    data.mkdir()
    ids = [f"u:{i}" for i in range(2000)]
    changed = ids[::37]

    def post(base, path, batch):
        request = urllib.request.Request(
            base + path, data=json.dumps({"ids": batch}).encode(),
            headers={"Authorization": "Bearer " + LIVE_TOKEN,
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    server = LiveServer(binary, data, BLOOMCAST_CLOCK_OFFSET_SECONDS="-3600")
    try:
        assert post(server.base, "/universe", ids)["count"] == len(ids)
        hour = post(server.base, "/updates", changed)["hour"]
    finally:
        server.close()
    # Restarted an hour past its last heartbeat on purpose: a tolerance above that lets
    # the start follow the clock (further past, a start is held as a jump).
    server = LiveServer(binary, data, BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS="7200")
    try:
        pubkey = re.search(r"--pubkey ([0-9a-f]{64})", server.log_text()).group(1)
        client = Client(server.base)
        index = client.index()
        assert index["exact_since"] == hour
        listed = next(h for h in index["hours"] if h["hour"] == hour)
        exact = client.exact(hour)
        assert listed["exact_bytes"] > 0 and exact.universe == len(ids)
        assert [i for i in ids if exact.changed(i)] == changed
        try:
            verifying = Client(server.base, pubkey=pubkey)
        except MissingDependency:  # no cryptography package: unverified
            verifying = Client(server.base)
        found = verifying.changed_since(ids, hour, exact=True)
        assert found[0] == (hour, hour, changed) and verifying.exact_fetches == 1
    finally:
        server.close()


def at_most_at_rate(n, p):
    """The most flags n trials at a rate of at most p give, with sampling error: the mean
    plus four standard deviations (exceeded with probability below 1e-4)."""
    return int(n * p + 4 * (n * p * (1 - p)) ** 0.5)


def test_the_real_servers_exact_hours_flag_unregistered_ids_at_most_at_the_target(
        tmp_path, capsys):
    """The README's quick start, sealed (a universe of three IDs registered, then 3,000
    IDs published, an hour back): `check` of 1,000 IDs never registered nor published,
    by default, hour by hour and verifying, flags at most the target's share; declared
    registered (falsely), the exact body alone flags nearly all of them (3,000 of the
    universe's 3,003 changed, so the body is complemented, version 2: an ID outside its
    universe answers changed but for a few)."""
    import re
    import urllib.request

    from conftest import LIVE_TOKEN, NO_BINARY, LiveServer, bloomcast_binary
    binary = bloomcast_binary()
    if binary is None:
        pytest.skip(NO_BINARY)
    data = tmp_path / "server"
    data.mkdir()

    def post(base, path, batch):
        request = urllib.request.Request(
            base + path, data=json.dumps({"ids": batch}).encode(),
            headers={"Authorization": "Bearer " + LIVE_TOKEN,
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    server = LiveServer(binary, data, BLOOMCAST_CLOCK_OFFSET_SECONDS="-3600")
    try:
        post(server.base, "/universe", ["user:1", "user:2", "user:5"])
        hour = post(server.base, "/updates", [f"h0:{i}" for i in range(3000)])["hour"]
    finally:
        server.close()
    server = LiveServer(binary, data, BLOOMCAST_CLOCK_JUMP_TOLERANCE_SECONDS="7200")
    try:
        pubkey = re.search(r"--pubkey ([0-9a-f]{64})", server.log_text()).group(1)
        assert Client(server.base).exact(hour) is not None  # read once: its size listed
        outsiders = [f"nobody:{i}" for i in range(1000)]
        bound = at_most_at_rate(1000, 0.01)  # one sealed hour, at most 0.01 each: 22
        runs = [[], ["--strategy", "hourly"], ["--registered"]]
        try:
            Client(server.base, pubkey=pubkey)
            runs.append(["--pubkey", pubkey])
        except MissingDependency:  # no cryptography package: not verified here
            pass
        for extra in runs:
            assert main(["check", "--server", server.base, "--since", hour, "--json",
                         *extra, *outsiders]) == 0
            out = json.loads(capsys.readouterr().out)
            flags = sum(len(r["ids"]) for r in out["ranges"])
            print(f"{extra[:2]}: {flags} of 1000 flagged, {out['exact']} exact bodies",
                  file=sys.__stderr__)
            assert out["exact"] == 1, extra
            if extra == ["--registered"]:
                assert flags > 10 * bound, flags
            else:
                assert flags <= bound, (extra, flags)
    finally:
        server.close()
