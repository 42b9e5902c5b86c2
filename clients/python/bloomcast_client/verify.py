"""Verifiable history (PROTOCOL.md section 11): digests, the hour chain and Ed25519
signatures. Hashing is standard library; checking signatures needs the optional
`cryptography` package (`pip install bloomcast-client[verify]`)."""

import datetime
import hashlib
import json

GENESIS = bytes(32)
DOMAIN = b"bloomcast-hour-v1"
EXACT_DOMAIN = b"bloomcast-exact-v1"
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class VerificationError(Exception):
    """A closed hour that does not verify against the publisher's key; names the hour."""


class MissingDependency(Exception):
    """Signatures cannot be checked without the `cryptography` package."""


def digest(data):
    """SHA-256 of a filter's bytes (the .bin body)."""
    return hashlib.sha256(bytes(data)).digest()


def header(digest_, prev):
    """SHA-256(digest || prev): an hour's link in the chain."""
    return hashlib.sha256(digest_ + prev).digest()


def hour_index(hour):
    """Hours since 1970-01-01T00Z of an aware datetime at the start of an hour."""
    return int((hour - EPOCH).total_seconds()) // 3600


def signed_message(index, header_):
    """The 57 bytes signed: domain, hour index (8 bytes big-endian, signed), header."""
    return DOMAIN + index.to_bytes(8, "big", signed=True) + header_


def exact_message(index, header_, body):
    """The 90 bytes an exact body is signed over (section 14): domain, hour index (8
    bytes big-endian, signed), the hour's chain header, SHA-256 of the body."""
    return (EXACT_DOMAIN + index.to_bytes(8, "big", signed=True) + header_
            + hashlib.sha256(bytes(body)).digest())


def key_id(public_key):
    """A key's id: the first 8 bytes of SHA-256 of its 32 bytes, 16 hex digits."""
    return hashlib.sha256(bytes(public_key)).digest()[:8].hex()


def parse_signature(value):
    """A Bloom-Signature value: (signature hex, key id or None). The signature comes
    first, then `;`-separated parameters; `keyid` is read (quoted or not), others are
    ignored. A bare signature names no key (the one listed for the hour)."""
    if value is None:
        return None, None
    parts = value.split(";")
    keyid = None
    for param in parts[1:]:
        name, _, v = param.partition("=")
        if name.strip().lower() == "keyid":
            keyid = v.strip().strip('"').lower()
    return parts[0].strip(), keyid


