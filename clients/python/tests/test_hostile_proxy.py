"""Issue 53, cases 2, 4 and 5: a tampering proxy in front of a real server. A forged
ribbon (another hour's body under the hour's headers) is refused naming the hour, one
stripped of its signature is not used (the hour's v1 filter is read instead); an index
withholding the newest hours gets exit 3, naming them, unless --accept-stale; the open
hour zeroed is refused by its signature, served stripped of it is reported unverified,
an old version is refused past the freshness bound, and a sealed hour passed off as
open is refused."""

import json

import pytest

from bloomcast_client import Client, VerificationError, coverage, hour_path
from bloomcast_client.cli import main
from hostile import TamperingProxy, get

RIBBONS = (".ribbon", ".ribbon2")
EXPENSIVE = ("--fetch-cost", "100000000")  # every sealed hour read as its finest ribbon


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def proxy(origin):
    """A TamperingProxy in front of the origin; call it with the tampering."""
    made = []

    def start(tamper):
        made.append(TamperingProxy(origin.base, tamper))
        return made[-1]
    yield start
    for p in made:
        p.close()


def check(capsys, source, origin, *extra):
    ids = ["h0:7", "h1:7", "h2:7", "open:1"]
    return run(capsys, "check", "--server", source, "--since", origin.hours[0], "--pubkey",
               origin.pubkey, "--json", *extra, *ids)


def test_the_honest_origin_is_read_with_verified_ribbons(origin, capsys):
    code, out, err = check(capsys, origin.base, origin, *EXPENSIVE)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["changed"] == ["h0:7", "h1:7", "h2:7", "open:1"]
    assert doc["ribbons"] == 3 and doc["unverified"] == [] and doc["stale"] == []
    assert (doc["from"], doc["to"]) == (origin.hours[0], origin.hours[-1])


def swapped(origin, strip=False):
    """Each ribbon of the second sealed hour replaced by the first hour's (stripped of
    its Bloom-Signature with `strip`)."""
    second = hour_path(origin.hours[1])

    def tamper(path, status, headers, body):
        bare = path.split("?", 1)[0]
        if bare in (second + s for s in RIBBONS):
            body = get(origin.base + path.replace(second, hour_path(origin.hours[0])))[2]
            if strip:
                headers.pop("bloom-signature", None)
        return status, headers, body
    return tamper


def test_forged_ribbons_are_refused_naming_the_hour(origin, proxy, capsys):
    p = proxy(swapped(origin))
    client = Client(p.base, pubkey=origin.pubkey)
    with pytest.raises(VerificationError, match=f"hour {origin.hours[1]}: the ribbon's "
                       "signature does not verify"):
        client.ribbon(origin.hours[1])
    with pytest.raises(VerificationError, match=f"hour {origin.hours[1]}: the version 2 "
                       "ribbon's signature does not verify"):
        client.ribbon2(origin.hours[1])
    code, out, err = check(capsys, p.base, origin, *EXPENSIVE)
    assert code == 1 and json.loads(out)["error"] == "unverified"
    assert f"hour {origin.hours[1]}: the version 2 ribbon's signature does not verify" in err


def test_ribbons_stripped_of_their_signature_are_not_used(origin, proxy, capsys):
    p = proxy(swapped(origin, strip=True))
    code, out, err = check(capsys, p.base, origin, *EXPENSIVE)
    assert code == 0, err
    assert json.loads(out)["changed"] == ["h0:7", "h1:7", "h2:7", "open:1"]
    second = hour_path(origin.hours[1])
    assert any(path.startswith(second + ".ribbon2") for path in p.paths)
    assert second in p.paths, "the hour's v1 filter, read instead"


def withholding(origin, shown):
    """An index whose current hour is the sealed hour `shown`, the ones after it gone."""
    def tamper(path, status, headers, body):
        if path == "/":
            index = json.loads(body)
            index["hours"] = [h for h in index["hours"] if h["hour"] <= shown]
            index["current"] = {"hour": shown, "url": hour_path(shown)}
            body = json.dumps(index).encode()
        return status, headers, body
    return tamper


def test_an_index_withholding_the_newest_hours_exits_3_naming_them(origin, proxy, capsys):
    p = proxy(withholding(origin, origin.hours[0]))
    code, out, err = check(capsys, p.base, origin)
    assert code == 3
    doc = json.loads(out)
    assert doc["changed"] == ["h0:7"] and doc["to"] == origin.hours[0]
    assert f"withholds hours: the publisher's signed checkpoint names {origin.hours[2]} " \
        f"sealed, but it offers sealed hours only through {origin.hours[0]}" in err, err
    assert f"the newest hour it offers is {origin.hours[0]} (served)" in err
    code, _, err = check(capsys, p.base, origin, "--accept-stale")
    assert code == 0 and "(accepted: --accept-stale)" in err
    # Without a key, its age alone says so (read hour by hour: a union's `to` is the
    # server's own current hour, whatever the index says).
    code, _, err = run(capsys, "check", "--server", p.base, "--hours", "6", "--strategy",
                       "hourly", "h0:7")
    assert code == 3 and f"the newest hour it offers is {origin.hours[0]}" in err


