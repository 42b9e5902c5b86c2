"""A static mirror directory made by hand, in the format PROTOCOL.md section 13 gives
(the v1 files and their .gz copies, the ribbons with their `.sig` sidecars, one-entry
chain pages, the well-known key list, `checkpoint.json`), signed with RFC 8032 test keys,
so the client's mirror reading is tested against the spec without a server.

Three hours from HOURS[0]: the first and the last empty, the middle one holding the
three IDs of docs/ribbon-vectors.json's 3-ID filter (its `.ribbon` is that vector's body,
its `.ribbon2` the 3-member body of ribbon2-vectors.json: both hold n = 3, the hour's
count). The client's clock is to be set to CLOCK (half past the hour after the last)."""

import gzip
import hashlib
import json
import pathlib

from bloomcast_client import Filter, hour_path, optimal, parse_hour
from bloomcast_client.trust import (ack_message, checkpoint_message, form_message,
                                    hour_index, key_id, vouch_message)
from bloomcast_client.verify import header, signed_message
from conftest import ROOT

SEEDS = {  # RFC 8032 tests 1 and 2, as docs/trust-vectors.json
    1: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
    2: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
}
FORGER_SEED = "24" * 32  # a mirror's own key
HOURS = ["2025-12-20T13:00:00Z", "2025-12-20T14:00:00Z", "2025-12-20T15:00:00Z"]
CLOCK = "2025-12-20T16"  # the client's current hour: the mirror offers 16 next


def key(seed_hex):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(seed_hex))


def public(seed_hex):
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    return key(seed_hex).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


K = public(SEEDS[1]).hex()


def vectors(name):
    return json.loads((ROOT / "docs" / name).read_text(encoding="utf-8"))


def ids_of(n):
    """The IDs of hour n."""
    if n != 1:
        return []
    return next(f for f in vectors("ribbon-vectors.json")["filters"] if len(f["ids"]) == 3)["ids"]


def ribbons(n):
    """(.ribbon body, .ribbon2 body) of hour n: vectors holding as many IDs."""
    count = len(ids_of(n))
    v1 = next(f for f in vectors("ribbon-vectors.json")["filters"] if len(f["ids"]) == count)
    v2 = next(f for f in vectors("ribbon2-vectors.json")["filters"]
              if isinstance(f["members"], dict) and f["members"]["count"] == count)
    return bytes.fromhex(v1["body"]), bytes.fromhex(v2["body"])


