"""bloomcast-py `inspect`: what a filter, a ribbon (either version) or an exact body says
about itself, from a URL or a saved file; with `--pubkey`, only once it verifies
(PROTOCOL.md section 11).

A saved body verifies offline from what was saved with it: the response's headers
(`--headers FILE`, as `curl -D FILE` writes them: Bloom-Prev-Header, Bloom-Signature,
Bloom-Open-Signature), a derived form's `.sig` sidecar, or the mirror directory around
it (its `chain/` page and `.well-known/bloomcast.json`, section 13). Without any of
these `--pubkey` is refused for it, never answered with "verified nothing". A v1
document's `count` is not signed: with `--pubkey` it must fit the filter's bits (each ID
sets at most k of them), so a count lowered to hide IDs is refused."""

import email.parser
import gzip
import json
import math
import os
import re

from . import Client, Filter, Unsigned, raw_document
from .exact import Exact, ExactError
from .mirror_check import check_count
from .ribbon import Ribbon, RibbonError
from .ribbon2 import Ribbon2

HOUR_IN_PATH = re.compile(r"(?:^|/)(\d{4})/(\d{2})/(\d{2})/(\d{2})((?:\.[a-z0-9]+)*)$")
FORM_SUFFIXES = {".ribbon": "ribbon", ".ribbon.json": "ribbon", ".ribbon2": "ribbon2",
                 ".exact": "exact"}
NO_MATERIAL = ("--pubkey cannot verify it: nothing signed came with it; give --headers "
               "FILE (the response's headers, e.g. saved with curl -D FILE), or keep it in "
               "its mirror directory (beside chain/ and .well-known/)")


class Refused(Exception):
    """What inspect refuses, in one line."""


def read_headers(path):
    """The last header block of an HTTP response head (curl -D, or -i output cut at the
    body), as a case-insensitive message."""
    with open(path, "rb") as f:
        text = f.read().decode("iso-8859-1")
    blocks = [b for b in re.split(r"\r?\n\r?\n", text) if b.strip()]
    if not blocks:
        raise Refused(f"{path}: no headers in it")
    lines = blocks[-1].splitlines()
    if lines and lines[0].startswith("HTTP/"):
        lines = lines[1:]
    return email.parser.Parser().parsestr("\n".join(lines) + "\n\n", headersonly=True)


