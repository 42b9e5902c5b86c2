#!/usr/bin/env bash
# Memory under an adversarial mix: does the server's peak RSS stay within
#   cache_bytes + the open hour's keys (16 bytes per distinct ID) + 64 MiB
# while every kind of request that makes it hold memory arrives at once, with a trickle
# of ingest? A store holding PAST_HOURS past hours of HOUR_IDS distinct IDs each (no ID in
# two hours; two days and more, so there are whole past days) and an open hour seeded
# with OPEN_IDS; then, for MIX_SECS, all at once:
# - since-ranges from every served hour, in every v1 form (.json, .hex, .bin and the plain
#   path under each Accept; identity and gzip), a third of them revalidated;
# - day unions (every past day and today), in the same forms;
# - compact filters (`?fpp=`) of closed hours and past days at every precision of the
#   ladder (2^-4 .. 2^-24, each spelt two ways), binary and JSON, by suffix and by Accept;
# - `dcz` polls of the open hour (.bin, .json, .hex), each naming a random dictionary, or
#   the real one (the last body served with `Use-As-Dictionary`), or none;
# - `/history` with 1,000 IDs a request (its limit, so one request asks them all);
# - `/stats`, `/metrics` and `/`; `/dashboard` and its assets;
# - a 304 storm (wrk): every closed hour and past day in .bin, .json and .hex, identity
#   and gzip, each with its ETag in If-None-Match;
# - ingest: INGEST_IDS new IDs every 0.5 s.
#
#   benches/harness/memory.sh                       # 256 MiB, 48 x 200,000 IDs, 60 s
#   HOUR_IDS=20000 PAST_HOURS=30 MIX_SECS=15 benches/harness/memory.sh   # a quick run
#   BUDGET=67108864 benches/harness/memory.sh       # cache_bytes = 64 MiB
#   BIN=/path/to/bloomcast EXAMPLES=/path/to/examples benches/harness/memory.sh
#   KEEP=1 benches/harness/memory.sh                # keep the work dir (server log, samples)
#   ONLY=ribbons,storm benches/harness/memory.sh    # those kinds alone (and the trickle)
#
# Knobs: BUDGET (cache_bytes, bytes; default 268435456), HOUR_IDS (200000), PAST_HOURS
# (48), OPEN_IDS (100000), MIX_SECS (60), INGEST_IDS (200), STORM_CONNS (16, wrk's
# connections), BIN and EXAMPLES (common.sh); ONLY, a comma-separated subset of since,
# days, ribbons, dcz, history, stats, dashboard and storm, runs those kinds alone (the
# ingest trickle always runs), to tell which kind holds what.
#
# The past hours are seeded through the store API (examples/seed_closed_hour.rs), oldest
# first, so the server's startup seals them; the server runs pinned to core 0 with
# BLOOMCAST_CACHE_BYTES=$BUDGET, every client (one Python thread per kind, keep-alive,
# and wrk) on core 1. Before the mix the ETags of the storm are read (which builds each
# past day once). Prints:
# - the budget, the open hour's distinct IDs (the most /stats reported) and their keys
#   at 16 B/ID, and the bound;
# - the peak RSS (VmHWM) over the server's whole life, split into before the mix
#   (startup, sealing, the ETag reads) and during it (VmHWM reset through
#   /proc/PID/clear_refs), with `within the bound: yes/no`;
# - VmRSS at the start and the end of the mix and the most of its samples (every 0.2 s,
#   as are RssAnon, RssFile and the server's thread count), and VmRSS and /stats
#   memory.bytes 5 s after the mix (what the server keeps once the load stops);
# - the most /stats `memory.bytes` said while polled every second, of its budget;
# - how close /stats' accounting is to what the process holds: beyond an idle empty server
#   (started first, alone, with the same settings), `memory.bytes` plus
#   `memory.outside_budget_bytes` against `memory.process.anonymous_bytes` (heaps and
#   stacks: the binary's code pages are file-backed), both read by one request, at each
#   sample of the mix (min, median, max), at the sample holding the most, and 5 s after;
# - /stats `memory` at the end, each part's bytes (and its most while polled) of its
#   budget_bytes;
# - requests by kind: total, 200, 304, 406, 413, 503, other statuses, failed (no HTTP
#   answer), and WARNING lines for what should not happen (a 5xx other than 503, a
#   failed connection, a 4xx other than 406 and 413, a 200 in the 304 storm, a published
#   ID /history does not find);
# - the ribbon precisions served, what the dcz polls got, /history's checks;
# - the server log's WARN and ERROR lines, if any (but the one saying a signing key was
#   generated, as every fresh data dir does).
# Exits 1 when the peak is over the bound.
set -euo pipefail
source "$(dirname "$0")/common.sh"
ensure_tools wrk:wrk python3:python3
BUDGET="${BUDGET:-268435456}"
HOUR_IDS="${HOUR_IDS:-200000}"
PAST_HOURS="${PAST_HOURS:-48}"
OPEN_IDS="${OPEN_IDS:-100000}"
MIX_SECS="${MIX_SECS:-60}"
INGEST_IDS="${INGEST_IDS:-200}"
STORM_CONNS="${STORM_CONNS:-16}"
make_work
[[ -x "$BIN" && -x "$EXAMPLES/seed_closed_hour" ]] || build

