"""Verifiable history (PROTOCOL.md section 11): digests, the hour chain and Ed25519
signatures of sealed hours, of their derived forms, of the open hour's versions and of
checkpoints, each under the key listed for its hour and trusted from the key given
(bloomcast_client.trust). Hashing is standard library; checking signatures needs the
optional `cryptography` package (`pip install bloomcast-client[verify]`)."""

import datetime
import hashlib
import json

from .trust import (EPOCH, Listed, Unsigned, VerificationError,  # noqa: F401 (re-exported)
                    checkpoint_message, extends, form_message, hour_index, key_id,
                    open_message, parse_keys, parse_open_signature, refusal, trusted_run)

GENESIS = bytes(32)
DOMAIN = b"bloomcast-hour-v1"
EXACT_DOMAIN = b"bloomcast-exact-v1"


class MissingDependency(Exception):
    """Signatures cannot be checked without the `cryptography` package."""


def digest(data):
    """SHA-256 of a filter's bytes (the .bin body)."""
    return hashlib.sha256(bytes(data)).digest()


def header(digest_, prev):
    """SHA-256(digest || prev): an hour's link in the chain."""
    return hashlib.sha256(digest_ + prev).digest()


def signed_message(index, header_):
    """The 57 bytes signed: domain, hour index (8 bytes big-endian, signed), header."""
    return DOMAIN + index.to_bytes(8, "big", signed=True) + header_


def exact_message(index, header_, body):
    """The 90 bytes an exact body is signed over (section 14): domain, hour index (8
    bytes big-endian, signed), the hour's chain header, SHA-256 of the body."""
    return form_message("exact", index, header_, body)


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


def rfc3339(hour):
    return hour.strftime("%Y-%m-%dT%H:00:00Z")


def _unhex(text, size, hour, what):
    """`size` bytes from hex; Unsigned when there is none at all, VerificationError when
    it is malformed."""
    if text is None or text == "":
        raise Unsigned(f"hour {hour}: {what} missing: not signed")
    try:
        raw = bytes.fromhex(text)
    except (ValueError, TypeError):
        raw = b""
    if len(raw) != size:
        raise VerificationError(f"hour {hour}: {what} is not {size} bytes of hex")
    return raw


FORM_LABELS = {"exact": "the exact body", "ribbon": "the ribbon",
               "ribbon2": "the version 2 ribbon", "page": "the paged form"}


