// The bloomcast dashboard: polls GET /stats, draws hand-made SVG plots, and tests IDs
// with the JavaScript client (served at /dashboard/bloomcast.js from clients/js).
import { Client, BloomcastError } from "/dashboard/bloomcast.js";

const SVG = "http://www.w3.org/2000/svg";
const REFRESH_MS = 5000;
const W = 300;
const H = 150;
const PAD = { left: 40, right: 8, top: 16, bottom: 22 };
const client = new Client(location.origin);
const $ = (id) => document.getElementById(id);
let timer = null;

function el(name, attrs = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function fmt(n) {
  if (!Number.isFinite(n)) return "–";
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(1) + "G";
  if (a >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (a >= 1e4) return (n / 1e3).toFixed(0) + "k";
  if (a >= 100 || Number.isInteger(n)) return String(Math.round(n));
  return n.toFixed(a >= 1 ? 1 : 2);
}
const pct = (x) => (100 * x).toFixed(x < 0.1 ? 2 : 1) + "%";
const sci = (x) => (x === 0 ? "0" : x.toExponential(1));
const hourLabel = (iso) => iso.slice(11, 13) + "h";
const hourLong = (iso) => iso.replace("T", " ").slice(0, 16) + " UTC";
function bytes(n) {
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
  if (n >= 1024) return (n / 1024).toFixed(1) + " KiB";
  return Math.round(n) + " B";
}

function frame(svg, yTicks) {
  const x0 = PAD.left;
  const x1 = W - PAD.right;
  for (const t of yTicks) {
    svg.append(el("line", { class: "axis", x1: x0, x2: x1, y1: t.y, y2: t.y }));
    svg.append(el("text", { x: x0 - 4, y: t.y + 3, "text-anchor": "end" }, t.label));
  }
}

/** One bar (or dot, for log plots) per hour; the open hour in its own colour. */
function hourPlot(container, hours, value, { label, log = false, target, max } = {}) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
  const values = hours.map(value);
  const innerH = H - PAD.top - PAD.bottom;
  let y;
  let ticks;
  if (log) {
    const positive = values.concat(target ? [target] : []).filter((v) => v > 0);
    const lo = Math.floor(Math.log10(Math.min(...positive, 1e-6)));
    const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(...positive, 1e-6))));
    y = (v) => PAD.top + innerH * (1 - (Math.log10(Math.max(v, 10 ** lo)) - lo) / (hi - lo));
    ticks = [];
    const step = Math.max(1, Math.ceil((hi - lo) / 4));
    for (let e = lo; e <= hi; e += step) ticks.push({ y: y(10 ** e), label: `1e${e}` });
  } else {
    const top = max ?? Math.max(1, ...values) * 1.15;
    y = (v) => PAD.top + innerH * (1 - v / top);
    ticks = [0, 0.5, 1].map((f) => ({ y: y(top * f), label: max === 1 ? pct(top * f) : fmt(top * f) }));
  }
  frame(svg, ticks);
  const n = Math.max(hours.length, 1);
  const band = (W - PAD.left - PAD.right) / n;
  hours.forEach((h, i) => {
    const v = values[i];
    const x = PAD.left + i * band;
    const title = `${hourLong(h.hour)}: ${label(v)}${h.complete ? "" : " (open hour)"}`;
    const attrs = { "data-hour": h.hour, "data-value": v, class: h.complete ? "bar" : "bar open" };
    let mark;
    if (log) {
      attrs.class = h.complete ? "dot" : "dot open";
      mark = el("circle", { ...attrs, cx: x + band / 2, cy: y(v), r: Math.min(4, Math.max(1.5, band / 3)) });
    } else {
      const top = y(v);
      mark = el("rect", { ...attrs, x: x + band * 0.1, width: Math.max(band * 0.8, 0.8), y: top, height: Math.max(0, H - PAD.bottom - top) });
    }
    mark.append(el("title", {}, title));
    svg.append(mark);
    const every = Math.ceil(n / 8);
    if ((n - 1 - i) % every === 0) {
      svg.append(el("text", { x: x + band / 2, y: H - 8, "text-anchor": "middle" }, hourLabel(h.hour)));
    }
  });
  if (target) {
    const ty = y(target);
    svg.append(el("line", { class: "target", x1: PAD.left, x2: W - PAD.right, y1: ty, y2: ty }));
    svg.append(el("text", { class: "target-label", x: PAD.left + 4, y: ty + 11 }, `target ${target}`));
  }
  const open = hours[hours.length - 1];
  const now = open ? `open hour ${hourLabel(open.hour)}: ${label(value(open))}` : "no hours";
  svg.append(el("text", { class: "value", x: PAD.left, y: 11 }, now));
  svg.setAttribute("aria-label", `${container.previousElementSibling?.textContent ?? ""}: ${hours.length} hours; ${now}`);
  container.replaceChildren(svg);
}

