"""The HTTP ecosystem's own checkers against a live bloomcast server.

1. The OpenAPI description (docs/openapi.json, as the server serves it) is validated as
   OpenAPI 3.1 (openapi-spec-validator).
2. schemathesis runs every operation of it against the server: no server error, no
   response that contradicts the description, no undocumented status.
3. httplint (REDbot's engine) reads every form of an open and a sealed hour, a union
   (a day and a since-range), the index, the chain and the key list, each fetched as a
   poller does (gzip) and revalidated with its ETag: no note at warning level or worse.
4. feedparser reads the Atom feed of sealed hours (`/hours.atom`): well formed, stable
   tag URI ids, the sealed hour's entry with its links and count.

Run by tests/http_checkers.rs (which starts the server and seeds it) with the Python of
a virtual environment holding tests/http-checkers/requirements.txt:

    python check.py --base http://127.0.0.1:PORT --token TOKEN \
        --open /2008/09/03/14 --sealed /2008/09/03/13 --past-day /2008/09/02

Prints the figures (operations, cases, failures; notes by level) and exits 1 when a
checker found anything.
"""

import argparse
import collections
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

from httplint import HttpRequestLinter, HttpResponseLinter, levels
from openapi_spec_validator import validate

# The forms of an hour, a day and a since-range (docs/API.md).
DAY_FORMS = ["", ".json", ".hex", ".bin", ".ribbon", ".ribbon.json", ".ribbon2"]
HOUR_FORMS = DAY_FORMS + [".exact"]
FAILING_LEVELS = {levels.WARN, levels.BAD}
HERE = os.path.dirname(os.path.abspath(__file__))


def fetch_json(base, path):
    with urllib.request.urlopen(base + path) as reply:
        return json.load(reply)


def validate_description(base):
    """The served description validates as OpenAPI 3.1; returns it."""
    doc = fetch_json(base, "/openapi.json")
    validate(doc)
    operations = sum(
        1 for item in doc["paths"].values() for method in item if method in ("get", "head", "post")
    )
    print(f"openapi: {doc['openapi']} valid, {len(doc['paths'])} paths, {operations} operations")
    return doc


def schemathesis(args, venv_bin):
    """Runs schemathesis over every operation; returns (operations, cases, failures, rc)
    as its summary says them."""
    with tempfile.TemporaryDirectory() as out:
        command = [
            os.path.join(venv_bin, "schemathesis"),
            "--config-file", os.path.join(HERE, "schemathesis.toml"),
            "run", args.base + "/openapi.json",
            "--url", args.base,
            "--header", f"Authorization: Bearer {args.token}",
            "--checks", "all",
            "--max-examples", str(args.max_examples),
            "--generation-deterministic",
            "--request-timeout", "30",
            # One worker: under CPython 3.11 two of its threads building ASTs at once
            # crashed a CI run once ("SystemError: AST constructor recursion depth
            # mismatch", the interpreter's AST state being shared by its threads).
            "--workers", "1",
            "--no-color",
        ]
        print("$ " + " ".join(command), flush=True)
        # In a directory of its own: it keeps an example database where it runs.
        run = subprocess.run(command, check=False, cwd=out, capture_output=True, text=True)
    print(run.stdout + run.stderr, flush=True)
    summary = run.stdout
    operations = re.search(r"Tested: (\d+)", summary)
    cases = re.search(r"(\d+) generated", summary)
    failures = re.search(r"(\d+) found (\d+) unique failures", summary)
    return (
        int(operations.group(1)) if operations else None,
        int(cases.group(1)) if cases else None,
        int(failures.group(2)) if failures else 0,
        run.returncode,
    )


def raw_get(base, path, headers):
    """GET `path` as sent, returning (version, status, reason, raw header tuples, body)."""
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    conn.request("GET", path, headers=headers)
    reply = conn.getresponse()
    body = reply.read()
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in reply.getheaders()]
    version = {10: b"1.0", 11: b"1.1"}.get(reply.version, b"1.1")
    conn.close()
    return version, reply.status, reply.reason, raw, body


def lint(base, path, headers):
    """httplint's notes on one exchange, and the response's ETag."""
    request_headers = {"Host": urllib.parse.urlsplit(base).netloc, "User-Agent": "bloomcast-http-checkers"}
    request_headers.update(headers)
    version, status, reason, raw, body = raw_get(base, path, request_headers)
    request = HttpRequestLinter()
    request.process_request_topline(b"GET", (base + path).encode(), b"1.1")
    request.process_headers([(k.encode(), v.encode()) for k, v in request_headers.items()])
    request.finish_content(True)
    response = HttpResponseLinter(_related=request)
    response.process_response_topline(version, str(status).encode(), reason.encode())
    response.process_headers(raw)
    response.feed_content(body)
    response.finish_content(True)
    etag = dict((k.lower(), v) for k, v in raw).get(b"etag")
    return status, response.notes, etag


def flatten(notes):
    for note in notes:
        yield note
        yield from flatten(getattr(note, "subnotes", []))


def linked_dictionary(base, path):
    """The URL path the open hour's response links as its compression dictionary, if any."""
    _, _, _, raw, _ = raw_get(base, path, {"Host": urllib.parse.urlsplit(base).netloc})
    for name, value in raw:
        if name.lower() == b"link":
            for link in value.decode("latin-1").split(","):
                if 'rel="compression-dictionary"' in link:
                    return link.split(">")[0].strip().lstrip("<")
    return None


