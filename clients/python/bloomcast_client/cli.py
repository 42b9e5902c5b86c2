"""bloomcast-py: the command line of the Python client, with the Rust CLI's verbs and
defaults (check the last 24 hours; ingest in batches of 1000 with 8 attempts); the
reading verbs history, estimate and watch are in cli_reading.

Every failure is one line on stderr, `bloomcast-py: <what went wrong>`, and exit code 1
(2 for a bad command line, as argparse does). `check` and `verify` exit 3 when they
answered but their source is not shown current (bloomcast_client.coverage), unless
given `--accept-stale`.
"""

import argparse
import datetime
import json
import os
import sys

from . import (DEFAULT_FETCH_COST, Client, ConnectionFailed, CorruptHours, HTTPError,
               MissingDependency, ProtocolError, VerificationError, hour_path, parse_hour,
               selftest, selftest_exact, selftest_ribbon, selftest_ribbon2)
from .cli_inspect import Refused, add_inspect
from .cli_reading import add_estimate, add_history, add_watch, refuse
from .trust_vectors import selftest_trust
from .verify import selftest_chain

PROG = "bloomcast-py"


class Failure(Exception):
    """A failure to report in one line."""


def read_ids(args):
    """IDs from the arguments, where '-' stands for every non-blank line of stdin."""
    ids = []
    for arg in args:
        if arg == "-":
            ids.extend(line.rstrip("\r\n") for line in sys.stdin if line.strip())
        else:
            ids.append(arg)
    if not ids:
        raise Failure("no IDs: pass them as arguments, or - to read one per line from stdin")
    return ids