class Verifier:
    """Checks what a publisher signed against the key given (64 hex digits): closed
    hours and the chain links between those it has checked, derived forms, versions of
    the open hour and checkpoints. After `use_keys` with the well-known document's
    `keys`, each hour is checked against the key listed for it, which must be the key
    given or one its signed successions lead to (bloomcast_client.trust); a signature
    naming a key listed for other hours is refused."""

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
        # Without a key list, the key given alone, for every hour.
        self.keys = [Listed(None, None, given, key_id(given), None, None)]
        self.run = (0, 0)  # the positions in `keys` of the keys trusted
        self.headers = {}  # hour index -> (prev, header), verified

    def signed(self, public, message, signature):
        """Whether `signature` over `message` verifies under the key `public` (bytes)."""
        from cryptography.exceptions import InvalidSignature
        try:
            self._load(bytes(public)).verify(bytes(signature), bytes(message))
            return True
        except (InvalidSignature, ValueError):
            return False

    def use_keys(self, listed):
        """Adopts the publisher's key list (the well-known `keys`): each hour is then
        verified under the key listed for it, if trusted from the key given. None (a
        document without `keys`): the key given alone stays. VerificationError for a
        malformed list or one that does not name the key given."""
        if listed is None:
            return False
        keys = parse_keys(listed)
        self.run = trusted_run(keys, self.given, self.signed)
        self.keys = keys
        return True

    def trusted_keys(self):
        """The ids of the keys trusted, oldest first."""
        return [k.id for k in self.keys[self.run[0]:self.run[1] + 1]]

    def _key_for(self, index, name, named):
        at = next((i for i, k in enumerate(self.keys) if (k.first is None or k.first <= index)
                   and (k.last is None or index <= k.last)), None)
        if at is None:
            raise VerificationError(f"hour {name}: no key is listed for this hour")
        if not self.run[0] <= at <= self.run[1]:
            raise VerificationError(f"hour {name}: {refusal(self.keys, self.run, at)}")
        listed = self.keys[at]
        if named and named != listed.id:
            whose = ("a key listed for other hours" if any(k.id == named for k in self.keys)
                     else "a key that is not listed")
            raise VerificationError(f"hour {name}: signed by key {named}, {whose}; the key "
                                    f"listed for it is {listed.id}")
        return listed.public

    def check_entry(self, entry, hour):
        """Verifies one chain entry (a dict of `/chain/...?limit=1`) of `hour`: its
        header, signature and key, and its link to hours verified before; returns its
        header."""
        listed = entry.get("hour")
        if not listed or _hour(listed) != hour:
            raise VerificationError(f"hour {rfc3339(hour)}: the chain has no entry for it")
        self.check_chain([entry])
        return self.headers[hour_index(hour)][1]

    def _link(self, index, name, prev, h):
        """Checks (prev, h) of hour `index` against the hours verified around it, then
        keeps it."""
        known = self.headers.get(index - 1)
        if known and known[1] != prev:
            raise VerificationError(f"hour {name}: its chain link does not follow the "
                                    "previous hour's header")
        after = self.headers.get(index + 1)
        if after and after[0] != h:
            raise VerificationError(f"hour {name}: the next hour, verified before, links "
                                    "to another header")
        same = self.headers.get(index)
        if same and same[1] != h:
            raise VerificationError(f"hour {name}: the filter's digest is not the chain's: "
                                    "the bytes were altered")
        self.headers[index] = (prev, h)

    def check_form(self, form, hour, body, header_, prev_hex, signature_hex, label=None):
        """Verifies a sealed hour's derived `form` ("exact", "ribbon" for `.ribbon` and
        `.ribbon.json`, "ribbon2"; `body` the binary body) given the hour's chain header,
        verified before (the v1 hour's or its chain entry's), and the response's
        Bloom-Prev-Header (when sent) and Bloom-Signature (or its `.sig` sidecar).
        Unsigned when it carries no signature."""
        name, index = rfc3339(hour), hour_index(hour)
        label = label or FORM_LABELS[form]
        known = self.headers.get(index)
        if prev_hex is not None and known and \
                _unhex(prev_hex, 32, name, "Bloom-Prev-Header") != known[0]:
            raise VerificationError(f"hour {name}: {label}'s Bloom-Prev-Header is not the "
                                    "chain's link for the hour")
        signature_hex, named = parse_signature(signature_hex)
        if not signature_hex:
            raise Unsigned(f"hour {name}: {label} carries no signature (no Bloom-Signature, "
                           "no .sig sidecar): unverified")
        signature = _unhex(signature_hex, 64, name, f"{label}'s Bloom-Signature")
        key = self._key_for(index, name, named)
        if not self.signed(key, form_message(form, index, header_, body), signature):
            raise VerificationError(f"hour {name}: {label}'s signature does not verify with "
                                    "the key listed for the hour: the bytes were altered")

    def check_pages_header(self, hour, header):
        """Checks a paged body's header (bloomcast_client.pages.PagesHeader) read for the
        sealed `hour`: of that hour, naming the key listed for it, and with the hour's
        chain header where that is known verified. Unsigned when it names no key (zero:
        its pages are unsigned)."""
        name, index = rfc3339(hour), hour_index(hour)
        if header.hour != index:
            raise VerificationError(f"hour {name}: the paged form's header is of hour index "
                                    f"{header.hour}, not {index}: another hour's pages")
        if not header.signed:
            raise Unsigned(f"hour {name}: the paged form names no signing key: its pages "
                           "are unsigned, unverified")
        self._key_for(index, name, header.key_id.hex())
        known = self.headers.get(index)
        if known and known[1] != header.chain_header:
            raise VerificationError(f"hour {name}: the paged form's chain header is not the "
                                    "chain's for the hour")

    def check_page(self, hour, header, p, slot):
        """Verifies page `p` of a paged body (its `slot`'s S bytes as read; `header` the
        body's, checked by check_pages_header) by its own signature: under the key its
        header names, listed for the hour, over domain "bloomcast-page-v1", the hour
        index, the header's chain header and SHA-256 of the header, p and the slot after
        its signature (PROTOCOL.md section 12, "Huge hours by the page"). Unsigned for a
        zero signature."""
        from .pages import SIGNATURE_LEN, signed_page
        name, index = rfc3339(hour), hour_index(hour)
        signature = bytes(slot[:SIGNATURE_LEN])
        if signature == bytes(SIGNATURE_LEN):
            raise Unsigned(f"hour {name}: page {p} of the paged form carries no signature: "
                           "unverified")
        key = self._key_for(index, name, header.key_id.hex())
        message = form_message("page", index, header.chain_header,
                               signed_page(header.raw, p, slot))
        if not self.signed(key, message, signature):
            raise VerificationError(f"hour {name}: page {p} of the paged form: its signature "
                                    "does not verify with the key listed for the hour: the "
                                    "bytes were altered")

    def check_exact(self, hour, body, header_, prev_hex, signature_hex):
        """check_form of an exact body (section 14)."""
        self.check_form("exact", hour, body, header_, prev_hex, signature_hex)

    def check(self, hour, data, prev_hex, signature_hex, listed_digest=None):
        """Verifies one hour (an aware datetime) whose filter bytes are `data`, given the
        response's Bloom-Prev-Header and Bloom-Signature; returns its header."""
        name, index = rfc3339(hour), hour_index(hour)
        prev = _unhex(prev_hex, 32, name, "Bloom-Prev-Header")
        signature_hex, named = parse_signature(signature_hex)
        signature = _unhex(signature_hex, 64, name, "Bloom-Signature")
        key = self._key_for(index, name, named)
        d = digest(data)
        if listed_digest is not None and listed_digest.lower() != d.hex():
            raise VerificationError(f"hour {name}: the filter's digest is {d.hex()}, but the "
                                    f"document says {listed_digest}: the bytes were altered")
        h = header(d, prev)
        if not self.signed(key, signed_message(index, h), signature):
            raise VerificationError(f"hour {name}: the signature does not verify with the "
                                    "key listed for the hour (the bytes, the link or the "
                                    "signature were altered)")
        self._link(index, name, prev, h)
        return h

    def check_known(self, hour, data, listed_digest=None):
        """Verifies the filter bytes `data` of a sealed hour against its header verified
        before (a chain page read): True when they match, False when no header of the
        hour is known; VerificationError when they differ."""
        known = self.headers.get(hour_index(hour))
        if known is None:
            return False
        name, d = rfc3339(hour), digest(data)
        if listed_digest is not None and listed_digest.lower() != d.hex():
            raise VerificationError(f"hour {name}: the filter's digest is {d.hex()}, but the "
                                    f"document says {listed_digest}: the bytes were altered")
        if header(d, known[0]) != known[1]:
            raise VerificationError(f"hour {name}: the filter's digest is not the chain's: "
                                    "the bytes were altered")
        return True

    def check_open(self, hour, data, value, now, freshness):
        """Verifies a version of the open `hour` (filter bytes `data`) by its
        Bloom-Open-Signature `value`, and that it was made at most `freshness` seconds
        before `now` (Unix seconds): an older one may be a replay hiding the changes
        since. Returns `made`; Unsigned without a signature."""
        name, index = rfc3339(hour), hour_index(hour)
        if not value:
            raise Unsigned(f"hour {name} (open): no Bloom-Open-Signature: unverified")
        signature_hex, named, made = parse_open_signature(value)
        signature = _unhex(signature_hex, 64, name, "Bloom-Open-Signature")
        if made is None:
            raise VerificationError(f"hour {name} (open): its Bloom-Open-Signature says no "
                                    "made=")
        key = self._key_for(index, name, named)
        if not self.signed(key, open_message(index, made, digest(data)), signature):
            raise VerificationError(f"hour {name} (open): the signature of this version does "
                                    "not verify with the key listed for the hour: the bytes "
                                    "were altered")
        if now - made > freshness:
            raise VerificationError(
                f"hour {name} (open): this version was made {int(now - made)} s ago "
                f"(made={made}), past the freshness bound of {freshness} s: an older "
                "version replayed would hide the changes since")
        return made

    def check_checkpoint(self, doc):
        """Verifies a checkpoint (`GET /checkpoint`, a mirror's `checkpoint.json`): its
        signature under the key listed for its hour, and its header against the chain's
        when that hour was verified. Returns (hour, made, header)."""
        try:
            hour = _hour(doc["hour"])
            made = doc["made"]
            if not isinstance(made, int) or isinstance(made, bool):
                raise TypeError
        except (KeyError, TypeError, ValueError, AttributeError):
            raise VerificationError(f"the checkpoint is malformed: {doc!r}") from None
        name, index = rfc3339(hour), hour_index(hour)
        h = _unhex(doc.get("header"), 32, name + " (checkpoint)", "header")
        signature = _unhex(doc.get("signature"), 64, name + " (checkpoint)", "signature")
        key = self._key_for(index, name + " (checkpoint)", doc.get("key_id"))
        if not self.signed(key, checkpoint_message(made, index, h), signature):
            raise VerificationError(f"hour {name} (checkpoint): the checkpoint's signature "
                                    "does not verify with the key listed for the hour")
        known = self.headers.get(index)
        if known and known[1] != h:
            raise VerificationError(f"hour {name} (checkpoint): the checkpoint's header is not "
                                    "the chain's for that hour")
        return hour, made, h

    def check_chain(self, entries):
        """Verifies a /chain listing (a list of dicts), oldest first: headers, signatures
        and links; a gap must restart from the genesis value. Keeps each header; returns
        {hour: digest}."""
        out, last = {}, None
        for e in entries:
            name = e.get("hour", "?")
            try:
                hour = _hour(name)
            except (ValueError, AttributeError):
                raise VerificationError(f"a chain entry names no hour: {e!r}") from None
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
            if not self.signed(key, signed_message(index, h), signature):
                raise VerificationError(f"hour {name}: the signature does not verify with "
                                        "the key listed for the hour")
            self._link(index, name, prev, h)
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