def httplint_paths(args):
    """Every form of the open and the sealed hour, of a day that includes the open hour
    and one that is over, and of a since-range; the index, the chain, the key list, the
    checkpoint and the description; and the dictionary the open hour links."""
    today = args.sealed.rsplit("/", 1)[0]
    paths = [args.open + form for form in HOUR_FORMS]
    paths += [args.sealed + form for form in HOUR_FORMS]
    paths += [day + form for day in [today, args.past_day] for form in DAY_FORMS]
    paths += ["/since" + args.sealed + form for form in DAY_FORMS]
    paths += ["/", "/chain" + args.sealed, "/.well-known/bloomcast.json", "/checkpoint", "/openapi.json",
              "/hours.atom"]
    dictionary = linked_dictionary(args.base, args.open + ".bin")
    if dictionary:
        paths.append(dictionary)
    return paths


def run_httplint(args):
    """Lints each path, fetched with gzip and then revalidated with its ETag; returns the
    paths, the notes' counts by level and the lines of those at warning level or worse."""
    by_level = collections.Counter()
    failing = []
    paths = httplint_paths(args)
    for path in paths:
        status, notes, etag = lint(args.base, path, {"Accept-Encoding": "gzip"})
        results = [(f"GET {path} (gzip)", status, notes)]
        if etag:
            again = {"Accept-Encoding": "gzip", "If-None-Match": etag.decode("latin-1")}
            status2, notes2, _ = lint(args.base, path, again)
            results.append((f"GET {path} (If-None-Match)", status2, notes2))
        for what, status, notes in results:
            for note in flatten(notes):
                by_level[note.level.value] += 1
                failed = note.level in FAILING_LEVELS
                line = f"{'!!' if failed else '  '} {what} -> {status}: [{note.level.value}] {note.summary}"
                if failed:
                    failing.append(line)
                if args.verbose or failed:
                    print(line)
    return paths, by_level, failing


def check_feed(args):
    """The Atom feed read by a real feed parser (feedparser): well formed, ids stable
    tag URIs, one entry per sealed hour with its links and its count; returns the
    problems found."""
    import feedparser

    url = args.base + "/hours.atom"
    first, again = feedparser.parse(url), feedparser.parse(url)
    problems = []
    if first.bozo:
        problems.append(f"feedparser: {first.bozo_exception}")
    if first.version != "atom10":
        problems.append(f"not Atom 1.0 to feedparser: {first.version!r}")
    feed_id = first.feed.get("id", "")
    if not feed_id.startswith("tag:") or feed_id != again.feed.get("id"):
        problems.append(f"feed id not a stable tag URI: {feed_id!r}")
    if not any(l.get("rel") == "self" and l["href"] == url for l in first.feed.get("links", [])):
        problems.append("no rel=self link to the feed's own URL")
    sealed = args.sealed.lstrip("/")
    entries = [e for e in first.entries
               if any(l["href"].endswith("/" + sealed) for l in e.get("links", []))]
    if len(entries) != 1:
        problems.append(f"{len(entries)} entries for the sealed hour {args.sealed}, not one")
    else:
        entry = entries[0]
        forms = {l.get("title") or "json": l["href"] for l in entry.links}
        for form in ["json", "bin", "hex", "ribbon2", "chain"]:
            if form not in forms:
                problems.append(f"the entry has no {form} link")
        if not entry.id.startswith(feed_id.rsplit(":", 1)[0] + ":hour/"):
            problems.append(f"entry id {entry.id!r} is not of the feed's tag")
        if "bc_count" not in entry or not entry["bc_count"].isdigit():
            problems.append("the entry has no bc:count")
    ids = [e.id for e in first.entries]
    if len(set(ids)) != len(ids) or ids != [e.id for e in again.entries]:
        problems.append("entry ids are not unique and stable")
    print(f"feedparser: {len(first.entries)} entries, version {first.version}, {len(problems)} problems")
    for p in problems:
        print("!! " + p)
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--open", required=True, help="the open hour's path")
    parser.add_argument("--sealed", required=True, help="a sealed hour's path")
    parser.add_argument("--past-day", required=True, help="the path of a day that is over")
    parser.add_argument("--max-examples", type=int, default=20)
    parser.add_argument("--only", choices=["schemathesis", "httplint"])
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    venv_bin = os.path.dirname(sys.executable)

    validate_description(args.base)
    ok = not check_feed(args)
    if args.only in (None, "httplint"):
        paths, by_level, failing = run_httplint(args)
        counts = ", ".join(f"{lv.value} {by_level[lv.value]}" for lv in [levels.BAD, levels.WARN, levels.INFO, levels.GOOD])
        print(f"httplint: {len(paths)} URLs; notes: {counts}")
        ok &= not failing
    if args.only in (None, "schemathesis"):
        operations, cases, failures, rc = schemathesis(args, venv_bin)
        print(f"schemathesis: {operations} operations, {cases} cases, {failures} failures (exit {rc})")
        ok &= rc == 0 and failures == 0 and bool(operations) and bool(cases)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