# The Python client: `prep` (the storm's ETags, the plan), `mix` (the threads and the
# samplers), `report` (the summary).
cat >"$WORK/memory_mix.py" <<'PY'
import base64, gzip, hashlib, http.client, json, os, random, re, sys, threading, time
import urllib.parse
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone

HOST = "127.0.0.1"
ENV = os.environ
PORT = int(ENV["PORT"])
TOKEN = ENV["TOKEN"]
WORK = ENV["WORK"]
HOUR_IDS, PAST_HOURS, OPEN_IDS = int(ENV["HOUR_IDS"]), int(ENV["PAST_HOURS"]), int(ENV["OPEN_IDS"])
MIB = 1 << 20


def parse_hour(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def hour_path(h):
    return h.strftime("/%Y/%m/%d/%H")


def day_path(d):
    return d.strftime("/%Y/%m/%d")


class Tally:
    """Answers by kind and status, requests that got none, and checks, shared by threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.codes = defaultdict(Counter)
        self.failed = Counter()
        self.failures = defaultdict(list)
        self.retried = Counter()
        self.extra = defaultdict(Counter)

    def status(self, kind, code):
        with self.lock:
            self.codes[kind][code] += 1

    def fail(self, kind, what):
        with self.lock:
            self.failed[kind] += 1
            if len(self.failures[kind]) < 5:
                self.failures[kind].append(what)

    def retry(self, kind):
        with self.lock:
            self.retried[kind] += 1

    def note(self, group, key, n=1):
        with self.lock:
            self.extra[group][key] += n


class Client:
    """One keep-alive connection; every answer counted under its kind. A request on a
    reused connection the server has closed (idle keep-alive ends after a few seconds) is
    sent once more on a fresh one; a request that fails on a fresh one is a failure."""

    def __init__(self, kind, tally):
        self.kind, self.tally, self.conn = kind, tally, None

    def request(self, method, path, headers=None, body=None):
        for attempt in (0, 1):
            fresh = self.conn is None
            if fresh:
                self.conn = http.client.HTTPConnection(HOST, PORT, timeout=120)
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                resp = self.conn.getresponse()
                data = resp.read()
            except (http.client.HTTPException, OSError) as e:
                self.conn.close()
                self.conn = None
                if fresh or attempt == 1:
                    self.tally.fail(self.kind, f"{method} {path[:90]}: {type(e).__name__}: {e}")
                    return None, None
                self.tally.retry(self.kind)
                continue
            self.tally.status(self.kind, resp.status)
            if resp.will_close:
                self.conn.close()
                self.conn = None
            return resp, data
        return None, None


def get_json(path, tries=600):
    """A JSON read before the mix, waiting out 503s."""
    for _ in range(tries):
        c = http.client.HTTPConnection(HOST, PORT, timeout=600)
        c.request("GET", path)
        r = c.getresponse()
        data = r.read()
        c.close()
        if r.status == 200:
            return json.loads(data)
        time.sleep(0.5)
    sys.exit(f"GET {path} kept failing: {r.status} {data[:200]!r}")


# ---------------------------------------------------------------- prep

def prep():
    stats = get_json("/stats?hours=1")
    cur = parse_hour(stats["current"]["hour"])
    closed = [cur - timedelta(hours=a) for a in range(PAST_HOURS, 0, -1)]
    days = sorted({h.date() for h in closed if h.date() < cur.date()})
    plan = {
        "current": stats["current"]["hour"],
        "closed": [hour_path(h) for h in closed],
        "past_days": [day_path(d) for d in days],
        "today": day_path(cur.date()),
        "since": ["/since" + hour_path(h) for h in closed + [cur]],
        "open": hour_path(cur),
    }
    # The storm's requests: every closed hour and past day, every v1 suffix, identity and
    # gzip, with the ETag each one has (a past day is built once here).
    lines, refused = [], Counter()
    c = http.client.HTTPConnection(HOST, PORT, timeout=600)
    for target in plan["closed"] + plan["past_days"]:
        for suffix in (".bin", ".json", ".hex"):
            for ae in ("", "gzip"):
                for _ in range(120):
                    c.request("GET", target + suffix, headers={"Accept-Encoding": ae} if ae else {})
                    r = c.getresponse()
                    r.read()
                    if r.status != 503:
                        break
                    time.sleep(float(r.getheader("Retry-After") or 1))
                if r.status == 200 and r.getheader("ETag"):
                    lines.append(f"{target}{suffix}\t{ae}\t{r.getheader('ETag')}")
                else:
                    refused[r.status] += 1
                if r.will_close:
                    c.close()
                    c = http.client.HTTPConnection(HOST, PORT, timeout=600)
    if not lines:
        sys.exit(f"no ETag for the 304 storm (statuses {dict(refused)})")
    plan["storm_requests"] = len(lines)
    plan["storm_refused"] = {str(k): v for k, v in refused.items()}
    with open(f"{WORK}/etags.tsv", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(f"{WORK}/plan.json", "w") as f:
        json.dump(plan, f)
    print(f"{len(closed)} closed hours, {len(days)} past days, {len(lines)} ETags for the storm",
          file=sys.stderr)


# ---------------------------------------------------------------- mix

# Every v1 form: the suffixes, and the plain path under each Accept; identity and gzip.
GZ = ({}, {"Accept-Encoding": "gzip"})
V1_FORMS = [(s, dict(e)) for s in (".json", ".hex", ".bin") for e in GZ] + [
    ("", dict(a, **e))
    for a in ({}, {"Accept": "application/json"}, {"Accept": "text/plain"},
              {"Accept": "application/octet-stream"})
    for e in GZ
]
RIBBON_FORMS = [
    (".ribbon", {}),
    (".ribbon.json", {}),
    (".ribbon.json", {"Accept-Encoding": "gzip"}),
    ("", {"Accept": "application/vnd.bloomcast.ribbon"}),
    ("", {"Accept": "application/vnd.bloomcast.ribbon+json", "Accept-Encoding": "gzip"}),
]
PRECISIONS = range(4, 25)


def v1_reader(targets):
    """Unions in every form; a third of the requests revalidate what the same URL and
    headers got last (as a poller would)."""

    def step(client, rng, etags):
        target = rng.choice(targets)
        suffix, headers = rng.choice(V1_FORMS)
        path = target + suffix
        key = (path, tuple(sorted(headers.items())))
        h = dict(headers)
        if key in etags and rng.random() < 1 / 3:
            h["If-None-Match"] = etags[key]
        resp, _ = client.request("GET", path, h)
        if resp is not None and resp.status == 200 and resp.getheader("ETag"):
            etags[key] = resp.getheader("ETag")

    return step


def ribbon_reader(targets, offset):
    """Compact filters at every precision in turn, each spelt as 2^-r exactly or as
    1.5 x 2^-r (which rounds down to the same r), in every form."""
    order = [PRECISIONS[(i + offset) % len(PRECISIONS)] for i in range(len(PRECISIONS))]
    n = [0]

    def step(client, rng, etags):
        r = order[n[0] % len(order)]
        n[0] += 1
        fpp = repr(2.0 ** -r) if rng.random() < 0.5 else f"{1.5 * 2.0 ** -r:.6g}"
        suffix, headers = rng.choice(RIBBON_FORMS)
        path = f"{rng.choice(targets)}{suffix}?fpp={fpp}"
        key = (path, tuple(sorted(headers.items())))
        h = dict(headers)
        if key in etags and rng.random() < 0.2:
            h["If-None-Match"] = etags[key]
        resp, _ = client.request("GET", path, h)
        if resp is None or resp.status != 200:
            return
        etags[key] = resp.getheader("ETag")
        m = re.search(r"\br=(\d+)", resp.getheader("Bloom-Ribbon") or "")
        if m:
            tally.note("ribbon_r", int(m.group(1)))
            if int(m.group(1)) != r:
                tally.note("ribbon_wrong_r", f"asked fpp={fpp} (r={r}), served r={m.group(1)}")

    return step


def dcz_poller(open_path):
    """Polls of the open hour, most naming a random dictionary, a quarter the real one."""
    held = {s: {"dict": None, "etag": None} for s in (".bin", ".json", ".hex")}

    def step(client, rng, etags):
        suffix = rng.choice(list(held))
        st = held[suffix]
        x = rng.random()
        h = {"Accept-Encoding": "dcz, gzip"}
        named = "random"
        if x < 0.1:
            h = {"Accept-Encoding": "gzip"}
            named = "none"
        elif x < 0.35 and st["dict"]:
            h["Available-Dictionary"] = f":{st['dict']}:"
            named = "real"
        else:
            h["Available-Dictionary"] = f":{base64.b64encode(os.urandom(32)).decode()}:"
            if x < 0.45 and st["etag"]:
                h["If-None-Match"] = st["etag"]
                named = "random + If-None-Match"
        resp, data = client.request("GET", open_path + suffix, h)
        if resp is None:
            return
        ce = resp.getheader("Content-Encoding") or "identity"
        tally.note("dcz", f"dictionary {named}: {resp.status} {ce if resp.status == 200 else ''}".rstrip())
        if resp.status != 200:
            return
        if ce != "dcz":
            st["etag"] = resp.getheader("ETag")
        if resp.getheader("Use-As-Dictionary") and ce in ("gzip", "identity"):
            body = gzip.decompress(data) if ce == "gzip" else data
            st["dict"] = base64.b64encode(hashlib.sha256(body).digest()).decode()
            tally.note("dcz_dictionaries", suffix)

    return step


def history_asker(cur, acked):
    """1,000 IDs a request: published ones from the past hours, the open hour and the
    trickle, and never-published ones; a quarter with a `since`. Without `since` every
    published ID must be found in some hour."""

    def step(client, rng, etags):
        published = [f"h{rng.randint(1, PAST_HOURS)}:{rng.randrange(HOUR_IDS)}" for _ in range(800)]
        if OPEN_IDS:
            published += [f"open:{rng.randrange(OPEN_IDS)}" for _ in range(100)]
        if acked[0]:
            published += [f"trickle:{rng.randrange(acked[0])}" for _ in range(50)]
        ids = published + [f"absent:{rng.getrandbits(64):x}" for _ in range(1000 - len(published))]
        query = "&".join("id=" + urllib.parse.quote(i, safe="") for i in ids)
        since = rng.random() < 0.25
        if since:
            hour = cur - timedelta(hours=rng.randint(0, PAST_HOURS))
            query += "&since=" + hour.strftime("%Y-%m-%dT%H")
        resp, data = client.request("GET", "/history?" + query, {"Authorization": f"Bearer {TOKEN}"})
        if resp is None or resp.status != 200 or since:
            return
        found = {e["id"]: e["hours"] for e in json.loads(data)["ids"]}
        missed = sum(1 for i in published if not found.get(i))
        tally.note("history", "published IDs checked", len(published))
        if missed:
            tally.note("history", "published IDs not found", missed)

    return step


def cycler(paths):
    n = [0]

    def step(client, rng, etags):
        client.request("GET", paths[n[0] % len(paths)])
        n[0] += 1

    return step


def ingester(batch, acked):
    """INGEST_IDS new IDs every 0.5 s, as JSON."""
    sent = [0]
    tick = [time.monotonic()]

    def step(client, rng, etags):
        ids = [f"trickle:{i}" for i in range(sent[0], sent[0] + batch)]
        body = json.dumps({"ids": ids}).encode()
        resp, _ = client.request("POST", "/updates", {"Authorization": f"Bearer {TOKEN}",
                                                      "Content-Type": "application/json"}, body)
        sent[0] += batch
        if resp is not None and resp.status == 200:
            acked[0] = sent[0]
        tick[0] += 0.5
        time.sleep(max(0.0, tick[0] - time.monotonic()))

    return step


def loop(kind, step, deadline, seed):
    client, rng, etags = Client(kind, tally), random.Random(seed), {}
    while time.monotonic() < deadline:
        step(client, rng, etags)


def read_status(pid, field, unit=1024):
    """A field of /proc/PID/status: bytes for the Vm* ones (given in kB), unit=1 for counts."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * unit
    return 0


def rss_sampler(pid, deadline, out):
    """VmRSS every 0.2 s, with its anonymous and file-backed parts and the thread count."""
    with open(f"{WORK}/rss.tsv", "w") as f:
        f.write("unix_time\tVmRSS\tRssAnon\tRssFile\tThreads\n")
        while time.monotonic() < deadline:
            row = [read_status(pid, "VmRSS"), read_status(pid, "RssAnon"),
                   read_status(pid, "RssFile"), read_status(pid, "Threads", unit=1)]
            for name, v in zip(("rss", "anon", "file", "threads"), row):
                out[name] = max(out.get(name, 0), v)
            out["samples"] = out.get("samples", 0) + 1
            f.write(f"{time.time():.1f}\t" + "\t".join(map(str, row)) + "\n")
            time.sleep(0.2)


def open_count(stats):
    opened = [h for h in stats["hours"] if not h["complete"]]
    return opened[-1]["count"] if opened else 0


def stats_sampler(deadline, out):
    client = Client("sampler", tally)
    with open(f"{WORK}/stats.jsonl", "w") as f:
        while time.monotonic() < deadline:
            t = time.monotonic()
            resp, data = client.request("GET", "/stats?hours=1")
            if resp is not None and resp.status == 200:
                s = json.loads(data)
                mem = s["memory"]
                out["samples"] += 1
                out["bytes"] = max(out["bytes"], mem["bytes"])
                for name, part in mem["parts"].items():
                    out["parts"][name] = max(out["parts"].get(name, 0), part["bytes"])
                out["open_ids"] = max(out["open_ids"], open_count(s))
                out["hours"][s["current"]["hour"]] = 1
                f.write(json.dumps({"at": time.time(), "memory": mem, "open_ids": open_count(s)}) + "\n")
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t)))