/** A line over the last hour of rate points. */
function ratePlot(container, points, value, label, nowIso) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
  const end = Date.parse(nowIso);
  const start = end - 3600e3;
  const values = points.map(value);
  const top = label === pct ? 1 : Math.max(1, ...values) * 1.15;
  const innerH = H - PAD.top - PAD.bottom;
  const x = (t) => PAD.left + ((t - start) / 3600e3) * (W - PAD.left - PAD.right);
  const y = (v) => PAD.top + innerH * (1 - v / top);
  frame(svg, [0, 0.5, 1].map((f) => ({ y: y(top * f), label: label === pct ? pct(top * f) : fmt(top * f) })));
  for (const m of [60, 45, 30, 15, 0]) {
    svg.append(el("text", { x: x(end - m * 60e3), y: H - 8, "text-anchor": "middle" }, m ? `-${m}m` : "now"));
  }
  if (points.length) {
    const d = points
      .map((p, i) => `${i ? "L" : "M"}${x(Date.parse(p.at)).toFixed(1)},${y(values[i]).toFixed(1)}`)
      .join("");
    svg.append(el("path", { class: "line", d }));
    const lastPoint = points[points.length - 1];
    svg.append(el("circle", { class: "dot", cx: x(Date.parse(lastPoint.at)), cy: y(values[values.length - 1]), r: 2.5 }));
  }
  const last = values.length ? label(values[values.length - 1]) : "no data yet";
  svg.append(el("text", { class: "value", x: PAD.left, y: 11 }, `now: ${last}`));
  svg.setAttribute("aria-label", `${container.previousElementSibling?.textContent ?? ""}: ${points.length} points over the last hour; now ${last}`);
  container.replaceChildren(svg);
}

function figures(stats) {
  const c = stats.cache;
  const mem = stats.memory;
  const t = stats.totals;
  const items = [
    ["Memory budget", `${bytes(mem.bytes)} of ${bytes(mem.budget_bytes)} held`],
    ...["cache", "builds", "deltas"].map((name) => {
      const part = mem.parts[name];
      return [`· ${name}`, `${bytes(part.bytes)} of ${bytes(part.budget_bytes)}`];
    }),
    ["Cache entries", `${fmt(c.entries)} (${bytes(c.bytes)} renderings, ${c.open_unions} open unions)`],
    ["IDs ingested (since start)", fmt(t.ids_ingested)],
    ["Requests (since start)", `${fmt(t.requests)}, ${fmt(t.reads)} filter reads`],
    ["304 Not Modified", t.reads ? `${fmt(t.not_modified)} (${pct(t.not_modified / Math.max(t.reads, 1))} of reads)` : "0"],
    ["Bytes sent", bytes(t.bytes_served)],
    ["Target fpp / capacity", `${stats.target_fpp} / ${fmt(stats.capacity)} IDs`],
    ["Retention", `${stats.retention_hours} hours`],
  ];
  $("figures").replaceChildren(
    ...items.map(([k, v]) => {
      const div = document.createElement("div");
      const dt = document.createElement("dt");
      const dd = document.createElement("dd");
      dt.textContent = k;
      dd.textContent = v;
      div.append(dt, dd);
      return div;
    }),
  );
}

function table(hours) {
  $("hours-table").tBodies[0].replaceChildren(
    ...hours
      .slice()
      .reverse()
      .map((h) => {
        const tr = document.createElement("tr");
        for (const v of [hourLong(h.hour), h.count, h.m, h.k, pct(h.fill), sci(h.fpp), h.complete ? "complete" : "open"]) {
          const td = document.createElement("td");
          td.textContent = String(v);
          tr.append(td);
        }
        return tr;
      }),
  );
}