def test_the_sdk_raises_stale_with_the_answer_unless_accepted(origin, proxy):
    p = proxy(withholding(origin, origin.hours[1]))
    with pytest.raises(coverage.Stale) as e:
        Client(p.base, pubkey=origin.pubkey).changed_since(["h1:7"], origin.hours[0],
                                                           per_hour=True)
    assert e.value.changes == [(origin.hours[1], origin.hours[1], ["h1:7"])]
    accepted = Client(p.base, pubkey=origin.pubkey, accept_stale=True).changed_since(
        ["h1:7"], origin.hours[0], per_hour=True)
    assert accepted.stale and accepted.last == origin.hours[1]


def open_hour(origin, strip=False):
    """The open hour's filter zeroed, in every representation (stripped of its
    Bloom-Open-Signature with `strip`)."""
    stem = hour_path(origin.hours[-1])

    def tamper(path, status, headers, body):
        if path.split("?")[0] not in (stem, stem + ".json", stem + ".bin") or status != 200:
            return status, headers, body
        if path.endswith(".bin"):
            body = bytes(len(body))
        else:
            doc = json.loads(body)
            doc["filter"] = "00" * (len(doc["filter"]) // 2)
            doc.pop("digest", None)
            body = json.dumps(doc).encode()
        headers.pop("etag", None)
        if strip:
            headers.pop("bloom-open-signature", None)
        return status, headers, body
    return tamper


def test_a_zeroed_open_hour_is_refused_by_its_signature(origin, proxy, capsys):
    p = proxy(open_hour(origin))
    code, _, err = run(capsys, "check", "--server", p.base, "--hours", "6", "--pubkey",
                       origin.pubkey, "open:1")
    assert code == 1
    assert f"hour {origin.hours[-1]} (open): the signature of this version does not " \
        "verify" in err, err
    with pytest.raises(VerificationError, match="open"):
        Client(p.base, pubkey=origin.pubkey).document(hour_path(origin.hours[-1]) + ".bin")


def test_an_open_hour_without_its_signature_is_reported_unverified(origin, proxy, capsys):
    p = proxy(open_hour(origin, strip=True))
    code, out, err = run(capsys, "check", "--server", p.base, "--hours", "6", "--pubkey",
                         origin.pubkey, "--json", "open:1")
    assert code == 0, err
    assert json.loads(out)["unverified"] == [origin.hours[-1]]
    assert f"unverified (no signature to check): {origin.hours[-1]}" in err


def test_an_open_version_older_than_the_freshness_bound_is_refused(origin, capsys,
                                                                  monkeypatch):
    late = coverage.clock() + 700
    monkeypatch.setattr(coverage, "clock", lambda: late)
    code, _, err = run(capsys, "check", "--server", origin.base, "--hours", "2", "--pubkey",
                       origin.pubkey, "open:1")
    assert code == 1 and "past the freshness bound of 600 s" in err, err
    code, out, err = run(capsys, "check", "--server", origin.base, "--hours", "2",
                         "--pubkey", origin.pubkey, "--freshness", "3600", "open:1")
    assert code == 0 and out.split() == ["open:1"], err


def test_a_sealed_hour_passed_off_as_open_is_refused(origin, proxy, capsys):
    second = hour_path(origin.hours[1])

    def reopen(path, status, headers, body):
        if path.startswith(second + ".ribbon"):  # no compact form: the v1 filter is read
            return 404, {"content-type": "application/json"}, b'{"error": "not_found", ' \
                b'"message": "none"}'
        if path == second:
            doc = json.loads(body)
            doc["complete"], doc["filter"] = False, "00" * (len(doc["filter"]) // 2)
            doc.pop("digest", None)
            body = json.dumps(doc).encode()
            headers.pop("bloom-signature", None)
            headers.pop("bloom-prev-header", None)
        return status, headers, body
    p = proxy(reopen)
    code, _, err = check(capsys, p.base, origin)
    assert code == 1
    assert f"hour {origin.hours[1]}: served as open (complete: false)" in err, err


def test_a_watch_given_the_key_ends_on_a_zeroed_open_hour_naming_it(origin, proxy, capsys,
                                                                   monkeypatch):
    # --poll: the watch ends at its first sleep, between polls (the proxy, reading whole
    # bodies, could not pass the event stream on anyway).
    from bloomcast_client import cli_reading
    monkeypatch.setattr(cli_reading, "sleep", lambda s: (_ for _ in ()).throw(
        KeyboardInterrupt))
    p = proxy(open_hour(origin))
    code, out, err = run(capsys, "watch", "--poll", "--server", p.base, "--pubkey", origin.pubkey,
                         "open:1")
    assert code == 1 and out == ""
    assert f"hour {origin.hours[-1]} (open): the signature of this version" in err, err
    code, out, err = run(capsys, "watch", "--poll", "--server", origin.base, "--pubkey",
                         origin.pubkey, "open:1")
    assert code == 0 and out == "open:1\n", err


def test_a_watch_given_the_key_says_an_unsigned_open_hour_is_unverified(origin, proxy,
                                                                       capsys, monkeypatch):
    from bloomcast_client import cli_reading
    monkeypatch.setattr(cli_reading, "sleep", lambda s: (_ for _ in ()).throw(
        KeyboardInterrupt))
    p = proxy(open_hour(origin, strip=True))
    code, out, err = run(capsys, "watch", "--poll", "--server", p.base, "--pubkey", origin.pubkey,
                         "open:1")
    assert code == 0 and out == ""
    assert f"unverified: hour {origin.hours[-1]} (open): no Bloom-Open-Signature" in err