def mix(pid, secs, batch):
    plan = json.load(open(f"{WORK}/plan.json"))
    cur = parse_hour(plan["current"])
    acked = [0]
    deadline = time.monotonic() + secs
    v1_days = plan["past_days"] + [plan["today"]]
    ribbon_targets = plan["closed"] + plan["past_days"]
    kinds = [
        ("since", v1_reader(plan["since"])),
        ("since", v1_reader(plan["since"])),
        ("days", v1_reader(v1_days)),
        ("ribbons", ribbon_reader(ribbon_targets, 0)),
        ("ribbons", ribbon_reader(ribbon_targets, 10)),
        ("dcz", dcz_poller(plan["open"])),
        ("history", history_asker(cur, acked)),
        ("stats", cycler(["/stats", "/metrics", "/stats?hours=720", "/"])),
        ("dashboard", cycler(["/dashboard", "/dashboard/app.js", "/dashboard/style.css",
                              "/dashboard/bloomcast.js"])),
    ]
    only = [k for k in ENV.get("ONLY", "").split(",") if k]
    if only:
        kinds = [(k, s) for k, s in kinds if k in only]
    kinds.append(("ingest", ingester(batch, acked)))
    rss, peak = {}, {"samples": 0, "bytes": 0, "parts": {}, "open_ids": 0, "hours": {}}
    threads = [threading.Thread(target=rss_sampler, args=(pid, deadline, rss), daemon=True),
               threading.Thread(target=stats_sampler, args=(deadline, peak), daemon=True)]
    threads += [threading.Thread(target=loop, args=(k, s, deadline, i), daemon=True)
                for i, (k, s) in enumerate(kinds)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(1.0, deadline - time.monotonic() + 90))
    late = sum(t.is_alive() for t in threads)
    rss_end = read_status(pid, "VmRSS")
    final = get_json("/stats?hours=1")
    peak["open_ids"] = max(peak["open_ids"], open_count(final))
    peak["hours"][final["current"]["hour"]] = 1
    # What the server gives back once the load stops.
    time.sleep(5)
    rss_settled = read_status(pid, "VmRSS")
    settled_memory = get_json("/stats?hours=1")["memory"]
    settled = settled_memory["bytes"]
    out = {
        "secs": secs, "plan_current": plan["current"], "hours_seen": sorted(peak["hours"]),
        "rss_end": rss_end, "rss_peaks": rss,
        "rss_settled": rss_settled, "held_settled": settled, "memory_settled": settled_memory, "stats_peak": peak, "final_memory": final["memory"],
        "final_open_ids": open_count(final), "late_threads": late,
        "codes": {k: {str(s): n for s, n in c.items()} for k, c in tally.codes.items()},
        "failed": dict(tally.failed), "failures": dict(tally.failures),
        "retried": dict(tally.retried),
        "extra": {g: {str(k): n for k, n in c.items()} for g, c in tally.extra.items()},
        "storm_requests": plan["storm_requests"], "storm_refused": plan["storm_refused"],
        "ingested": acked[0],
    }
    with open(f"{WORK}/mix.json", "w") as f:
        json.dump(out, f)


