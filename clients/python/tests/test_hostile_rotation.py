"""Issue 53: a key the client trusts is replaced only by a change that key signed. A real
`bloomcast rotate-key` (its succession signed both ways) verifies from the old key and
from the new one, and leaves the old hours' signatures and ETags as they were; a key
file replaced by hand (acknowledging the old key, never vouched for by it) gets its
hours refused, naming it, by a client given the old key, and accepted by one given the
new key."""

import json
import pathlib

import pytest

from bloomcast_client import hour_path
from bloomcast_client.cli import main
from bloomcast_client.verify import key_id
from conftest import NO_BINARY, bloomcast_binary
from hostile import Sealed, get, rotate_key

BATCHES = [["r0:1", "r0:2"], ["r1:1", "r1:2"], ["open:1"]]
IDS = ["r0:1", "r1:1", "open:1"]


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def public_of(data):
    """The public key (hex) of the server's key file."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    seed = bytes.fromhex(pathlib.Path(data, "signing-key").read_text().strip())
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(
        Encoding.Raw, PublicFormat.Raw).hex()


def publisher(tmp_path_factory, change):
    """A Sealed publisher of BATCHES whose key `change(binary, data)` replaced before
    its last start (the second sealed hour on). `.before`: its key until then;
    `.first_seen`: the first hour's .bin headers while that key was current."""
    binary = bloomcast_binary()
    if binary is None:
        pytest.skip(NO_BINARY)
    pytest.importorskip("cryptography", reason="signatures need the cryptography package")
    seen = {}

    def between(data, i):
        if i == len(BATCHES) - 1:
            seen["before"] = public_of(data)
            change(binary, data)

    def during(server, i, hours):
        if i == 1:
            seen["first"] = get(server.base + hour_path(hours[0]) + ".bin")[1]
    made = Sealed(binary, tmp_path_factory.mktemp("publisher"), BATCHES, between, during)
    made.before, made.first_seen = seen["before"], seen["first"]
    return made


@pytest.fixture(scope="module")
def rotated(tmp_path_factory):
    made = publisher(tmp_path_factory, rotate_key)
    yield made
    made.close()


@pytest.fixture(scope="module")
def replaced(tmp_path_factory):
    def by_hand(binary, data):
        pathlib.Path(data, "signing-key").write_text("42" * 32)
    made = publisher(tmp_path_factory, by_hand)
    yield made
    made.close()


def test_rotate_key_lists_the_succession_signed_both_ways(rotated):
    keys = json.loads(get(rotated.base + "/.well-known/bloomcast.json")[2])["keys"]
    assert [k["public_key"] for k in keys] == [rotated.before, rotated.pubkey]
    assert keys[1]["vouch"] and keys[1]["ack"] and keys[1]["first_hour"] == rotated.hours[1]


@pytest.mark.parametrize("which", ["old key", "new key"])
def test_a_rotation_verifies_and_answers_from_either_key(rotated, capsys, which):
    key = rotated.before if which == "old key" else rotated.pubkey
    code, out, err = run(capsys, "check", "--server", rotated.base, "--since",
                         rotated.hours[0], "--pubkey", key, "--json", *IDS)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["changed"] == IDS and doc["unverified"] == [] and doc["stale"] == []
    code, out, err = run(capsys, "verify", "--pubkey", key, "--since", rotated.hours[0],
                         "--url", rotated.base)
    assert code == 0 and out.splitlines()[-1] == "verified 2 hours", err


def test_the_old_hours_keep_their_signatures_and_etags(rotated):
    _, now, _ = get(rotated.base + hour_path(rotated.hours[0]) + ".bin")
    for name in ("ETag", "Bloom-Signature", "Bloom-Prev-Header"):
        assert now[name] == rotated.first_seen[name], name


def test_a_key_replaced_by_hand_is_refused_from_the_old_key_naming_it(replaced, capsys):
    new = key_id(bytes.fromhex(replaced.pubkey))
    code, out, err = run(capsys, "check", "--server", replaced.base, "--since",
                         replaced.hours[0], "--pubkey", replaced.before, *IDS)
    assert code == 1 and out == ""
    assert f"hour {replaced.hours[1]}: it is listed under key {new}, which is refused: no " \
        "key you trust vouched for it" in err, err
    code, _, err = run(capsys, "verify", "--pubkey", replaced.before, "--since",
                       replaced.hours[0], "--url", replaced.base)
    assert code == 1 and new in err, err


def test_a_key_replaced_by_hand_still_verifies_from_the_new_key(replaced, capsys):
    code, out, err = run(capsys, "check", "--server", replaced.base, "--since",
                         replaced.hours[0], "--pubkey", replaced.pubkey, *IDS)
    assert code == 0 and out.split() == IDS, err
