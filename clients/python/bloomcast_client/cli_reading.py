"""bloomcast-py's `history`, `estimate` and `watch`: the Rust CLI's reading verbs with
its flags, output (byte for byte, JSON included: see rustjson) and exit codes. Command
lines the Rust CLI refuses are refused here with its words, exit code 2."""

import math
import os
import signal
import sys
import time

from . import Client, parse_hour
from .estimate import ShapeMismatch, load, ones, overlap, round_half_away
from .history import History, default_cache_dir, rfc3339
from .rustjson import dumps, rust_float
from .watch import Watcher, event_line

# Seconds between watch polls (and before reconnecting its stream) are slept here: tests
# replace it to end a watch.
sleep = time.sleep

U64_MAX = 2 ** 64 - 1
HOUR_FORMS = "expected e.g. 2008-09-03T05 (UTC), 2008-09-03T05:00:00Z or 2008/09/03/05"


class Refused(Exception):
    """A command line the Rust CLI refuses (clap's words; exit code 2)."""


def _u64(flag, text, minimum=0):
    """`text` as clap reads a u64 flag, or Refused with clap's message."""
    why = None
    if not text:
        why = "cannot parse integer from empty string"
    elif not all(c in "0123456789" for c in text.removeprefix("+")) or text == "+":
        why = "invalid digit found in string"
    elif int(text) > U64_MAX:
        why = "number too large to fit in target type"
    elif int(text) < minimum:
        why = f"{int(text)} is not in {minimum}..{U64_MAX}"
    if why:
        raise Refused(f"invalid value '{text}' for '{flag}': {why}")
    return int(text)


def _pubkey(text):
    if text is not None and (len(text) != 64
                             or any(c not in "0123456789abcdefABCDEF" for c in text)):
        raise Refused(f"invalid value '{text}' for '--pubkey <PUBKEY>': not a public key: "
                      f"{text} (expected 64 hex digits, an Ed25519 public key)")
    return text


def _position(argv, flag):
    return next((i for i, a in enumerate(argv) if a == flag or a.startswith(flag + "=")),
                None)


# --- history ------------------------------------------------------------------------------

def check_history(args, argv):
    if args.since is not None:
        try:
            args.since = parse_hour(args.since)
        except ValueError:
            raise Refused(f"invalid value '{args.since}' for '--since <SINCE>': "
                          f'"{args.since}" is not an hour: {HOUR_FORMS}') from None
    if args.no_cache and args.cache_dir:
        given = _position(argv, "--cache-dir")
        if given is not None and given < _position(argv, "--no-cache"):
            raise Refused("the argument '--cache-dir <CACHE_DIR>' cannot be used with "
                          "'--no-cache'")
        raise Refused("the argument '--no-cache' cannot be used with '--cache-dir "
                      "<CACHE_DIR>'")
    if not args.ids:
        raise Refused("the following required arguments were not provided:\n  <IDS>...")


def cmd_history(args):
    from .cli import read_ids
    ids = read_ids(args.ids)
    client = Client(args.server)
    cache_dir = None if args.no_cache else (args.cache_dir or default_cache_dir())
    history = History(client, cache_dir)
    found = history.lookup(ids, args.since)
    if args.json:
        print(dumps({
            "server": client.base,
            "ids": [{"id": id_, "hours": [rfc3339(h) for h in hours]} for id_, hours in found],
            "requests": client.requests, "cache_hits": history.cache_hits}))
    else:
        for id_, hours in found:
            print(f"{id_}\t{' '.join(rfc3339(h) for h in hours)}")