def _hour(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def parse_keys(listed):
    """The well-known document's `keys` as [(first index, last index or None, public key
    bytes, id)], oldest first, checked: ids match, ranges ordered and apart, only the
    newest open. Raises VerificationError otherwise."""
    out = []
    for k in listed:
        try:
            public = bytes.fromhex(k["public_key"])
            first = hour_index(_hour(k["first_hour"]))
            last = hour_index(_hour(k["last_hour"])) if k.get("last_hour") else None
        except (KeyError, TypeError, ValueError):
            raise VerificationError(f"the publisher's key list is refused: {k!r}") from None
        if len(public) != 32 or k.get("id") != key_id(public):
            raise VerificationError(f"the publisher's key list is refused: the id of "
                                    f"{k.get('public_key')} is not {k.get('id')}")
        if last is not None and last < first:
            raise VerificationError(f"the publisher's key list is refused: key {k['id']} "
                                    "ends before it starts")
        if out and (out[-1][1] is None or out[-1][1] >= first):
            raise VerificationError("the publisher's key list is refused: keys overlap or "
                                    "are out of order")
        out.append((first, last, public, k["id"]))
    return out


def extends(new, pinned, verified=None):
    """Raises VerificationError unless the key list `new` may replace `pinned` (both as
    parse_keys returns): every pinned key again with its first hour, an open one possibly
    retired (not before `verified`, the newest hour index verified), a retired one
    unchanged, new keys after them."""
    for i, (first, last, public, id_) in enumerate(pinned):
        if i >= len(new) or new[i][2] != public or new[i][0] != first:
            raise VerificationError(f"the key list does not extend the one pinned: key {id_} "
                                    "is missing, replaced or moved")
        if last is not None and new[i][1] != last:
            raise VerificationError(f"the key list does not extend the one pinned: key {id_} "
                                    "had its last hour changed")
        if (last is None and new[i][1] is not None and verified is not None
                and first <= verified and new[i][1] < verified):
            raise VerificationError(f"the key list does not extend the one pinned: key {id_} "
                                    "is retired before an hour verified under it")


def _unhex(text, size, hour, what):
    try:
        raw = bytes.fromhex(text or "")
    except ValueError:
        raw = b""
    if len(raw) != size:
        raise VerificationError(f"hour {hour}: {what} missing or not {size} bytes of hex: "
                                "not signed")
    return raw


class Verifier:
    """Checks closed hours against the publisher's key (64 hex digits), and the chain
    links between the hours it has checked. After `use_keys` with the well-known
    document's `keys` naming that key, each hour is checked against the key listed for
    it, and a signature naming a key listed for other hours is refused."""

    def __init__(self, pubkey_hex):
        try:
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        except ImportError:
            raise MissingDependency("verifying signatures needs the 'cryptography' package "
                                    "(pip install cryptography)") from None
        self._load = Ed25519PublicKey.from_public_bytes
        try:
            given = bytes.fromhex(pubkey_hex.strip())
            self._load(given)
        except ValueError:
            raise ValueError(f"not a public key: {pubkey_hex!r} (expected 64 hex digits, "
                             "an Ed25519 public key)") from None
        self.given = given
        self.keys = [(None, None, given, key_id(given))]  # the key given, for every hour
        self.headers = {}  # hour index -> (prev, header)

    def use_keys(self, listed):
        """Adopts the publisher's key list (the well-known `keys`) if it names the key
        given; otherwise the key given alone stays trusted. Returns whether adopted."""
        keys = parse_keys(listed or [])
        if not any(k[2] == self.given for k in keys):
            return False
        self.keys = keys
        return True

    def _key_for(self, index, name, named):
        listed = next((k for k in self.keys if (k[0] is None or k[0] <= index)
                       and (k[1] is None or index <= k[1])), None)
        if listed is None:
            raise VerificationError(f"hour {name}: no key is listed for this hour")
        if named and named != listed[3]:
            whose = ("a key listed for other hours" if any(k[3] == named for k in self.keys)
                     else "a key that is not listed")
            raise VerificationError(f"hour {name}: signed by key {named}, {whose}; the key "
                                    f"listed for it is {listed[3]}")
        return listed[2]

    def _signature_ok(self, index, header_, signature, key, message=None):
        from cryptography.exceptions import InvalidSignature
        try:
            self._load(key).verify(signature, message or signed_message(index, header_))
            return True
        except InvalidSignature:
            return False

    def check_entry(self, entry, hour):
        """Verifies one chain entry (a dict of `/chain/...?limit=1`) of `hour`: its
        header, signature and key, and its link to hours verified before; returns its
        header."""
        name = hour.strftime("%Y-%m-%dT%H:00:00Z")
        listed = entry.get("hour")
        if not listed or _hour(listed) != hour:
            raise VerificationError(f"hour {name}: the chain has no entry for it")
        self.check_chain([entry])
        index = hour_index(hour)
        prev = _unhex(entry.get("prev"), 32, name, "prev")
        h = _unhex(entry.get("header"), 32, name, "header")
        self._link(index, name, prev, h)
        self.headers[index] = (prev, h)
        return h

    def _link(self, index, name, prev, h):
        known = self.headers.get(index - 1)
        if known and known[1] != prev:
            raise VerificationError(f"hour {name}: its chain link does not follow the "
                                    "previous hour's header")
        after = self.headers.get(index + 1)
        if after and after[0] != h:
            raise VerificationError(f"hour {name}: the next hour, verified before, links "
                                    "to another header")

    def check_exact(self, hour, body, header_, prev_hex, signature_hex):
        """Verifies an hour's exact body (section 14) given the hour's chain header,
        verified before (the v1 hour's or its chain entry's), and the response's
        Bloom-Prev-Header (when sent) and Bloom-Signature."""
        name = hour.strftime("%Y-%m-%dT%H:00:00Z")
        index = hour_index(hour)
        known = self.headers.get(index)
        if prev_hex is not None and known and \
                _unhex(prev_hex, 32, name, "Bloom-Prev-Header") != known[0]:
            raise VerificationError(f"hour {name}: the exact body's Bloom-Prev-Header is "
                                    "not the chain's link for the hour")
        signature_hex, named = parse_signature(signature_hex)
        signature = _unhex(signature_hex, 64, name, "Bloom-Signature")
        key = self._key_for(index, name, named)
        if not self._signature_ok(index, header_, signature, key,
                                  exact_message(index, header_, body)):
            raise VerificationError(f"hour {name}: the exact body's signature does not "
                                    "verify with the key listed for the hour: the bytes "
                                    "were altered")

    def check(self, hour, data, prev_hex, signature_hex, listed_digest=None):
        """Verifies one hour (an aware datetime) whose filter bytes are `data`, given the
        response's Bloom-Prev-Header and Bloom-Signature; returns its header."""
        name = hour.strftime("%Y-%m-%dT%H:00:00Z")
        index = hour_index(hour)
        prev = _unhex(prev_hex, 32, name, "Bloom-Prev-Header")
        signature_hex, named = parse_signature(signature_hex)
        signature = _unhex(signature_hex, 64, name, "Bloom-Signature")
        key = self._key_for(index, name, named)
        d = digest(data)
        if listed_digest is not None and listed_digest.lower() != d.hex():
            raise VerificationError(f"hour {name}: the filter's digest is {d.hex()}, but the "
                                    f"document says {listed_digest}: the bytes were altered")
        known = self.headers.get(index - 1)
        if known and known[1] != prev:
            raise VerificationError(f"hour {name}: its chain link does not follow the "
                                    "previous hour's header")
        h = header(d, prev)
        if not self._signature_ok(index, h, signature, key):
            raise VerificationError(f"hour {name}: the signature does not verify with the "
                                    "public key given")
        after = self.headers.get(index + 1)
        if after and after[0] != h:
            raise VerificationError(f"hour {name}: the next hour, verified before, links "
                                    "to another header")
        self.headers[index] = (prev, h)
        return h

    def check_chain(self, entries):
        """Verifies a /chain listing (a list of dicts), oldest first: headers, signatures
        and links; a gap must restart from the genesis value. Returns {hour: digest}."""
        out, last = {}, None
        for e in entries:
            name = e.get("hour", "?")
            hour = datetime.datetime.fromisoformat(name.replace("Z", "+00:00"))
            index = hour_index(hour)
            d = _unhex(e.get("digest"), 32, name, "digest")
            prev = _unhex(e.get("prev"), 32, name, "prev")
            h = _unhex(e.get("header"), 32, name, "header")
            signature = _unhex(e.get("signature"), 64, name, "signature")
            key = self._key_for(index, name, e.get("key_id"))
            if header(d, prev) != h:
                raise VerificationError(f"hour {name}: the listed header is not "
                                        "SHA-256(digest || prev)")
            if last is not None:
                if last[0] + 1 == index and last[1] != prev:
                    raise VerificationError(f"hour {name}: its chain link does not follow "
                                            "the previous hour's header")
                if last[0] + 1 != index and prev != GENESIS:
                    raise VerificationError(f"hour {name}: the hours before it are missing "
                                            "from the chain")
            if not self._signature_ok(index, h, signature, key):
                raise VerificationError(f"hour {name}: the signature does not verify with "
                                        "the public key given")
            out[hour] = d
            last = (index, h)
        return out


def selftest_chain(path):
    """Checks digests, headers and signed messages of docs/chain-vectors.json, and the
    signatures when `cryptography` is installed; returns the number of hours checked."""
    with open(path, encoding="utf-8") as f:
        vectors = json.load(f)
    from . import Filter
    prev = bytes.fromhex(vectors["genesis"])
    for v in vectors["hours"]:
        f = Filter(v["m"], v["k"])
        for id_ in v["ids"]:
            f.add(id_)
        checks = [
            f.hex() == v["bin_hex"],
            digest(f.data).hex() == v["digest"],
            v["prev"] == prev.hex(),
            header(digest(f.data), prev).hex() == v["header"],
            signed_message(v["index"], bytes.fromhex(v["header"])).hex() == v["signed_message"],
        ]
        if not all(checks):
            raise VerificationError(f"chain vector mismatch at {v['hour']}: {checks}")
        prev = bytes.fromhex(v["header"])
    try:
        verifier = Verifier(vectors["public_key"])
    except MissingDependency:
        return len(vectors["hours"])
    verifier.check_chain([{**v} for v in vectors["hours"]])
    return len(vectors["hours"])
