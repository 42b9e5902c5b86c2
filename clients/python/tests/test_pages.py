"""An hour by the page (PROTOCOL.md section 12, "Huge hours by the page (`.pages`)"):
the decoder and its refusals, each page's signature, Client.pages by HTTP Range, and
the choice of pages when reading hour by hour, against the real server with two sealed
hours seeded by examples/seed_closed_hour (3,000 IDs `small:*`, 100,000 IDs `big:*`),
a tampering proxy in front of it and a static mirror made of it."""

import math
import pathlib
import subprocess
import urllib.request

import pytest

from bloomcast_client import (Client, ProtocolError, Unsigned, VerificationError,
                              hour_path, parse_hour)
from bloomcast_client.pages import (HEADER_LEN, Page, PagesError, PagesHeader, key64,
                                    page_of, pages_for, parse_body, predicted_slot_bytes,
                                    reading_bytes, signed_page)
from conftest import NO_BINARY, LiveServer, bloomcast_binary, recording as counting

SMALL, BIG = 3000, 100_000


class Seeded:
    """A real server over a store seeded with a closed hour of SMALL IDs `small:i`, 3
    hours ago, and one of BIG IDs `big:i`, 2 hours ago, both sealed and signed at its
    start: `small`, `big` their RFC 3339 names, `pubkey` its key."""

    def __init__(self, binary, seeder, data):
        from hostile import away_from_the_hours_end, pubkey_of
        away_from_the_hours_end()
        data.mkdir()
        hours = []
        for n, ago, prefix in ((SMALL, 3, "small"), (BIG, 2, "big")):
            done = subprocess.run([seeder, str(data), str(n), str(ago), prefix],
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            hours.append(parse_hour(done.stdout.strip()).strftime("%Y-%m-%dT%H:00:00Z"))
        self.small, self.big = hours
        self.server = LiveServer(binary, data)
        self.base = self.server.base
        self.pubkey = pubkey_of(self.server)
        self._bodies = {}

    def body(self, hour, suffix=".pages"):
        """The whole body of the hour's form (no Range), read once."""
        url = self.base + hour_path(hour) + suffix
        if url not in self._bodies:
            with urllib.request.urlopen(url, timeout=120) as reply:
                self._bodies[url] = reply.read()
        return self._bodies[url]

    def close(self):
        self.server.close()


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    binary = bloomcast_binary()
    if binary is None:
        pytest.skip(NO_BINARY)
    seeder = pathlib.Path(binary).parent / "examples" / "seed_closed_hour"
    if not seeder.exists():
        pytest.skip("no seed_closed_hour example: run `cargo build --example "
                    "seed_closed_hour` at the repository root")
    pytest.importorskip("cryptography", reason="signatures need the cryptography package "
                        "(extra verify)")
    s = Seeded(binary, str(seeder), tmp_path_factory.mktemp("pages") / "server")
    yield s
    s.close()


def small_ids(n=SMALL):
    return [f"small:{i}" for i in range(n)]


def absent(n, tag="absent"):
    return [f"{tag}:{i}" for i in range(n)]


def slot_of(body, header, p):
    first, end = header.slot_range(p)
    return bytearray(body[first:end])


# --- the decoder ----------------------------------------------------------------------------

def test_a_key_s_page_is_its_low_56_bits_scaled_to_the_pages():
    assert page_of(0, 7) == 0
    assert page_of((1 << 56) - 1, 7) == 6
    assert page_of(0xFF << 56, 7) == 0  # the selector byte takes no part
    assert page_of(1 << 55, 2) == 1 and page_of((1 << 55) - 1, 2) == 0
    for i in range(200):
        key = key64(f"id:{i}")
        assert page_of(key, 1563) == (key % 2 ** 56) * 1563 // 2 ** 56
    assert [pages_for(n) for n in (0, 1, 64, 65, 100_000)] == [1, 1, 1, 2, 1563]


def test_the_predicted_slot_is_the_mean_page_and_five_deviations():
    mean = BIG / 1563
    solution = math.ceil((mean + 5 * math.sqrt(mean) + 2) * (6 + 185 / 256) / 8)
    assert predicted_slot_bytes(BIG, 6, 185) == 66 + 13 + solution
    slot = predicted_slot_bytes(BIG, 6, 185)
    # Each page weighed with its headers and its round trip (PAGE_ROUND_TRIP).
    assert reading_bytes(BIG, 6, 185, 3) == 72 + 3 * (slot + 400 + 4096) + 400


def test_the_whole_body_holds_every_seeded_id(seeded):
    for hour, prefix, n in ((seeded.small, "small", SMALL), (seeded.big, "big", BIG)):
        header, pages = parse_body(seeded.body(hour))
        assert (header.n, header.pages) == (n, pages_for(n))
        assert header.signed and header.fpp <= 0.01
        assert all(pages[header.page_of(key)].contains_key(key)
                   for key in (key64(f"{prefix}:{i}") for i in range(n)))
        # The prediction a client chooses by, near the slot built.
        assert abs(predicted_slot_bytes(n, header.k, header.split) / header.slot - 1) < 0.2


def test_the_decoder_refuses_what_the_section_says(seeded):
    body = bytes(seeded.body(seeded.small))
    header, pages = parse_body(body)
    for at, value, what in ((0, ord("X"), "magic"), (4, 32, "no such grade"),
                            (6, 1, "no such grade")):
        bad = bytearray(body)
        bad[at] = value
        with pytest.raises(PagesError, match=what):
            PagesHeader.parse(bad)
    for field, value in ((slice(64, 68), 0), (slice(68, 72), 65)):
        bad = bytearray(body[:HEADER_LEN])
        bad[field] = value.to_bytes(4, "big")
        with pytest.raises(PagesError, match="at least one page"):
            PagesHeader.parse(bad)
    with pytest.raises(PagesError, match="bytes where the header says"):
        parse_body(body[:-1])
    more = bytearray(body)
    more[56:64] = (SMALL + 1).to_bytes(8, "big")
    with pytest.raises(PagesError, match="pages hold 3000 keys"):
        parse_body(more)

    # A slot: L overrunning it, padding not zero, a body of another grade, another size.
    p = min(range(len(pages)), key=lambda q: pages[q].n)  # the emptiest: it has padding
    slot = slot_of(body, header, p)
    assert Page.parse(header, p, slot).n == pages[p].n
    over = bytearray(slot)
    over[64:66] = (header.slot - 65).to_bytes(2, "big")
    with pytest.raises(PagesError, match="do not fit"):
        Page.parse(header, p, over)
    padded = bytearray(slot)
    padded[-1] = 1
    with pytest.raises(PagesError, match="padding is not zero"):
        Page.parse(header, p, padded)
    other = bytearray(body[:HEADER_LEN])
    other[4] += 1
    with pytest.raises(PagesError, match="grade"):
        Page.parse(PagesHeader.parse(other), p, slot)
    with pytest.raises(PagesError, match="bytes where the header says"):
        Page.parse(header, p, slot[:-1])
    with pytest.raises(PagesError):
        Page.parse(header, header.pages, slot)


# --- signatures -----------------------------------------------------------------------------

def test_each_page_verifies_alone_and_any_byte_changed_is_refused(seeded):
    from bloomcast_client.verify import Verifier
    hour = parse_hour(seeded.small)
    body = bytes(seeded.body(seeded.small))
    header, pages = parse_body(body)
    verifier = Verifier(seeded.pubkey)
    verifier.check_pages_header(hour, header)
    for p in range(header.pages):
        verifier.check_page(hour, header, p, slot_of(body, header, p))
    p = 5
    slot = slot_of(body, header, p)
    # The message, spelled out: domain || hour index || chain header || SHA-256(header
    # || p || the slot after its signature), under the server's key.
    import hashlib
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    index = int((hour.timestamp()) // 3600)
    message = (b"bloomcast-page-v1" + index.to_bytes(8, "big") + body[16:48]
               + hashlib.sha256(body[:HEADER_LEN] + p.to_bytes(4, "big")
                                + bytes(slot[64:])).digest())
    assert signed_page(header.raw, p, slot) == \
        body[:HEADER_LEN] + p.to_bytes(4, "big") + bytes(slot[64:])
    Ed25519PublicKey.from_public_bytes(bytes.fromhex(seeded.pubkey)).verify(
        bytes(slot[:64]), message)
    length = int.from_bytes(slot[64:66], "big")
    for at in (0, 63, 64, 65, 66, 66 + length // 2, 66 + length - 1, len(slot) - 1):
        bad = bytearray(slot)
        bad[at] ^= 0x10
        with pytest.raises(VerificationError, match=f"page {p} of the paged form"):
            verifier.check_page(hour, header, p, bad)
    # Another page's number, or another header (its n, its P), is another message.
    with pytest.raises(VerificationError):
        verifier.check_page(hour, header, p + 1, slot)
    changed = bytearray(header.raw)
    changed[63] ^= 1
    with pytest.raises(VerificationError):
        verifier.check_page(hour, PagesHeader.parse(changed), p, slot)
    # No signature: unsigned, not tampered (the client reads the hour whole).
    zero = bytearray(slot)
    zero[:64] = bytes(64)
    with pytest.raises(Unsigned):
        verifier.check_page(hour, header, p, zero)
    unsigned = bytearray(header.raw)
    unsigned[48:56] = bytes(8)
    with pytest.raises(Unsigned):
        verifier.check_pages_header(hour, PagesHeader.parse(unsigned))
    # Another hour's pages; a key id naming no listed key.
    with pytest.raises(VerificationError, match="not .*another hour's pages"):
        verifier.check_pages_header(parse_hour(seeded.big), header)
    stranger = bytearray(header.raw)
    stranger[48] ^= 1
    with pytest.raises(VerificationError, match="not listed"):
        verifier.check_pages_header(hour, PagesHeader.parse(stranger))


# --- reading by Range -------------------------------------------------------------------------

def test_every_seeded_id_answers_true_by_its_page(seeded):
    client = Client(seeded.base, pubkey=seeded.pubkey)
    paged = client.pages(seeded.small, small_ids())
    assert not paged.complete and len(paged.pages) == pages_for(SMALL) == 47
    assert client.paged_fetches == 1 and client.page_fetches == 47
    assert all(paged.contains(i) for i in small_ids())
    # A few IDs of the big hour: their pages alone.
    ids = [f"big:{i}" for i in range(0, BIG, 997)]
    paged = client.pages(seeded.big, ids)
    assert all(paged.contains(i) for i in ids)
    assert client.page_fetches == 47 + len({paged.header.page_of_id(i) for i in ids})


def test_answers_are_the_whole_paged_body_s(seeded):
    client = Client(seeded.base, pubkey=seeded.pubkey)
    ids = absent(20_000)
    paged = client.pages(seeded.small, ids)
    header, pages = parse_body(seeded.body(seeded.small))
    whole = [pages[header.page_of(key64(i))].contains(i) for i in ids]
    got = [paged.contains(i) for i in ids]
    assert got == whole
    positives = sum(got)
    fpp = header.fpp
    assert abs(positives - 20_000 * fpp) < 5 * math.sqrt(20_000 * fpp) + 5, positives
    # The big hour, at another grade (?fpp=): a few hundred absent IDs, page by page.
    ids = absent(300, "gone")
    paged = client.pages(seeded.big, ids, 2.0 ** -10)
    assert paged.header.k == 10 and paged.header.split == 0
    fetched = client.page_fetches
    with urllib.request.urlopen(f"{seeded.base}{hour_path(seeded.big)}.pages?fpp=9.765625e-4",
                                timeout=120) as reply:
        header, pages = parse_body(reply.read())
    assert [paged.contains(i) for i in ids] == \
        [pages[header.page_of(key64(i))].contains(i) for i in ids]
    assert client.page_fetches == fetched  # every page was read before


def test_a_few_ids_of_a_big_hour_cost_a_sliver_of_the_whole_body(seeded):
    ids = ["big:17", "big:99999", "big:50000", "nobody:1", "nobody:2"]
    client = Client(seeded.base)
    paged = client.pages(seeded.big, ids)
    needed = len({paged.header.page_of_id(i) for i in ids})
    assert client.requests == 1 + needed
    assert client.wire_bytes == HEADER_LEN + needed * paged.header.slot
    whole = len(seeded.body(seeded.big, ".ribbon2"))
    assert whole > 80_000 and client.wire_bytes * 50 < whole, (client.wire_bytes, whole)
    assert [paged.contains(i) for i in ids[:3]] == [True] * 3


@pytest.mark.parametrize("pubkey", [False, True])
@pytest.mark.parametrize("strategy", ["auto", "hourly", "pages"])
def test_reading_hour_by_hour_takes_the_pages_of_a_big_hour(seeded, pubkey, strategy):
    ids = ["big:3", "big:77777", "small:5", "nobody:1"]
    client = Client(seeded.base, pubkey=seeded.pubkey if pubkey else None, accept_stale=True)
    paths = counting(client)
    changes = client.changed_since(ids, seeded.big, strategy=strategy)
    flagged = {i for _, _, found in changes for i in found}
    assert {"big:3", "big:77777"} <= flagged
    big = hour_path(seeded.big)
    assert any(p.startswith(big + ".pages?fpp=") for p in paths) and client.page_fetches >= 1
    assert not any(p.startswith(big) and not p.startswith(big + ".pages") for p in paths)
    assert client.ribbon2_fetches <= 1  # the empty hour after it, at most
    assert client.wire_bytes < len(seeded.body(seeded.big, ".ribbon2")) / 5


def test_whole_reads_stay_where_pages_cost_more(seeded):
    # Every ID of a 3,000-ID hour: all 47 pages and their headers cost more than the body.
    client = Client(seeded.base)
    paths = counting(client)
    client.changed_since(small_ids(), seeded.small, strategy="hourly")
    assert client.page_fetches == 0 and not any(".pages" in p for p in paths)
    # Unless asked for.
    client = Client(seeded.base)
    changes = client.changed_since(small_ids(200), seeded.small, strategy="pages")
    assert client.page_fetches > 0
    assert set(small_ids(200)) <= {i for _, _, found in changes for i in found}


# --- what a cache or mirror may do ------------------------------------------------------------

def _proxy(seeded, tamper):
    from hostile import TamperingProxy
    return TamperingProxy(seeded.base, tamper)


def _page_ranges(path, status, headers):
    """Whether a response is a 206 of a slot (not the header) of a `.pages` body."""
    return ".pages" in path and status == 206 and \
        not headers.get("content-range", "").startswith("bytes 0-")


@pytest.mark.parametrize("at", ["solution", "header"])
def test_a_tampered_page_is_refused_with_the_key(seeded, at):
    def flip(path, status, headers, body):
        if _page_ranges(path, status, headers):
            body = bytearray(body)
            length = int.from_bytes(body[64:66], "big")
            # A bit of its solutions, or its version 2 header's k (malformed then).
            body[66 + length - 3 if at == "solution" else 70] ^= 1
        return status, headers, bytes(body)

    proxy = _proxy(seeded, flip)
    try:
        client = Client(proxy.base, pubkey=seeded.pubkey, accept_stale=True)
        with pytest.raises(VerificationError, match="paged form: its signature does not"):
            client.pages(seeded.big, ["big:1"])
        client = Client(proxy.base, pubkey=seeded.pubkey, accept_stale=True)
        with pytest.raises(VerificationError, match="paged form"):
            client.changed_since(["big:1", "x:1"], seeded.big, strategy="pages")
    finally:
        proxy.close()


def test_another_hour_s_header_is_refused(seeded):
    small = PagesHeader.parse(seeded.body(seeded.small)[:HEADER_LEN])

    def swap(path, status, headers, body):
        if ".pages" in path and status == 206 and \
                headers.get("content-range", "").startswith("bytes 0-71/"):
            body = bytes(body[:8]) + small.raw[8:16] + bytes(body[16:])
        return status, headers, body

    proxy = _proxy(seeded, swap)
    try:
        with pytest.raises(VerificationError, match="another hour's pages"):
            Client(proxy.base, pubkey=seeded.pubkey).pages(seeded.big, ["big:1"])
        with pytest.raises(ProtocolError, match="another hour's pages"):
            Client(proxy.base).pages(seeded.big, ["big:1"])
    finally:
        proxy.close()


def test_unsigned_pages_are_not_used_with_the_key_the_hour_is_read_whole(seeded):
    def unsign(path, status, headers, body):
        if _page_ranges(path, status, headers):
            body = bytes(64) + bytes(body[64:])
        return status, headers, body

    proxy = _proxy(seeded, unsign)
    try:
        ids = ["big:1", "big:2", "nobody:1"]
        client = Client(proxy.base, pubkey=seeded.pubkey, accept_stale=True)
        paths = counting(client)
        changes = client.changed_since(ids, seeded.big, strategy="pages")
        assert {"big:1", "big:2"} <= {i for _, _, found in changes for i in found}
        assert client.page_fetches == 0
        assert any(p.startswith(hour_path(seeded.big) + ".ribbon2") for p in paths)
        # Without a key there is nothing to verify: the pages are read.
        client = Client(proxy.base, accept_stale=True)
        client.changed_since(ids, seeded.big, strategy="pages")
        assert client.page_fetches >= 1
    finally:
        proxy.close()


def test_a_source_sending_the_whole_body_for_a_range_is_read_from_it(seeded):
    import http.client
    import http.server
    import threading
    import urllib.parse
    up = urllib.parse.urlsplit(seeded.base)

    class NoRanges(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # forwards without Range: the whole body, 200
            conn = http.client.HTTPConnection(up.hostname, up.port, timeout=120)
            conn.request("GET", self.path, headers={"Accept-Encoding": "identity"})
            r = conn.getresponse()
            body = r.read()
            self.send_response(r.status)
            for name, value in r.getheaders():
                if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoRanges)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        client = Client(f"http://127.0.0.1:{httpd.server_address[1]}", pubkey=seeded.pubkey)
        paged = client.pages(seeded.small, ["small:1", "nobody"])
        # One request for the hour (and one for the key list).
        assert paged.complete and len(paged.pages) == 47 and client.requests == 2
        assert client.page_fetches == 0  # no page read on its own: all came at once
        assert all(paged.contains(i) for i in small_ids())
        # Held whole: the hour is answered from it, with no request.
        before = client.requests
        assert client._held(hour_path(seeded.small)) is not None
        assert client.requests == before
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_server_without_pages_is_read_whole_and_not_asked_again(seeded):
    def gone(path, status, headers, body):
        if ".pages" in path:
            return 404, {"content-type": "application/json"}, \
                b'{"error": "not_found", "message": "no such form"}'
        return status, headers, body

    proxy = _proxy(seeded, gone)
    try:
        client = Client(proxy.base, accept_stale=True)
        paths = counting(client)
        changes = client.changed_since(["big:1", "x"], seeded.small, strategy="pages")
        assert ["big:1"] == [i for _, _, found in changes for i in found]
        assert sum(".pages" in p for p in paths) == 1 and client.pages_served is False
    finally:
        proxy.close()


def test_a_static_mirror_serves_pages_at_its_target(seeded, tmp_path):
    from hostile import mirror
    from conftest import bloomcast_binary as binary
    root = mirror(binary(), seeded.base, tmp_path / "m")
    big = hour_path(seeded.big)
    assert (root / (big.lstrip("/") + ".pages")).read_bytes() == seeded.body(seeded.big)
    ids = ["big:4", "big:40000", "nobody:7"]
    client = Client("file://" + str(root), pubkey=seeded.pubkey, accept_stale=True)
    paths = counting(client)
    changes = client.changed_since(ids, seeded.big, strategy="auto")
    assert [i for _, _, found in changes for i in found][:2] == ["big:4", "big:40000"]
    assert big + ".pages" in paths and client.page_fetches >= 1  # no ?fpp= on a mirror
    assert client.wire_bytes < len(seeded.body(seeded.big, ".ribbon2")) / 5
    # verify --dir checks the pages too: every page by its signature.
    checked = Client("file://" + str(root), pubkey=seeded.pubkey, accept_stale=True)
    assert checked.verify(seeded.small).unverified == []
    (root / (big.lstrip("/") + ".pages")).write_bytes(
        bytes(seeded.body(seeded.big)[:-1]) + b"\1")
    with pytest.raises(VerificationError, match=r"\.pages|paged form"):
        Client("file://" + str(root), pubkey=seeded.pubkey).verify(seeded.small)


def test_check_strategy_pages_on_the_command_line(seeded, capsys):
    import json
    from bloomcast_client.cli import main
    assert main(["check", "--server", seeded.base, "--since", seeded.big, "--strategy",
                 "pages", "--json", "--accept-stale", "big:8", "nobody:8"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["changed"][:1] == ["big:8"] and doc["pages"] >= 1