def add_history(verbs, server_help):
    p = verbs.add_parser(
        "history", help="print, for each ID, the hours in which it may have changed",
        description="Print, per ID, the hours whose filter holds it: ID<TAB>HOUR HOUR ... "
        "(RFC 3339).")
    p.add_argument("--server", default=os.environ.get("BLOOMCAST_SERVER"), help=server_help)
    p.add_argument("--since", metavar="HOUR",
                   help="the first hour to look at, e.g. 2008-09-03T05 (UTC) [default: the "
                   "oldest the server has]")
    p.add_argument("--cache-dir", default=os.environ.get("BLOOMCAST_CACHE_DIR") or None,
                   help="where complete hours' filters are kept between runs, so a second "
                   "call fetches only new hours [default: $XDG_CACHE_HOME/bloomcast, else "
                   "~/.cache/bloomcast] (or set BLOOMCAST_CACHE_DIR)")
    p.add_argument("--no-cache", action="store_true", help="keep nothing on disk")
    p.add_argument("--json", action="store_true", help="print one JSON object (per-ID "
                   "hours, requests and cache hits) instead of lines")
    p.add_argument("ids", nargs="*", metavar="ID",
                   help="IDs to look up; - reads one per line from stdin")
    p.set_defaults(run=cmd_history, needs_server=True, check=check_history, parser=p)


# --- estimate -----------------------------------------------------------------------------

def check_estimate(args, argv):
    if args.intersect is None:
        raise Refused("the following required arguments were not provided:\n"
                      "  --intersect <A> <B>")
    given = len(args.intersect)
    if given == 0:
        raise Refused("a value is required for '--intersect <A> <B>' but none was supplied")
    if given == 1:
        raise Refused("2 values required for '--intersect <A> <B>' but 1 was provided")
    if given > 2:
        raise Refused(f"unexpected argument '{args.intersect[2]}' found")
    if (args.m is None) != (args.k is None):
        missing = "--k <K>" if args.k is None else "--m <M>"
        raise Refused(f"the following required arguments were not provided:\n  {missing}")
    if args.m is not None:
        args.m, args.k = _u64("--m <M>", args.m), _u64("--k <K>", args.k)


def cmd_estimate(args):
    a_name, b_name = args.intersect
    doc_a, a = load(a_name, args.m, args.k)
    doc_b, b = load(b_name, args.m, args.k)
    try:
        est = overlap(a, b)
    except ShapeMismatch:
        raise ValueError(
            f"cannot intersect filters of different shapes: A {a_name} is (m={a.m}, "
            f"k={a.k}, hash=sha1-km32) and B {b_name} is (m={b.m}, k={b.k}, "
            "hash=sha1-km32); only filters of the same m, k and hash combine") from None

    def side(source, doc, f, estimate):
        return {"source": source, "count": doc["count"] if doc else None,
                "estimated_count": round_half_away(estimate), "m": f.m, "k": f.k,
                "hash": "sha1-km32", "fill": ones(f.data) / f.m}

    out = {"a": side(a_name, doc_a, a, est["a"]), "b": side(b_name, doc_b, b, est["b"]),
           "union": round_half_away(est["union"]),
           "intersection": round_half_away(est["intersection"]),
           "jaccard": est["jaccard"]}
    if args.json:
        print(dumps(out))
        return

    def number(x):
        return rust_float(x) if math.isfinite(x) else "unknown (saturated filter)"

    for name, key in (("A", "a"), ("B", "b")):
        s = out[key]
        print(f"{name}               {s['source']}")
        print(f"  count          {'unknown (raw file)' if s['count'] is None else s['count']}")
        print(f"  estimated      {number(s['estimated_count'])}")
    jaccard = est["jaccard"]
    print(f"shape            m={a.m} k={a.k} sha1-km32")
    print(f"union (est.)     {number(out['union'])}")
    print(f"intersection     {number(out['intersection'])}")
    print(f"jaccard          {'NaN' if math.isnan(jaccard) else format(jaccard, '.4f')}")