function hourChoices(hours) {
  const select = $("test-hour");
  const keep = select.value;
  select.replaceChildren(
    ...hours
      .slice()
      .reverse()
      .map((h) => new Option(`${hourLong(h.hour)}${h.complete ? "" : " (open)"} — ${h.count} IDs`, h.hour)),
  );
  if (keep && hours.some((h) => h.hour === keep)) select.value = keep;
}

async function refresh() {
  try {
    const response = await fetch(`/stats?hours=${$("window").value}`, { cache: "no-store" });
    if (!response.ok) throw new Error(`/stats answered ${response.status}`);
    const stats = await response.json();
    const hours = stats.hours;
    const open = hours[hours.length - 1];
    $("summary").textContent = `Current hour ${hourLong(stats.current.hour)} · ${open.count} IDs so far · target fpp ${stats.target_fpp} · updated ${stats.now.slice(11, 19)} UTC`;
    hourPlot($("plot-count"), hours, (h) => h.count, { label: (v) => `${fmt(v)} IDs` });
    hourPlot($("plot-size"), hours, (h) => Math.ceil(h.m / 8), { label: bytes });
    hourPlot($("plot-fill"), hours, (h) => h.fill, { label: pct, max: 1 });
    hourPlot($("plot-fpp"), hours, (h) => h.fpp, { label: sci, log: true, target: stats.target_fpp });
    const points = stats.rates.points;
    ratePlot($("plot-ingest"), points, (p) => p.ids_per_second, (v) => `${fmt(v)} IDs/s`, stats.now);
    ratePlot($("plot-reads"), points, (p) => p.reads_per_second, (v) => `${fmt(v)} req/s`, stats.now);
    ratePlot($("plot-304"), points, (p) => p.not_modified_share, pct, stats.now);
    ratePlot($("plot-bytes"), points, (p) => p.bytes_per_second, (v) => `${bytes(v)}/s`, stats.now);
    figures(stats);
    table(hours);
    hourChoices(hours);
    $("status").textContent = "";
    document.body.dataset.refreshed = stats.now;
  } catch (e) {
    $("status").textContent = `Refresh failed: ${e.message}`;
    $("status").className = "error";
  }
}

function schedule() {
  clearInterval(timer);
  timer = $("auto").checked ? setInterval(refresh, REFRESH_MS) : null;
}

async function test(event) {
  event.preventDefault();
  const out = $("test-result");
  const ids = $("test-ids").value.split(/\r?\n/).filter((id) => id.length > 0);
  const hour = $("test-hour").value;
  const mode = new FormData($("test-form")).get("mode");
  if (!ids.length || !hour) return;
  out.textContent = "Testing…";
  try {
    const fetched = mode === "since" ? await client.since(hour) : await client.hour(hour);
    const range = fetched.range();
    const caption = document.createElement("caption");
    caption.textContent =
      (range.from === range.to ? `Hour ${hourLong(range.from)}` : `${hourLong(range.from)} through ${hourLong(range.to)}`) +
      ` · ${fetched.meta.count} IDs · fpp ${sci(fetched.meta.fpp)}`;
    const tbl = document.createElement("table");
    tbl.append(caption);
    for (const id of ids) {
      const maybe = await fetched.mayContain(id);
      const tr = document.createElement("tr");
      const a = document.createElement("td");
      const b = document.createElement("td");
      a.textContent = id;
      b.textContent = maybe ? "may have changed" : "not changed";
      b.className = maybe ? "maybe" : "absent";
      tr.append(a, b);
      tbl.append(tr);
    }
    out.replaceChildren(tbl);
  } catch (e) {
    out.textContent = e instanceof BloomcastError ? `Error (${e.code}): ${e.message}` : `Error: ${e.message}`;
    out.className = "error";
  }
}

$("test-form").addEventListener("submit", test);
$("refresh").addEventListener("click", refresh);
$("window").addEventListener("change", refresh);
$("auto").addEventListener("change", schedule);
refresh();
schedule();