# ---------------------------------------------------------------- report

KINDS = [
    ("since", "since-ranges, 14 forms"),
    ("days", "day unions, 14 forms"),
    ("ribbons", "?fpp= ribbons, 21 precisions"),
    ("dcz", "dcz polls of the open hour"),
    ("history", "/history, 1,000 IDs each"),
    ("stats", "/stats, /metrics, /"),
    ("dashboard", "/dashboard and its assets"),
    ("ingest", "ingest"),
    ("sampler", "/stats sampler, 1/s"),
    ("storm", "304 storm (wrk)"),
]
SHOWN = ("200", "304", "406", "413", "503")


def mib(b):
    return f"{b / MIB:.1f} MiB"


def accounting(memory, empty):
    """(what /stats accounts for, what the process holds), each beyond the empty server:
    the budget's parts and what is held outside it, against anonymous resident memory
    (heaps and stacks; the binary's code pages are file-backed)."""
    def counted(m):
        return m["bytes"] + m["outside_budget_bytes"]
    return (counted(memory) - counted(empty),
            memory["process"]["anonymous_bytes"] - empty["process"]["anonymous_bytes"])


def accounting_report(r):
    """How close /stats' accounting is to what the process holds, at each 1/s sample of
    the mix (both read by the same request) and 5 s after it."""
    empty = json.load(open(f"{WORK}/empty.json"))["memory"]
    if "process" not in empty:
        print("/stats against the process    (this build's /stats does not say what the process holds)")
        return
    samples = [accounting(json.loads(line)["memory"], empty) for line in open(f"{WORK}/stats.jsonl")]
    ratios = sorted(c / h for c, h in samples if h > 0)
    settled_c, settled_h = accounting(r["memory_settled"], empty)
    peak_c, peak_h = max(samples, key=lambda s: s[1])
    q = lambda f: ratios[min(len(ratios) - 1, int(f * len(ratios)))]
    print(f"empty server                  anonymous {mib(empty['process']['anonymous_bytes'])}, "
          f"/stats {mib(empty['bytes'])} + {mib(empty['outside_budget_bytes'])} outside the budget")
    print(f"/stats against the process    beyond the empty server, /stats bytes + outside_budget_bytes "
          f"against anonymous memory:")
    print(f"  during the mix (1/s)        min {q(0):.2f}, median {q(0.5):.2f}, max {q(1):.2f} "
          f"({len(ratios)} samples)")
    print(f"  at the most held            {mib(peak_c)} of {mib(peak_h)} ({peak_c / peak_h:.2f})")
    print(f"  5 s after the mix           {mib(settled_c)} of {mib(settled_h)} "
          f"({settled_c / settled_h:.2f})")