def write(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    return path


def document(name, f, count):
    ones = sum(bin(b).count("1") for b in f.data)
    return {"hour": name, "complete": True, "count": count, "m": f.m, "k": f.k,
            "hash": "sha1-km32", "fpp": (ones / f.m) ** f.k, "filter": f.hex(),
            "digest": hashlib.sha256(bytes(f.data)).hexdigest()}


def make(root, made, signers=None):
    """Writes the mirror into `root`; `made`: the checkpoint's time (Unix seconds).
    `signers`: the seed of each hour's key (default: key 1 for all), listed in the
    well-known document with successions signed both ways. Returns `root`."""
    root = pathlib.Path(root)
    signers = signers or [SEEDS[1]] * len(HOURS)
    prev, lines, last_header = bytes(32), [], None
    for n, name in enumerate(HOURS):
        hour, stem = parse_hour(name), root / hour_path(name).lstrip("/")
        index_ = hour_index(hour)
        ids = ids_of(n)
        f = Filter(*optimal(len(ids), 0.01))
        for id_ in ids:
            f.add(id_)
        doc = json.dumps(document(name, f, len(ids))).encode()
        d = hashlib.sha256(bytes(f.data)).digest()
        h = header(d, prev)
        signer = key(signers[n])
        v1, v2 = ribbons(n)
        r1 = v1[8:12]  # n of the ribbon, little-endian, as its JSON form says
        from bloomcast_client.ribbon import Ribbon
        ribbon = Ribbon.from_bytes(v1)
        ribbon_json = json.dumps({
            "hour": name, "complete": True, "count": int.from_bytes(r1, "little"),
            "structure": "ribbon", "hash": "sha1-km32", "w": 64, "r": ribbon.r,
            "m": ribbon.m, "seed": ribbon.seed, "fpp": ribbon.fpp, "filter": v1.hex(),
            "digest": hashlib.sha256(v1).hexdigest()}).encode()
        files = {"": doc, ".json": doc, ".hex": f.hex().encode(), ".bin": bytes(f.data),
                 ".ribbon": v1, ".ribbon.json": ribbon_json, ".ribbon2": v2}
        for suffix, body in files.items():
            write(stem.with_name(stem.name + suffix), body)
            if suffix not in (".ribbon", ".ribbon2"):
                write(stem.with_name(stem.name + suffix + ".gz"), gzip.compress(body))
        kid = key_id(public(signers[n]))
        for suffix, form, body in ((".ribbon", "ribbon", v1), (".ribbon.json", "ribbon", v1),
                                   (".ribbon2", "ribbon2", v2)):
            sig = signer.sign(form_message(form, index_, h, body)).hex()
            write(stem.with_name(stem.name + suffix + ".sig"), f'{sig}; keyid="{kid}"\n')
        entry = {"hour": name, "digest": d.hex(), "prev": prev.hex(), "header": h.hex(),
                 "signature": signer.sign(signed_message(index_, h)).hex(), "key_id": kid}
        write(root / "chain" / hour_path(name).lstrip("/"), json.dumps([entry]))
        lines.insert(0, {"hour": name, "url": hour_path(name), "count": len(ids),
                         "complete": True})
        prev, last_header = h, h
    write(root / ".well-known" / "bloomcast.json", json.dumps(well_known(signers)))
    newest = HOURS[-1]
    signer = key(signers[-1])
    cp = {"hour": newest, "header": last_header.hex(), "made": int(made),
          "key_id": key_id(public(signers[-1])),
          "signature": signer.sign(checkpoint_message(int(made), hour_index(parse_hour(newest)),
                                                      last_header)).hex()}
    write(root / "checkpoint.json", json.dumps(cp))
    write(root / "index.json", json.dumps({
        "service": "bloomcast", "protocol": 1, "hash": "sha1-km32", "target_fpp": 0.01,
        "capacity": 3000, "retention_hours": 720, "genesis": HOURS[0], "static": True,
        "exact_since": None, "ribbon_versions": [1, 2],
        "current": {**lines[0]}, "hours": lines,
        "urls": {"chain": "/chain/YYYY/MM/DD/HH (one entry a page)",
                 "checkpoint": "/checkpoint.json", "well_known": "/.well-known/bloomcast.json"}}))
    return root


def well_known(signers):
    """The key list of `signers` (one seed per hour, consecutive hours grouped), each
    succession signed both ways."""
    runs = []
    for name, seed in zip(HOURS, signers):
        if runs and runs[-1][0] == seed:
            runs[-1][2] = name
        else:
            runs.append([seed, name, name])
    keys = []
    for i, (seed, first, last) in enumerate(runs):
        pub = public(seed)
        entry = {"id": key_id(pub), "public_key": pub.hex(), "first_hour": first,
                 "last_hour": last if i + 1 < len(runs) else None, "vouch": None, "ack": None}
        if i:
            before = runs[i - 1][0]
            first_index = hour_index(parse_hour(first))
            entry["vouch"] = key(before).sign(vouch_message(pub, first_index)).hex()
            entry["ack"] = key(seed).sign(ack_message(public(before), first_index)).hex()
        keys.append(entry)
    return {"public_key": keys[-1]["public_key"], "keys": keys, "signature": "ed25519",
            "signing_domain": "bloomcast-hour-v1", "digest": "sha-256",
            "chain_genesis": "00" * 32, "genesis": HOURS[0], "hash": "sha1-km32"}


def forge_list(root, hours=HOURS, trusted=K):
    """The forged-list attack on a mirror (`make`'s, or a real one of `hours`, signed
    by the key `trusted`): that key listed as retired after hours[0], a key of the
    mirror's own from hours[1] on (vouched for by itself, acknowledging the key
    trusted), and hours[1] all zero, signed by that key and linked to hours[0]. Returns
    the forger's key id."""
    root = pathlib.Path(root)
    forger, fpub = key(FORGER_SEED), public(FORGER_SEED)
    wk_path = root / ".well-known" / "bloomcast.json"
    wk = json.loads(wk_path.read_text())
    first = hour_index(parse_hour(hours[1]))
    wk["keys"] = [{**wk["keys"][0], "last_hour": hours[0]}, {
        "id": key_id(fpub), "public_key": fpub.hex(), "first_hour": hours[1],
        "last_hour": None, "vouch": forger.sign(vouch_message(fpub, first)).hex(),
        "ack": forger.sign(ack_message(bytes.fromhex(trusted), first)).hex()}]
    wk["public_key"] = fpub.hex()
    wk_path.write_text(json.dumps(wk))
    name = hours[1]
    stem = root / hour_path(name).lstrip("/")
    doc = json.loads(stem.read_text())
    zero = Filter(doc["m"], doc["k"])
    forged = document(name, zero, 0)
    for p in list(stem.parent.iterdir()):
        if p.name.startswith(stem.name + "."):
            p.unlink()
    for suffix, body in (("", json.dumps(forged)), (".json", json.dumps(forged)),
                         (".hex", zero.hex()), (".bin", bytes(zero.data))):
        write(stem.with_name(stem.name + suffix), body)
    chain = root / "chain" / hour_path(name).lstrip("/")
    before = json.loads((root / "chain" / hour_path(hours[0]).lstrip("/")).read_text())[0]
    prev = bytes.fromhex(before["header"])
    d = hashlib.sha256(bytes(zero.data)).digest()
    h = header(d, prev)
    chain.write_text(json.dumps([{
        "hour": name, "digest": d.hex(), "prev": prev.hex(), "header": h.hex(),
        "signature": forger.sign(signed_message(first, h)).hex(), "key_id": key_id(fpub)}]))
    # Its mirror ends there: the hours after it (signed by the key trusted, which would
    # give the forgery away) are not offered, nor the publisher's checkpoint.
    index_path = root / "index.json"
    index = json.loads(index_path.read_text())
    index["hours"] = [{**h, "count": 0} if h["hour"] == name else h
                      for h in index["hours"] if h["hour"] <= name]
    index["current"] = index["hours"][0]
    index_path.write_text(json.dumps(index))
    for later in (h for h in hours if h > name):
        stem = root / hour_path(later).lstrip("/")
        for p in list(stem.parent.iterdir()) if stem.parent.is_dir() else []:
            if p.name == stem.name or p.name.startswith(stem.name + "."):
                p.unlink()
        (root / "chain" / hour_path(later).lstrip("/")).unlink(missing_ok=True)
    (root / "checkpoint.json").unlink(missing_ok=True)
    return key_id(fpub)
