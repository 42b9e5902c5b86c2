"""Trust (PROTOCOL.md section 11, "Trust: what a client holding a key accepts"): the
messages a publisher signs besides its hours, and which keys of a key list a client
given one public key accepts.

A client is given one key; the key list, like everything else, may come from a mirror.
So a key is trusted only through a succession signed by a key already trusted: forward
through *vouches* (the retiring key signs its successor and the successor's first hour),
back through *acknowledgements* (the successor signs its predecessor). A list that
retires the key given and adds a key of the mirror's own gains the mirror nothing: the
key given never vouched for it, and hours listed under it are refused naming it.

Pure: bytes in, bytes out; signatures are checked through a function the caller passes
(`signed(public_key, message, signature) -> bool`), so this module needs no package.
"""

import collections
import datetime
import hashlib

VOUCH_DOMAIN = b"bloomcast-key-v1"
ACK_DOMAIN = b"bloomcast-key-ack-v1"
CHECKPOINT_DOMAIN = b"bloomcast-checkpoint-v1"
OPEN_DOMAIN = b"bloomcast-open-v1"
# Derived forms of a sealed hour (section 11, "Derived forms"): `.ribbon.json` carries
# the `.ribbon` body, so it is signed as "ribbon"; each page of `.pages` is signed on its
# own as "page", over bloomcast_client.pages.signed_page's bytes.
FORM_DOMAINS = {"exact": b"bloomcast-exact-v1", "ribbon": b"bloomcast-ribbon-v1",
                "ribbon2": b"bloomcast-ribbon2-v1", "page": b"bloomcast-page-v1"}
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class VerificationError(Exception):
    """Something that does not verify against the publisher's key; names what failed."""


class Unsigned(VerificationError):
    """A form that carries no signature at all (an older server, or a mirror without
    its `.sig` sidecar): not tampered with as far as anyone can tell, but unverified,
    so a client given a key never uses it silently (it reads a signed form instead)."""


def i64(n):
    """8 bytes, big-endian two's complement: hour indexes and Unix times in messages."""
    return n.to_bytes(8, "big", signed=True)


def hour_index(hour):
    """Hours since 1970-01-01T00Z of an aware datetime at the start of an hour."""
    return int((hour - EPOCH).total_seconds()) // 3600


def key_id(public_key):
    """A key's id: the first 8 bytes of SHA-256 of its 32 bytes, 16 hex digits."""
    return hashlib.sha256(bytes(public_key)).digest()[:8].hex()


def vouch_message(new_key, first_index):
    """What a retiring key signs for its successor, which signs from `first_index` on."""
    return VOUCH_DOMAIN + bytes(new_key) + i64(first_index)


def ack_message(prev_key, first_index):
    """What a new key signs for the key it succeeds from `first_index` on."""
    return ACK_DOMAIN + bytes(prev_key) + i64(first_index)


def checkpoint_message(made, index, header):
    """A checkpoint: when it was made (Unix seconds), the newest sealed hour, its header."""
    return CHECKPOINT_DOMAIN + i64(made) + i64(index) + bytes(header)


def open_message(index, made, digest):
    """A version of the open hour: its index, when it was made, SHA-256 of its bytes."""
    return OPEN_DOMAIN + i64(index) + i64(made) + bytes(digest)


def form_message(form, index, header, body):
    """What a sealed hour's derived `form` ("exact", "ribbon", "ribbon2", "page") is
    signed over: the form's domain, the hour index, the hour's chain header, SHA-256 of
    the body."""
    return FORM_DOMAINS[form] + i64(index) + bytes(header) + hashlib.sha256(bytes(body)).digest()