def report(budget, hwm_before, hwm_mix, rss_start, wrk_out):
    r = json.load(open(f"{WORK}/mix.json"))
    warnings = []
    # The storm's counts, from storm.lua's done().
    storm, storm_errors = Counter(), {}
    for line in open(wrk_out) if os.path.exists(wrk_out) else []:
        p = line.split()
        if len(p) == 3 and p[0] == "status":
            storm[p[1]] += int(p[2])
        elif p and p[0] == "errors":
            storm_errors = {k: int(v) for k, v in (x.split("=") for x in p[1:])}
    r["codes"]["storm"] = dict(storm)
    r["failed"]["storm"] = sum(storm_errors.values())
    if r["failed"]["storm"]:
        r["failures"]["storm"] = [f"wrk socket errors: {storm_errors}"]

    open_ids = max(r["stats_peak"]["open_ids"], r["final_open_ids"])
    keys = open_ids * 16
    bound = budget + keys + 64 * MIB
    peak = max(hwm_before, hwm_mix)
    within = peak <= bound
    print()
    print(f"### Memory under an adversarial mix for {r['secs']} s: {PAST_HOURS} past hours of "
          f"{HOUR_IDS:,} IDs, open hour seeded with {OPEN_IDS:,}")
    print()
    print(f"budget (cache_bytes)          {mib(budget)}")
    print(f"open hour                     {open_ids:,} IDs -> {mib(keys)} of keys at 16 B/ID")
    print(f"bound                         {mib(bound)}  (budget + open hour's keys + 64 MiB)")
    print(f"peak RSS (VmHWM)              {mib(peak)}  within the bound: {'yes' if within else 'NO'}"
          f"  ({100 * peak / bound:.0f}% of it)")
    print(f"  before the mix              {mib(hwm_before)}  (startup, sealing, the storm's ETags)")
    print(f"  during the mix              {mib(hwm_mix)}")
    rp = r["rss_peaks"]
    print(f"RSS at start of mix / end     {mib(rss_start)} / {mib(r['rss_end'])}")
    print(f"RSS sampled every 0.2 s       max {mib(rp.get('rss', 0))}: anonymous {mib(rp.get('anon', 0))}, "
          f"file-backed {mib(rp.get('file', 0))} (the most of each; {rp.get('samples', 0)} samples); "
          f"the server's threads: at most {rp.get('threads', 0)}")
    print(f"5 s after the mix             RSS {mib(r['rss_settled'])}, /stats memory.bytes {mib(r['held_settled'])}")
    sp = r["stats_peak"]
    print(f"/stats memory.bytes, peak     {mib(sp['bytes'])} of {mib(r['final_memory']['budget_bytes'])}"
          f" ({sp['samples']} samples, 1/s)")
    accounting_report(r)
    print()
    mem = r["final_memory"]
    print("/stats memory at the end       bytes        peak (1/s)   budget_bytes")
    print(f"  {'held (all parts)':<28}{mib(mem['bytes']):>12} {mib(sp['bytes']):>12} "
          f"{mib(mem['budget_bytes']):>14}")
    for name, part in mem["parts"].items():
        b = part.get("budget_bytes")
        cache = name.startswith("cache_")
        label = ("  " + name[len("cache_"):]) if cache else name
        share = mib(b) if b is not None else "(of cache)" if cache else "(outside)"
        print(f"  {label:<28}{mib(part['bytes']):>12} {mib(sp['parts'].get(name, 0)):>12} {share:>14}")
    print()
    print(f"requests by kind              {'total':>8} " + " ".join(f"{s:>7}" for s in SHOWN)
          + f" {'other':>7} {'failed':>7}")
    for kind, label in KINDS:
        codes = Counter({int(k): v for k, v in r["codes"].get(kind, {}).items()})
        failed = r["failed"].get(kind, 0)
        other = {c: n for c, n in codes.items() if str(c) not in SHOWN}
        total = sum(codes.values()) + failed
        if not total:
            continue
        print(f"  {label:<28}{total:>8,} " + " ".join(f"{codes.get(int(s), 0):>7,}" for s in SHOWN)
              + f" {sum(other.values()):>7,} {failed:>7,}"
              + ("   other: " + ", ".join(f"{n:,} x {c}" for c, n in sorted(other.items())) if other else ""))
        for c, n in sorted(codes.items()):
            if c >= 500 and c != 503:
                warnings.append(f"{label}: {n:,} x {c}")
            elif 400 <= c < 500 and c not in (406, 413):
                warnings.append(f"{label}: {n:,} x {c} (a request the harness got wrong, or a server bug)")
        if kind == "storm" and codes.get(200):
            warnings.append(f"{label}: {codes[200]:,} x 200 where the ETag of a closed hour or past day should still match")
        if failed:
            warnings.append(f"{label}: {failed:,} requests got no answer: "
                            + "; ".join(r["failures"].get(kind, [])[:3]))
    print(f"  (reconnects after the server closed an idle keep-alive: "
          f"{sum(r['retried'].values()):,}; IDs ingested: {r['ingested']:,}; the storm cycles "
          f"{r['storm_requests']:,} URL/encoding pairs)")
    print()
    ex = r["extra"]
    served = {int(k): v for k, v in ex.get("ribbon_r", {}).items()}
    missing = [p for p in PRECISIONS if p not in served]
    print("ribbon precisions served      " + (", ".join(f"r={k}: {v}" for k, v in sorted(served.items())) or "none")
          + (f"; none at r={missing}" if missing else "; all 21"))
    for what, n in ex.get("ribbon_wrong_r", {}).items():
        warnings.append(f"ribbon at the wrong precision ({n} x): {what}")
    print("dcz polls                     " + "; ".join(f"{k}: {v:,}" for k, v in sorted(ex.get("dcz", {}).items())))
    print("dcz dictionaries picked up    " + (", ".join(f"{k}: {v}" for k, v in sorted(ex.get("dcz_dictionaries", {}).items())) or "none"))
    h = ex.get("history", {})
    print(f"/history                      {h.get('published IDs checked', 0):,} published IDs checked, "
          f"{h.get('published IDs not found', 0):,} not found (must be 0)")
    if h.get("published IDs not found"):
        warnings.append(f"/history missed {h['published IDs not found']:,} published IDs")
    if len(r["hours_seen"]) > 1 or r["hours_seen"] != [r["plan_current"]]:
        warnings.append(f"the current hour changed during the run ({r['plan_current']} -> {r['hours_seen']}): "
                        "the open hour counted is the most seen")
    if r["late_threads"]:
        warnings.append(f"{r['late_threads']} client threads were still waiting for an answer 90 s after the mix")
    if r["storm_refused"]:
        print(f"storm ETag reads refused      {r['storm_refused']} (those URLs are not in the storm)")
    for w in warnings:
        print(f"WARNING: {w}")
    return 0 if within else 1