def add_estimate(verbs):
    p = verbs.add_parser(
        "estimate",
        usage="bloomcast-py estimate [-h] --intersect A B [--m M --k K] [--json]", help="estimate |A ∩ B| and |A ∪ B| from two filters of the same shape",
        description="Estimate |A ∩ B| and |A ∪ B| from two filters of the same shape "
        "(m, k, hash).")
    p.add_argument("--intersect", nargs="*", metavar=("A", "B"),
                   help="the two filters: URLs (http://host:port/2008/09/03/13) or files, "
                   "as inspect reads them")
    p.add_argument("--m", help="m, for a raw hex or binary file")
    p.add_argument("--k", help="k, for a raw hex or binary file")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of "
                   "lines")
    p.set_defaults(run=cmd_estimate, needs_server=False, check=check_estimate, parser=p)


# --- watch --------------------------------------------------------------------------------

def check_watch(args, argv):
    args.every = _u64("--every <EVERY>", args.every, minimum=1)
    _pubkey(args.pubkey)


def cmd_watch(args):
    from .cli import read_ids
    ids = read_ids(args.ids) if args.ids else []
    if args.file:
        try:
            with open(args.file, encoding="utf-8", newline="") as f:
                ids.extend(line.removesuffix("\n").removesuffix("\r") for line in f
                           if line.strip())
        except OSError as e:
            raise ValueError(f"cannot open {args.file}: {e.strerror} (os error {e.errno})") \
                from None
    if not ids:
        raise ValueError("no IDs: pass them as arguments, - to read stdin, or --file")
    client = Client(args.server, pubkey=args.pubkey)
    watcher = Watcher.start(client, ids)
    said = set()
    # Even when started with SIGINT ignored (a background job of a script), as the Rust
    # verb, which always listens for it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        for events in watcher.follow(args.every, stream=not args.poll,
                                     sleep=lambda seconds: sleep(seconds)):
            for event in events:
                line = event_line(event, args.json)
                if line is not None:
                    print(line, flush=True)
            for hour, why in client.unverified.items():  # with --pubkey: never silently
                if hour not in said:
                    said.add(hour)
                    print(f"bloomcast-py: unverified: {why}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        return  # Ctrl-C ends a watch, exit code 0, as the Rust verb's


def add_watch(verbs, server_help):
    p = verbs.add_parser(
        "watch", help="follow the open hour and print each given ID the first time it may "
        "have changed, until interrupted",
        description="Follow the open hour (and the next ones) and print each ID the first "
        "time it may have changed in it, until interrupted (Ctrl-C: exit code 0). The "
        "server's event stream (GET /events) says when the hour has a new version, which "
        "is then fetched (as a delta with the extra dcz); where there is no stream (a "
        "static mirror, an older server) or while it is down, the hour is polled every "
        "--every seconds.")
    p.add_argument("--server", default=os.environ.get("BLOOMCAST_SERVER"), help=server_help)
    p.add_argument("--every", default="10", metavar="SECONDS",
                   help="seconds between polls, where the server has no event stream "
                   "or while it is down [default: 10]")
    p.add_argument("--poll", action="store_true",
                   help="poll every --every seconds, without the server's event stream")
    p.add_argument("--file", help="a file of IDs, one per line (as - reads stdin)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object per event (version and changed, each with "
                   "the hour, the version and the bytes transferred) instead of ID lines")
    p.add_argument("--pubkey", metavar="KEY",
                   help="verify each version of the open hour by its signature (one made "
                   "more than 600 s ago is refused), and each hour once it is sealed, "
                   "against this Ed25519 public key (64 hex digits); what does not verify "
                   "ends the watch with an error naming the hour, a version served unsigned "
                   "is said on stderr (needs the cryptography package)")
    p.add_argument("ids", nargs="*", metavar="ID",
                   help="IDs to watch; - reads one per line from stdin")
    p.set_defaults(run=cmd_watch, needs_server=True, check=check_watch, parser=p)


def refuse(args, argv):
    """Runs the verb's command-line checks; exits 2 with the Rust CLI's words on a
    refusal, as argparse does for its own."""
    check = getattr(args, "check", None)
    if check:
        try:
            check(args, sys.argv[1:] if argv is None else list(argv))
        except Refused as e:
            args.parser.error(str(e))