def load(target, headers=None):
    """(kind, object, binary body, document or None) of a saved file: "bloom" (a v1 JSON
    document, or a raw .bin/.hex body described by `headers`), "ribbon" (a `.ribbon`
    body or its JSON form), "ribbon2", "exact". gzip-compressed files are read too."""
    try:
        with open(target, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Refused(f"cannot read {target}: {e.strerror}") from None
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    try:
        if data[:4] == b"BCR1":
            return "ribbon", Ribbon.from_bytes(data), data, None
        if data[:4] == b"BCR2":
            return "ribbon2", Ribbon2.from_bytes(data), data, None
        if data[:4] == b"BCX1":
            return "exact", Exact.from_bytes(data), data, None
    except (RibbonError, ExactError) as e:
        raise Refused(f"{target}: {e}") from None
    try:
        doc = json.loads(data)
    except ValueError as e:
        if headers is not None and headers.get("Bloom-M"):
            text = data.decode("ascii", "replace").strip()
            body = bytes.fromhex(text) if re.fullmatch(r"[0-9a-fA-F]*", text) and \
                len(text) == 2 * ((int(headers["Bloom-M"]) + 7) // 8) else data
            doc = raw_document(target, headers, body)
            return "bloom", Filter.from_document(doc), body, doc
        raise Refused(f"{target}: not a JSON filter document ({e})") from None
    if isinstance(doc, dict) and doc.get("structure") == "ribbon":
        try:
            ribbon, body = Ribbon.from_document(doc)
        except RibbonError as e:
            raise Refused(f"{target}: {e}") from None
        return "ribbon", ribbon, body, doc
    f = Filter.from_document(doc)
    return "bloom", f, bytes(f.data), doc


def fields_of(kind, obj, body, doc):
    """The lines inspect prints, as the Rust CLI names them."""
    if kind == "bloom":
        ones = sum(bin(b).count("1") for b in obj.data)
        fill = ones / obj.m
        return {
            "covers": doc.get("hour") or f"{doc.get('from')} .. {doc.get('to')}",
            "complete": doc["complete"], "count": doc["count"], "m": obj.m, "k": obj.k,
            "hash": doc["hash"], "bytes": len(obj.data), "bits_set": ones, "fill": fill,
            "fpp": obj.fpp(),
            "estimated_count": round(-obj.m / obj.k * math.log(1 - fill))
            if ones < obj.m else None,
        }
    if kind == "ribbon":
        return {"structure": "ribbon", "covers": (doc or {}).get("hour"),
                "complete": (doc or {}).get("complete"), "count": obj.n, "m": obj.m,
                "r": obj.r, "seed": obj.seed, "hash": "sha1-km32", "bytes": len(body),
                "fpp": obj.fpp}
    if kind == "ribbon2":
        return {"structure": "ribbon2", "count": obj.n, "k": obj.k, "split": obj.split,
                "shards": [obj.shards_a, obj.shards_b], "rows": obj.rows,
                "hash": "sha1-km32", "bytes": len(body), "fpp": obj.fpp}
    return {"structure": "exact", "universe": obj.universe, "changed": obj.changed_count,
            "complemented": obj.complemented, "k": obj.k, "split": obj.split,
            "bytes": len(body)}


def mirror_around(target):
    """(mirror root, hour path like /2008/09/03/13, suffix) when `target` lies in a
    mirror directory laid out as the URLs (a `chain/` or `.well-known/` beside its
    year); (None, hour path or None, suffix) otherwise."""
    path = os.path.abspath(target)
    found = HOUR_IN_PATH.search(path)
    if not found:
        return None, None, ""
    hour_path = "/" + "/".join(found.groups()[:4])
    suffix = found.group(5).removesuffix(".gz")
    root = path[:found.start()] or "/"
    if any(os.path.exists(os.path.join(root, p)) for p in ("chain", ".well-known")):
        return root, hour_path, suffix
    return None, hour_path, suffix


def verify_saved(target, kind, obj, body, doc, pubkey, headers, form_label):
    """Verifies a saved file with what came with it (module docstring); returns the
    `verified` line. Refused when nothing can verify it."""
    from . import parse_hour
    from .verify import Verifier, key_id, rfc3339
    verifier = Verifier(pubkey)
    root, hour_path, _ = mirror_around(target)
    mirror = Client("file://" + root) if root else None
    if mirror is not None:
        mirror.verifier = verifier
        mirror._read_keys()  # the mirror's key list, through the trust walk
    named = (doc or {}).get("hour") or (headers.get("Bloom-Hour") if headers else None)
    if named is None and hour_path is None:
        raise Refused(f"{target}: --pubkey cannot verify it: it does not say which hour it "
                      "is (no hour in it, no Bloom-Hour header, not in a mirror directory)")
    hour = parse_hour(named or hour_path)
    get = (lambda name: headers.get(name)) if headers is not None else (lambda name: None)
    if kind == "bloom":
        if doc.get("hour") is None:
            raise Refused(f"{target}: --pubkey cannot verify it: a union (days, since) is "
                          "not signed")
        check_count(target, doc, obj)
        if not doc["complete"]:
            value = get("Bloom-Open-Signature")
            if not value:
                raise Refused(f"{target}: an open hour's version: {NO_MATERIAL}")
            made = verifier.check_open(hour, obj.data, value, 0, math.inf)
            return f"{rfc3339(hour)} (open, made={made})"
        if get("Bloom-Signature") or get("Bloom-Prev-Header"):
            verifier.check(hour, obj.data, get("Bloom-Prev-Header"), get("Bloom-Signature"),
                           doc.get("digest"))
        elif mirror is not None:
            mirror._verify_hour(hour_path, doc, obj, {})
        else:
            raise Refused(f"{target}: {NO_MATERIAL}")
    else:
        signature = get("Bloom-Signature")
        if not signature and os.path.isfile(target + ".sig"):
            with open(target + ".sig", encoding="utf-8") as f:
                signature = (f.read().strip().splitlines() or [""])[0].strip()
        if not signature:
            raise Refused(f"{target}: {NO_MATERIAL}")
        if mirror is None:
            raise Refused(f"{target}: --pubkey cannot verify it: a {kind} is signed under "
                          "its hour's chain header; keep it in its mirror directory (its "
                          "chain/ page) or inspect its URL")
        header_ = mirror._hour_header(hour_path or hour.strftime("/%Y/%m/%d/%H"), hour)
        verifier.check_form(kind, hour, body, header_, get("Bloom-Prev-Header"), signature,
                            form_label)
    from .verify import hour_index
    listed = verifier._key_for(hour_index(hour), rfc3339(hour), None)
    return f"{rfc3339(hour)} under key {key_id(listed)}"


def inspect_url(target, pubkey):
    """(kind, object, body, document, verified line or None) of a URL."""
    from . import HOUR_PATH, hour_path as path_of, parse_hour
    scheme, _, rest = target.partition("://")
    host, slash, path = rest.partition("/")
    path = slash + path
    client = Client(f"{scheme}://{host}", pubkey=pubkey)
    bare = path.split("?", 1)[0]
    suffix = next((s for s in sorted(FORM_SUFFIXES, key=len, reverse=True)
                   if bare.endswith(s)), None)
    if suffix is None:
        if pubkey and not HOUR_PATH.match(bare):
            raise Refused(f"{target}: --pubkey cannot verify it: unions (days, since) are "
                          "not signed; inspect an hour")
        doc = client.document(path)
        f = Filter.from_document(doc)
        if not pubkey:
            return "bloom", f, bytes(f.data), doc, None
        hour = doc.get("hour")
        if hour in client.unverified:
            raise Unsigned(client.unverified[hour])
        check_count(target, doc, f)
        return "bloom", f, bytes(f.data), doc, f"{hour}"
    _, headers, body = client._request(path, {"Accept-Encoding": "identity"})
    kind, obj, raw, doc = load_body(target, suffix, body)
    if pubkey:
        hour_of = path_of(parse_hour(bare[:-len(suffix)]))
        client.index()
        label = "the ribbon's JSON form" if suffix == ".ribbon.json" else None
        client.check_form(FORM_SUFFIXES[suffix], hour_of, path, headers, raw, label)
        return kind, obj, raw, doc, hour_of
    return kind, obj, raw, doc, None


def load_body(target, suffix, body):
    """A derived form's body as `load` returns it."""
    try:
        if suffix == ".ribbon.json":
            ribbon, raw = Ribbon.from_document(json.loads(body))
            return "ribbon", ribbon, raw, json.loads(body)
        if suffix == ".ribbon":
            return "ribbon", Ribbon.from_bytes(body), body, None
        if suffix == ".ribbon2":
            return "ribbon2", Ribbon2.from_bytes(body), body, None
        return "exact", Exact.from_bytes(body), body, None
    except (RibbonError, ExactError, ValueError) as e:
        raise Refused(f"{target}: {e}") from None


def cmd_inspect(args):
    target = args.target
    if target.startswith(("http://", "https://")):
        if args.headers:
            raise Refused("--headers is for a saved file; a URL brings its own")
        kind, obj, body, doc, verified = inspect_url(target, args.pubkey)
    else:
        headers = read_headers(args.headers) if args.headers else None
        kind, obj, body, doc = load(target, headers)
        verified = None
        if args.pubkey:
            label = "the ribbon's JSON form" if doc is not None and kind == "ribbon" else None
            verified = verify_saved(target, kind, obj, body, doc, args.pubkey, headers, label)
    fields = fields_of(kind, obj, body, doc)
    if verified is not None:
        fields["verified"] = verified
    if args.json:
        print(json.dumps(fields))
    else:
        for name, value in fields.items():
            print(f"{name:<16}{json.dumps(value) if not isinstance(value, str) else value}")


def add_inspect(verbs):
    p = verbs.add_parser(
        "inspect", help="show a filter's parameters, count, fill and fpp",
        description="Show what a filter (or a ribbon, either version, or an exact body) "
        "says about itself, from a URL or a saved file; with --pubkey, only once it "
        "verifies (nonzero exit naming what failed).")
    p.add_argument("target", help="a URL (http://host:port/2008/09/03/13, .ribbon, "
                   ".ribbon.json, .ribbon2, .exact) or a saved file of any of those forms")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--pubkey", metavar="KEY",
                   help="verify it against the publisher's key (64 hex digits): a URL by "
                   "what the server sends; a file by --headers, its .sig sidecar or the "
                   "mirror directory around it, else refused")
    p.add_argument("--headers", metavar="FILE",
                   help="the headers the file was served with (curl -D FILE): its "
                   "signature and chain link, or the Bloom-* parameters of a raw body")
    p.set_defaults(run=cmd_inspect, needs_server=False)
