"""Every file a static mirror holds for a sealed hour (PROTOCOL.md section 13), checked
against the hour's verified chain entry, so that `verify` of a mirror leaves no form
unchecked that a client might read: the v1 forms (the JSON document at the hour's path
and at `.json`, `.hex`, `.bin`, and their `.gz` copies) must decode to the bytes the
chain digests; the derived forms (`.ribbon`, `.ribbon.json`, `.ribbon2`, `.exact`) must
verify by their `.sig` sidecars under the hour's chain header, and the paged form
(`.pages`) page by page by the signatures it carries. A derived form without a sidecar,
or pages without signatures, is reported unverified, never passed.

A v1 document's `count` is not signed: it must fit the filter's bits (each ID sets at
most k), and equal the `n` of the hour's signed ribbons where there are some."""

import gzip
import hashlib
import json

from . import Filter, HTTPError, ProtocolError, Unsigned, VerificationError, hour_path
from .ribbon import Ribbon, RibbonError
from .ribbon2 import Ribbon2
from .exact import Exact, ExactError
from .pages import PagesError, parse_body

V1_FORMS = ("", ".json", ".hex", ".bin")
DERIVED = ((".ribbon", "ribbon"), (".ribbon.json", "ribbon"), (".ribbon2", "ribbon2"),
           (".exact", "exact"))


def check_count(where, doc, f):
    """Refuses a v1 document whose `count` is fewer IDs than its bits need: each ID sets
    at most k bits, so more than count * k bits set means the count was lowered."""
    ones = sum(bin(b).count("1") for b in f.data)
    if ones > doc["count"] * f.k:
        raise VerificationError(
            f"{where}: count is {doc['count']}, but the filter has {ones} bits set, more "
            f"than {doc['count']} IDs set at k = {f.k} ({doc['count'] * f.k}): the count "
            "was altered")


def _bodies(client, path):
    """The bodies a mirror serves at `path`: (name, bytes) of its identity file and of
    its gzip copy (a directory's `.gz` file; over HTTP, the body sent for
    Accept-Encoding: gzip), those present."""
    out = []
    local = client.base.startswith("file://")
    for gz in (False, True):
        try:
            if local:
                _, _, body = client._request(path + (".gz" if gz else ""))
                body = gzip.decompress(body) if gz else body
            else:
                _, _, body = client._request(path, {"Accept-Encoding": "gzip" if gz
                                                    else "identity"})
        except HTTPError as e:
            if e.status == 404:
                continue
            raise
        except (OSError, EOFError) as e:
            raise VerificationError(f"{path}.gz: not gzip ({e})") from None
        out.append((path + (".gz" if gz and local else ""), body))
    return out


def _v1_bytes(name, file, suffix, body):
    """(filter bytes, document or None) of a v1 form's body."""
    try:
        if suffix == ".bin":
            return body, None
        if suffix == ".hex":
            return bytes.fromhex(body.decode("ascii").strip()), None
        doc = json.loads(body)
        f = Filter.from_document(doc)
    except (ValueError, UnicodeDecodeError, ProtocolError) as e:
        raise VerificationError(f"hour {name}: {file} is not a valid filter ({e})") from None
    if doc.get("hour") != name or doc.get("complete") is not True:
        raise VerificationError(f"hour {name}: {file} is the document of hour "
                                f"{doc.get('hour')}, complete {doc.get('complete')}")
    check_count(f"hour {name}: {file}", doc, f)
    return bytes(f.data), doc


def _derived(name, file, suffix, body):
    """(binary body, its `n` or None) of a derived form."""
    try:
        if suffix == ".ribbon.json":
            ribbon, raw = Ribbon.from_document(json.loads(body))
            return raw, ribbon.n
        if suffix == ".ribbon":
            return body, Ribbon.from_bytes(body).n
        if suffix == ".ribbon2":
            return body, Ribbon2.from_bytes(body).n
        Exact.from_bytes(body)
        return body, None
    except (ValueError, RibbonError, ExactError) as e:
        raise VerificationError(f"hour {name}: {file} is malformed ({e})") from None


def _pages(client, hour, name, file, body):
    """Checks a paged body of the sealed `hour`: well formed, of the hour, its header
    naming the key listed for it with the hour's chain header, every page verifying by
    its signature. Returns its n (Unsigned when its pages carry no signatures)."""
    try:
        header, pages = parse_body(body)
    except PagesError as e:
        raise VerificationError(f"hour {name}: {file} is malformed ({e})") from None
    client._read_keys()
    client._hour_header(hour_path(hour), hour)  # the hour's chain header, verified
    client.verifier.check_pages_header(hour, header)
    for page in pages:
        first, end = header.slot_range(page.index)
        client.verifier.check_page(hour, header, page.index, body[first:end])
    return header.n


def check_hour(client, hour, want):
    """Checks every file of the sealed `hour` a static mirror holds against `want`, the
    digest of its verified chain entry (its header known to client.verifier). Returns
    the files left unverified (a derived form without its sidecar), as lines."""
    path, name = hour_path(hour), hour.strftime("%Y-%m-%dT%H:00:00Z")
    counts, signed_n, unverified = [], [], []
    for suffix in V1_FORMS:
        for file, body in _bodies(client, path + suffix):
            data, doc = _v1_bytes(name, file, suffix, body)
            if hashlib.sha256(data).digest() != want:
                raise VerificationError(f"hour {name}: {file}: its filter's digest is not "
                                        "the chain's: the bytes were altered")
            if doc is not None:
                counts.append((file, doc["count"]))
    for suffix, form in DERIVED:
        for file, body in _bodies(client, path + suffix):
            raw, n = _derived(name, file, suffix, body)
            label = "the ribbon's JSON form" if suffix == ".ribbon.json" else None
            try:
                client.check_form(form, path, path + suffix, {}, raw, label)
            except Unsigned:
                unverified.append(f"{name}: {file} has no signature (no {path + suffix}.sig)")
                continue
            if n is not None:
                signed_n.append((file, n))
    for file, body in _bodies(client, path + ".pages"):
        try:
            signed_n.append((file, _pages(client, hour, name, file, body)))
        except Unsigned:
            unverified.append(f"{name}: {file} has no signatures (its pages are unsigned)")
    for file, count in counts:
        for signed, n in signed_n:
            if count != n:
                raise VerificationError(f"hour {name}: {file} says count {count}, but the "
                                        f"signed {signed} holds {n} IDs: the count was "
                                        "altered")
    return unverified