def hour_arg(text):
    try:
        return parse_hour(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def positive(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return n


def non_negative(text):
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes")
    return int(text)


def rfc3339(hour):
    return hour.strftime("%Y-%m-%dT%H:00:00Z")


def window_start(client, hours):
    """The first of the last `hours` hours, no earlier than the oldest the server keeps."""
    index = client.index()
    now = parse_hour(index["current"]["hour"])
    oldest = max(parse_hour(index["genesis"]),
                 now - datetime.timedelta(hours=index["retention_hours"] - 1))
    wanted = now - datetime.timedelta(hours=hours - 1)
    if wanted < oldest:
        print(f"{PROG}: note: the server has hours from {rfc3339(oldest)} on; "
              "checking from there", file=sys.stderr)
    return max(wanted, oldest)


STALE = 3  # exit status: answered, but the source is not shown current


def cmd_check(args):
    """The check; with --json a failure is also one JSON object on stdout (`error`,
    `message`, and for hours the server could not verify `hours`), as the Rust verb's,
    so a program reading stdout never takes it for no change."""
    try:
        return _check(args)
    except Exception as e:
        if args.json:
            print(json.dumps(json_error(e)))
        raise


def report(changes, accept_stale, human):
    """What an answer covers, on stderr: the hours read (`human`: the JSON says it
    otherwise), those unverified, and why the source is not shown current. Returns the
    exit status: STALE for a stale answer not accepted, else 0."""
    sys.stdout.flush()  # the answer first, then what it covers
    if human:
        read = (f"read {changes.first} through {changes.last}" if changes.first
                else "read no hour")
        print(f"{PROG}: {read}", file=sys.stderr)
    if changes.unverified:
        print(f"{PROG}: unverified (no signature to check): "
              f"{', '.join(changes.unverified)}", file=sys.stderr)
    for reason in changes.stale:
        print(f"{PROG}: {reason}" + (" (accepted: --accept-stale)" if accept_stale else ""),
              file=sys.stderr)
    return STALE if changes.stale and not accept_stale else 0


def json_error(e):
    """A failure as `check --json` prints it."""
    if isinstance(e, HTTPError):
        code = e.code
    elif isinstance(e, ConnectionFailed):
        code = "transport"
    elif isinstance(e, VerificationError):
        code = "unverified"
    elif isinstance(e, ProtocolError):
        code = "protocol"
    elif isinstance(e, (Failure, ValueError)):
        code = "argument"
    else:
        code = "io"
    doc = {"error": code, "message": str(e)}
    if isinstance(e, CorruptHours):
        doc["hours"] = e.hours
    return doc


def _check(args):
    ids = read_ids(args.ids)
    client = Client(args.server, pubkey=args.pubkey, fetch_cost=args.fetch_cost,
                    registered=args.registered, accept_stale=True,
                    freshness=args.freshness)
    since = args.since or window_start(client, args.hours or 24)
    if args.exact and args.strategy in ("union", "compact"):
        raise Failure("--exact reads sealed hours one by one: it cannot be used with "
                      f"--strategy {args.strategy}")
    changes = client.changed_since(ids, since, strategy=args.strategy,
                                   exact=True if args.exact else None)
    flagged = {i for _, _, found in changes for i in found}
    seen, changed = set(), []
    for id_ in ids:  # each once, in the order given
        if id_ in flagged and id_ not in seen:
            seen.add(id_)
            changed.append(id_)
    if args.json:
        doc = {
            "server": client.base, "since": rfc3339(since), "checked": len(ids),
            "from": changes.first, "to": changes.last, "changed": changed,
            "ranges": [{"from": f, "to": t, "ids": found} for f, t, found in changes],
            "unverified": changes.unverified if args.pubkey else None,
            "stale": changes.stale,
            "requests": client.requests, "bytes": client.wire_bytes,
            "ribbons": client.ribbon_fetches, "exact": client.exact_fetches,
        }
        # The fields `bloomcast check --json` writes only when above 0: the same keys.
        if client.exact_fetches:
            doc["exacts"] = client.exact_fetches
        if client.ribbon2_fetches:
            doc["ribbons2"] = client.ribbon2_fetches
        if client.page_fetches:  # pages of paged forms read by Range (this client's own)
            doc["pages"] = client.page_fetches
        print(json.dumps(doc))
    else:
        for id_ in changed:
            print(id_)
    return report(changes, args.accept_stale, human=not args.json)


def cmd_ingest(args):
    if not args.token:
        raise Failure("no token: pass --token or set BLOOMCAST_TOKEN")
    ids = read_ids(args.ids)
    client = Client(args.server)
    done, retries, hours = 0, 0, {}
    for start in range(0, len(ids), args.batch):
        batch = ids[start:start + args.batch]
        try:
            receipt, tries = client.publish_with_retries(batch, args.token, args.attempts)
        except (HTTPError, ConnectionFailed) as e:
            raise Failure(f"{e} ({done} IDs were acknowledged before this; "
                          "the rest were not)") from None
        done += receipt["accepted"]
        retries += tries
        hours[receipt["hour"]] = hours.get(receipt["hour"], 0) + receipt["accepted"]
    by_hour = ", ".join(f"{h}: {n}" for h, n in sorted(hours.items()))
    print(f"ingested {done} IDs in {client.requests} requests ({retries} retries); "
          f"by hour: {by_hour}", file=sys.stderr)


def cmd_selftest(args):
    if args.vectors.endswith("chain-vectors.json"):
        print(f"ok: {selftest_chain(args.vectors)} chain vectors")
    elif args.vectors.endswith("trust-vectors.json"):
        print(f"ok: {selftest_trust(args.vectors)} trust vectors")
    elif args.vectors.endswith("exact-vectors.json"):
        print(f"ok: {selftest_exact(args.vectors)} exact vectors")
    elif args.vectors.endswith("ribbon-vectors.json"):
        print(f"ok: {selftest_ribbon(args.vectors)} ribbon vectors")
    elif args.vectors.endswith("ribbon2-vectors.json"):
        print(f"ok: {selftest_ribbon2(args.vectors)} ribbon2 vectors")
    else:
        print(f"ok: {selftest(args.vectors)} vectors")


def cmd_verify(args):
    if args.dir:
        if not os.path.isdir(args.dir):
            raise Failure(f"--dir {args.dir}: not a directory")
        args.url = "file://" + os.path.abspath(args.dir)
    if not args.url:
        raise Failure("--url or --dir is required (or set BLOOMCAST_SERVER)")
    client = Client(args.url, pubkey=args.pubkey)
    result = client.verify(args.since)
    for hour in result.hours:
        print(f"ok {rfc3339(hour)}")
    print(f"verified {len(result.hours)} hours")
    for line in result.unverified:
        print(f"{PROG}: unverified: {line}", file=sys.stderr)
    for reason in result.stale:
        print(f"{PROG}: {reason}" + (" (accepted: --accept-stale)" if args.accept_stale
                                     else ""), file=sys.stderr)
    if result.unverified:
        raise Failure(f"{len(result.unverified)} files could not be verified (listed "
                      "above): nothing signed came with them")
    return STALE if result.stale and not args.accept_stale else 0


def parser():
    server_help = ("the server's base URL, e.g. http://127.0.0.1:8080 or 127.0.0.1:8080 "
                   "(default: $BLOOMCAST_SERVER)")
    p = argparse.ArgumentParser(
        prog=PROG, description="Hourly Bloom filters of what changed: a standard-library "
        "Python client of bloomcast, written from docs/PROTOCOL.md.")
    verbs = p.add_subparsers(dest="verb", required=True, metavar="VERB")

    check = verbs.add_parser(
        "check", help="print which of the given IDs may have changed",
        description="Print the IDs that may have changed (exit 0 whether or not any did; "
        "1 on an error; 3 when answered but the source is not shown current: hours after "
        "the last one read may have changed unseen, unless --accept-stale). The hours read "
        "are said on stderr (in --json, as from and to).")
    check.add_argument("--server", default=os.environ.get("BLOOMCAST_SERVER"),
                       help=server_help)
    window = check.add_mutually_exclusive_group()
    window.add_argument("--since", type=hour_arg, metavar="HOUR",
                        help="the first hour to look at, e.g. 2008-09-03T05 (UTC)")
    window.add_argument("--hours", type=positive, metavar="N",
                        help="look at the last N hours, the current one included "
                        "[default: 24]")
    check.add_argument("--strategy", choices=["auto", "hourly", "union", "compact", "pages"],
                       default="auto",
                       help="fetch per hour, one union, the closed hours as one version 2 "
                       "union beside the open hour (compact; the union where the server "
                       "serves none), per hour with each closed hour read by the pages of "
                       "the IDs checked (pages, by HTTP Range; the hour whole where it "
                       "has no paged form), or whichever is expected to cost fewer bytes "
                       "(auto; hour by hour reads pages where they cost less) "
                       "[default: auto]")
    check.add_argument("--fetch-cost", type=non_negative, default=DEFAULT_FETCH_COST,
                       metavar="BYTES",
                       help="what fetching one resource costs: each closed hour is read "
                       "as a v1 filter or a ribbon (version 2 where the server serves it) "
                       "at the precision minimising filter bytes plus IDs checked * fpp * "
                       "BYTES [default: 10240]")
    check.add_argument("--exact", action="store_true",
                       help="read every sealed hour at or after the server's exact_since "
                       "with its exact body (no false positive for IDs of the publisher's "
                       "universe; without --registered it refines a filter at the target "
                       "fpp); an error when the server has no universe. Without it, an "
                       "exact body is read when no larger than the cheapest other form's "
                       "bytes plus expected wasted fetches")
    check.add_argument("--registered", action="store_true",
                       help="declare every ID checked registered in the publisher's "
                       "universe (POST /universe) before the first hour checked: exact "
                       "bodies are then read alone. An exact body answers any other ID "
                       "arbitrarily and the universe is never published, so without this "
                       "each one only refines a filter at the target fpp (an ID is "
                       "flagged when both say so)")
    check.add_argument("--json", action="store_true",
                       help="print one JSON object (from, to, ranges, unverified, stale, "
                       "requests, bytes) instead of lines")
    check.add_argument("--pubkey", metavar="KEY",
                       help="verify everything read against the publisher's public key "
                       "(64 hex digits; needs the cryptography package): every hour under "
                       "the key listed for it, trusted only through successions KEY "
                       "signed; the open hour by its signature, and the publisher's "
                       "checkpoint")
    check.add_argument("--accept-stale", action="store_true",
                       help="exit 0 even when the source is not shown current (its newest "
                       "hour more than 2 hours before this machine's current hour, or "
                       "behind the publisher's checkpoint); it is still said on stderr. "
                       "Without it, such an answer exits 3")
    check.add_argument("--freshness", type=positive, default=600, metavar="SECONDS",
                       help="with --pubkey, the oldest version of the open hour taken, by "
                       "the time it was signed: an older one may be a replay hiding the "
                       "changes since [default: 600]")
    check.add_argument("ids", nargs="+", metavar="ID",
                       help="IDs to check; - reads one per line from stdin")
    check.set_defaults(run=cmd_check, needs_server=True)
    add_history(verbs, server_help)

    ingest = verbs.add_parser(
        "ingest", help="publish IDs into the server's current hour",
        description="Publish IDs in batches; 503s and timeouts are retried, a refused "
        "connection fails at once.")
    ingest.add_argument("--server", default=os.environ.get("BLOOMCAST_SERVER"),
                        help=server_help)
    ingest.add_argument("--token", default=os.environ.get("BLOOMCAST_TOKEN"),
                        help="a bearer token the server accepts (default: $BLOOMCAST_TOKEN)")
    ingest.add_argument("--batch", type=positive, default=1000,
                        help="IDs per request [default: 1000]")
    ingest.add_argument("--attempts", type=positive, default=8,
                        help="attempts per batch on 503s and timeouts [default: 8]")
    ingest.add_argument("ids", nargs="+", metavar="ID",
                        help="IDs to publish; - reads one per line from stdin")
    ingest.set_defaults(run=cmd_ingest, needs_server=True)

    add_inspect(verbs)
    add_estimate(verbs)

    test = verbs.add_parser(
        "selftest", help="check this client against the published test vectors",
        description="Check hashing, encoding and sizing against docs/test-vectors.json "
        "(or the chain, trust, ribbon, ribbon v2 or exact decoder against "
        "docs/chain-vectors.json, docs/trust-vectors.json, docs/ribbon-vectors.json, "
        "docs/ribbon2-vectors.json or docs/exact-vectors.json).")
    test.add_argument("vectors", nargs="?", default="docs/test-vectors.json",
                      help="the test vectors file [default: docs/test-vectors.json]")
    test.set_defaults(run=cmd_selftest, needs_server=False)

    verify = verbs.add_parser(
        "verify", help="verify the hour chain and each hour's filter against a key",
        description="Verify the hour chain from an hour on, and every listed hour's "
        "filter, against the publisher's key, from any base URL or a mirror directory "
        "(--dir, or --url file:///DIR: offline); on a static mirror every file of each "
        "hour (its .sig sidecars for the ribbons), and the publisher's checkpoint. Exit "
        "0: all verified; 1: something failed or could not be verified (named); 3: "
        "verified, but the source is not shown current (unless --accept-stale).")
    verify.add_argument("--pubkey", required=True, metavar="KEY",
                        help="the publisher's public key (64 hex digits)")
    verify.add_argument("--since", required=True, type=hour_arg, metavar="HOUR",
                        help="the first hour to verify, e.g. 2008-09-03T05 (UTC)")
    where = verify.add_mutually_exclusive_group()
    where.add_argument("--url", default=os.environ.get("BLOOMCAST_SERVER"),
                       help="the publisher or any mirror, or file:///DIR (default: "
                       "$BLOOMCAST_SERVER)")
    where.add_argument("--dir", metavar="DIR",
                       help="a mirror directory (bloomcast mirror DIR), verified offline")
    verify.add_argument("--accept-stale", action="store_true",
                        help="exit 0 even when the source is not shown current (said on "
                        "stderr); without it, exit 3")
    verify.set_defaults(run=cmd_verify, needs_server=False)
    add_watch(verbs, server_help)
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    if args.needs_server and not args.server:
        p.error("--server is required (or set BLOOMCAST_SERVER)")
    refuse(args, argv)
    try:
        status = args.run(args)
    except (Failure, Refused, HTTPError, ConnectionFailed, ProtocolError, VerificationError,
            MissingDependency, ValueError, OSError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
