"""The protocol pieces against the published test vectors and PROTOCOL.md's rules."""

import datetime

import pytest

from bloomcast_client import (Filter, ProtocolError, hour_path, parse_hour, selftest,
                              server_base)


def test_every_published_test_vector_holds(vectors_path):
    assert selftest(vectors_path) > 0


def test_a_filter_has_no_false_negatives_and_round_trips_through_hex():
    f = Filter(9586, 7)
    ids = [f"user:{i}" for i in range(1000)]
    for id_ in ids:
        f.add(id_)
    again = Filter.from_hex(9586, 7, f.hex())
    assert all(again.contains(id_) for id_ in ids)
    false_positives = sum(again.contains(f"absent:{i}") for i in range(10000))
    assert 0 < false_positives < 200


@pytest.mark.parametrize("m,k,data,why", [
    (7, 1, b"\0", "m out of range"),
    (8, 0, b"\0", "k out of range"),
    (8, 1, b"\0\0", "2 bytes"),
    (12, 1, b"\0\xf0", "bits set past m"),
])
def test_malformed_filters_are_refused(m, k, data, why):
    with pytest.raises(ProtocolError, match=why):
        Filter(m, k, data)


def test_hours_parse_in_every_documented_form():
    expected = datetime.datetime(2008, 9, 3, 5, tzinfo=datetime.timezone.utc)
    for text in ["2008-09-03T05", "2008-09-03T05:30:00Z", "2008/09/03/05", "/2008/09/03/05"]:
        assert parse_hour(text) == expected, text
    assert hour_path("2008-09-03T05") == "/2008/09/03/05"


def test_a_bad_hour_is_named_as_typed():
    with pytest.raises(ValueError, match="'yesterday' is not an hour"):
        parse_hour("yesterday")


def test_host_and_port_mean_plain_http():
    assert server_base("127.0.0.1:8080") == "http://127.0.0.1:8080"
    assert server_base("https://example.org/") == "https://example.org"
    with pytest.raises(ValueError, match="'ftp://x'"):
        server_base("ftp://x")