tally = Tally()
if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "prep":
        prep()
    elif cmd == "mix":
        mix(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "report":
        sys.exit(report(*map(int, sys.argv[2:6]), sys.argv[6]))
PY

# The 304 storm: wrk cycling through the closed hours and past days in every v1 suffix,
# identity and gzip, each with its ETag; prints `status CODE N` and wrk's socket errors.
cat >"$WORK/storm.lua" <<'LUA'
local reqs, n, threads = {}, 0, {}
counts = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  for line in io.lines(args[1]) do
    local path, ae, etag = line:match("^([^\t]+)\t([^\t]*)\t(.+)$")
    if path then
      local h = { ["If-None-Match"] = etag }
      if ae ~= "" then h["Accept-Encoding"] = ae end
      reqs[#reqs + 1] = wrk.format("GET", path, h)
    end
  end
  n = math.random(#reqs)
end
function request()
  n = n % #reqs + 1
  return reqs[n]
end
function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
end
function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("counts")) do total[k] = (total[k] or 0) + v end
  end
  for k, v in pairs(total) do io.write(string.format("status %s %d\n", k, v)) end
  local e = summary.errors
  io.write(string.format("errors connect=%d read=%d write=%d timeout=%d\n",
    e.connect, e.read, e.write, e.timeout))
end
LUA

hwm_bytes() { awk '/^VmHWM:/ { print $2 * 1024 }' "/proc/$1/status"; }

# Starts the server on data dir $1 with the mix's settings; sets `port`, `base` and `pid`
# once /healthz is 200 (the startup housekeeping has sealed the past hours and loaded the
# open one), waiting up to 20 minutes.
start_server() {
  port=$(free_port)
  base="http://127.0.0.1:$port"
  START_TRIES=12000 start_bloomcast "$1" "$port" BLOOMCAST_CACHE_BYTES="$BUDGET"
  pid=$SERVER_PID
}

# The baseline: what an idle server with no data holds, and what its /stats accounts for.
start_server "$WORK/empty"
sleep 2
curl -sf "$base/stats?hours=1" >"$WORK/empty.json"
stop_pid "$pid"

# The seeding and the startup's sealing take a while: the open hour must stay open until
# the mix ends, or "the open hour's keys" would mean two hours.
ensure_hour_lasts $((MIX_SECS + 180 + PAST_HOURS * HOUR_IDS / 25000))
data="$WORK/data"
log "seeding $PAST_HOURS past hours of $HOUR_IDS IDs, and $OPEN_IDS into the open hour"
t0=$SECONDS
for ago in $(seq "$PAST_HOURS" -1 1); do
  "$EXAMPLES/seed_closed_hour" "$data" "$HOUR_IDS" "$ago" "h$ago" >/dev/null
done
if ((OPEN_IDS > 0)); then
  "$EXAMPLES/seed_closed_hour" "$data" "$OPEN_IDS" 0 open >/dev/null
fi
log "seeded in $((SECONDS - t0)) s"

t0=$SECONDS
start_server "$data"
log "healthy after $((SECONDS - t0)) s; RSS $(($(rss_kb "$pid") / 1024)) MiB"

export PORT="$port" TOKEN WORK HOUR_IDS PAST_HOURS OPEN_IDS
log "reading the storm's ETags (each past day is built once)"
taskset -c "$CLIENT_CPU" python3 "$WORK/memory_mix.py" prep
hwm_before=$(hwm_bytes "$pid")
# VmHWM from here on is the mix's peak.
echo 5 >"/proc/$pid/clear_refs"
rss_start=$(($(rss_kb "$pid") * 1024))

log "the mix, ${MIX_SECS} s${ONLY:+, only $ONLY}"
storm=""
if [[ -z "${ONLY:-}" || ",$ONLY," == *,storm,* ]]; then
  taskset -c "$CLIENT_CPU" wrk -t1 -c"$STORM_CONNS" -d"${MIX_SECS}s" --timeout 30s -s "$WORK/storm.lua" \
    "$base" -- "$WORK/etags.tsv" >"$WORK/wrk.out" 2>&1 &
  storm=$!
  PIDS+=("$storm")
fi
ONLY="${ONLY:-}" taskset -c "$CLIENT_CPU" python3 "$WORK/memory_mix.py" mix "$pid" "$MIX_SECS" "$INGEST_IDS"
if [[ -n "$storm" ]]; then
  wait "$storm" || log "wrk exited with $?: $(tail -3 "$WORK/wrk.out")"
fi
hwm_mix=$(hwm_bytes "$pid")
kill -0 "$pid" 2>/dev/null || die "bloomcast died during the mix: $(tail -5 "$WORK/bloomcast-$port.log")"

status=0
python3 "$WORK/memory_mix.py" report "$BUDGET" "$hwm_before" "$hwm_mix" "$rss_start" "$WORK/wrk.out" || status=$?
server_log() { grep -E 'WARN|ERROR|panicked' "$WORK/bloomcast-$port.log" | grep -v 'no signing key configured'; }
problems=$(server_log | wc -l || true)
if ((problems > 0)); then
  echo "server log: $problems WARN/ERROR lines, the first 10:"
  server_log | head -10
else
  echo "server log: no WARN or ERROR lines"
fi
[[ -n "${KEEP:-}" ]] && echo "work dir kept: $WORK"
exit "$status"