def _hour(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


Listed = collections.namedtuple("Listed", "first last public id vouch ack")
Listed.__doc__ = """A key of the list: first and last hour index (last None while
current), its 32 bytes, its id, and its succession's signatures (64 bytes or None)."""


def _signature_field(k, name):
    value = k.get(name)
    if value is None:
        return None
    try:
        raw = bytes.fromhex(value) if isinstance(value, str) else b""
    except ValueError:
        raw = b""
    if len(raw) != 64:
        raise VerificationError(f"the publisher's key list is refused: key {k.get('id')} "
                                f"has a {name} that is not 128 hex digits")
    return raw


def parse_keys(listed):
    """The well-known document's `keys` as [Listed], oldest first, checked: ids match,
    ranges ordered and apart, only the newest open, succession signatures well formed.
    Raises VerificationError otherwise."""
    out = []
    for k in listed:
        try:
            public = bytes.fromhex(k["public_key"])
            first = hour_index(_hour(k["first_hour"]))
            last = hour_index(_hour(k["last_hour"])) if k.get("last_hour") else None
        except (KeyError, TypeError, ValueError, AttributeError):
            raise VerificationError(f"the publisher's key list is refused: {k!r}") from None
        if len(public) != 32 or k.get("id") != key_id(public):
            raise VerificationError(f"the publisher's key list is refused: the id of "
                                    f"{k.get('public_key')} is not {k.get('id')}")
        if last is not None and last < first:
            raise VerificationError(f"the publisher's key list is refused: key {k['id']} "
                                    "ends before it starts")
        if out and (out[-1].last is None or out[-1].last >= first):
            raise VerificationError("the publisher's key list is refused: keys overlap or "
                                    "are out of order")
        out.append(Listed(first, last, public, k["id"], _signature_field(k, "vouch"),
                          _signature_field(k, "ack")))
    return out


def trusted_run(keys, anchor, signed):
    """(first, last): the positions in `keys` (parse_keys') of the keys trusted from the
    key `anchor` (32 bytes): itself, each later key whose predecessor signed its vouch,
    each earlier key its successor acknowledged. VerificationError when the list does
    not name `anchor`: nothing it says is vouched for."""
    at = next((i for i, k in enumerate(keys) if k.public == bytes(anchor)), None)
    if at is None:
        raise VerificationError(
            "the publisher's key list is refused: it does not list the key you trust "
            f"({key_id(anchor)}), so nothing it says is vouched for")
    last = at
    while last + 1 < len(keys):
        later = keys[last + 1]
        if later.vouch is None or not signed(
                keys[last].public, vouch_message(later.public, later.first), later.vouch):
            break
        last += 1
    first = at
    while first > 0:
        later = keys[first]
        if later.ack is None or not signed(
                later.public, ack_message(keys[first - 1].public, later.first), later.ack):
            break
        first -= 1
    return first, last


def refusal(keys, run, at):
    """Why the key at position `at` of `keys` is refused, given the trusted `run`."""
    how = ("no key you trust vouched for it" if at > run[1]
           else "it is not acknowledged by the keys you trust")
    return (f"it is listed under key {keys[at].id}, which is refused: {how} (a key is "
            "trusted only through a succession its predecessor signed)")


def extends(new, pinned, verified=None):
    """Raises VerificationError unless the key list `new` may replace `pinned` (both as
    parse_keys returns): every pinned key again with its first hour, an open one possibly
    retired (not before `verified`, the newest hour index verified), a retired one
    unchanged, new keys after them."""
    for i, (first, last, public, id_, *_) in enumerate(pinned):
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


def parse_open_signature(value):
    """A Bloom-Open-Signature value, `<128 hex>; keyid="<16 hex>"; made=<Unix seconds>`:
    (signature hex, key id or None, made or None). Parameters as Bloom-Signature's:
    quoted or not, in any case, unknown ones ignored."""
    parts = value.split(";")
    keyid = made = None
    for param in parts[1:]:
        name, _, v = param.partition("=")
        name, v = name.strip().lower(), v.strip().strip('"')
        if name == "keyid":
            keyid = v.lower()
        elif name == "made":
            try:
                made = int(v)
            except ValueError:
                made = None
    return parts[0].strip(), keyid, made
