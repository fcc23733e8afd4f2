"""The status page at `/`: one HTML document with its style and a small script inline,
no build step and nothing fetched from elsewhere.

The document itself is static but for the node's name and whether it asks for a
token; everything it shows comes from the API, polled every 2 s with the reader's
token:

  GET api/v1/node          this node: state, incarnation, its shards
  GET api/v1/node/queues   the queue depths of this node
  GET api/v1/node/flow/graph, api/v1/node/processors
                           the flow drawn as a graph, with each processor's figures
                           (`cluster.admin.page_flow_graph`)
  GET api/v1/cluster       members, leader, shards and owners, failovers (not asked
                           of a standalone node: the page says it is in no cluster)

and, not polled: a search of this node's provenance, an event and a FlowFile's lineage
drawn as a graph, when the reader asks (`cluster.admin.page_provenance`).

So the page needs no token to load (a probe or a bookmark opens it) and reveals no
more than `/health` does; the data needs the read role. With tokens configured the
page asks for one once and keeps it in the tab's sessionStorage: each node is an
origin of its own, so another node's page asks again.

Nothing from the API is parsed as HTML: the script builds every cell with
`textContent`, takes only http(s) addresses as links, and the Content-Security-Policy
allows no script but this one (by its hash) and no connection but to this node.
Paths are relative (`api/v1/...`), so the page also works behind a proxy's prefix.
"""

from __future__ import annotations

import base64
import hashlib
import html

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse

from .page_actions import ACTIONS_SCRIPT, ACTIONS_SECTION, ACTIONS_STYLE
from .page_cluster import CLUSTER_SCRIPT, CLUSTER_STYLE
from .page_flow_graph import FLOW_GRAPH_SCRIPT, FLOW_GRAPH_SECTION, FLOW_GRAPH_STYLE
from .page_provenance import PROVENANCE_SCRIPT, PROVENANCE_SECTION, PROVENANCE_STYLE

STYLE = """
:root {
  --bg: #f4f6f9; --card: #ffffff; --text: #1b2230; --muted: #5c6677; --line: #e2e6ec;
  --accent: #2456c6; --ok: #17803a; --ok-bg: #e3f4e8; --warn: #a65400; --warn-bg: #fff1de;
  --bad: #c0262d; --bad-bg: #fde7e8; --info-bg: #e7eefc;
}
* { box-sizing: border-box; }
html { font-size: clamp(15px, 0.9vw, 17px); }
body { margin: 0; background: var(--bg); color: var(--text);
       font-family: system-ui, -apple-system, "Segoe UI", "Liberation Sans", "DejaVu Sans", sans-serif;
       line-height: 1.4; }
header { position: sticky; top: 0; z-index: 2; background: #18202e; color: #f2f4f8;
         display: flex; flex-wrap: wrap; align-items: center; gap: 8px 22px; padding: 10px 22px; }
header h1 { font-size: 1.2rem; margin: 0; font-weight: 600; }
header h1 .product { color: #9fb3d9; font-weight: 500; margin-right: 8px; }
header .facts { display: flex; flex-wrap: wrap; gap: 6px 18px; color: #c9d1df; }
header .facts b { color: #ffffff; font-weight: 600; }
header .right { margin-left: auto; display: flex; align-items: center; gap: 14px; }
#freshness { display: inline-flex; align-items: center; gap: 7px; font-variant-numeric: tabular-nums; }
#freshness::before { content: ""; width: 10px; height: 10px; border-radius: 50%; background: #7d8796; }
#freshness.live::before { background: #3fca6b; }
#freshness.stale::before { background: #f0a030; }
#freshness.failing::before { background: #ff5a5f; }
button, .linkish { font: inherit; cursor: pointer; }
header button { background: transparent; color: #c9d1df; border: 1px solid #4a5568; border-radius: 4px;
                padding: 2px 10px; }
#problem { margin: 0; padding: 10px 22px; font-weight: 600; border-bottom: 1px solid var(--line); }
#problem.stale { background: var(--warn-bg); color: var(--warn); }
#problem.failing { background: var(--bad-bg); color: var(--bad); }
#problem.info { background: var(--info-bg); color: var(--accent); }
main { max-width: 1880px; margin: 0 auto; padding: 16px 22px 28px; display: grid;
       grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; align-items: start; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px 14px;
          min-width: 0; }
section.wide { grid-column: 1 / -1; }
section h2 { font-size: 1.05rem; margin: 0 0 8px; display: flex; align-items: baseline; gap: 10px; }
section h2 .note { font-size: 0.85rem; font-weight: 400; color: var(--muted); }
section.stale { border-color: #f0b45a; }
section.stale .table-wrap, section.stale .summary { opacity: 0.55; }
.table-wrap { overflow-x: auto; }
table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 5px 9px; text-align: left; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { font-size: 0.8rem; text-transform: uppercase; letter-spacing: 0.03em; color: var(--muted); font-weight: 600; }
th:first-child, td:first-child { padding-left: 2px; }
td.num, th.num { text-align: right; }
tbody tr:last-child td { border-bottom: none; }
tr.retired td { color: var(--muted); }
td small { display: block; font-size: 0.8rem; line-height: 1.1; }
td.empty { color: var(--muted); font-style: italic; text-align: center; padding: 14px; }
.badge { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 0.8rem; font-weight: 600;
         line-height: 1.45rem; margin-left: 6px; vertical-align: baseline; }
td > .badge:first-child { margin-left: 0; }
.badge.leader { background: var(--info-bg); color: var(--accent); }
.badge.self { background: #eceff3; color: var(--muted); }
.badge.ok { background: var(--ok-bg); color: var(--ok); }
.badge.warn { background: var(--warn-bg); color: var(--warn); }
.badge.bad { background: var(--bad-bg); color: var(--bad); }
.badge.quiet { background: #eceff3; color: var(--muted); }
.late { color: var(--warn); font-weight: 600; }
.muted { color: var(--muted); }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
.summary { display: flex; flex-wrap: wrap; gap: 4px 26px; margin-bottom: 8px; color: var(--muted); }
.summary b { color: var(--text); font-weight: 600; }
#login { grid-column: 1 / -1; max-width: 560px; }
#login form { display: flex; gap: 10px; margin-top: 8px; }
#login input { flex: 1; font: inherit; padding: 6px 10px; border: 1px solid #b9c1cd; border-radius: 4px; }
#login button { background: var(--accent); color: #fff; border: none; border-radius: 4px; padding: 6px 16px; }
#login p { margin: 6px 0; }
#login .refusal { color: var(--bad); font-weight: 600; }
code { font-family: "DejaVu Sans Mono", ui-monospace, monospace; font-size: 0.9em; }
[hidden] { display: none !important; }
"""

SCRIPT = r"""
"use strict";
const POLL_MS = 2000;          // one round of requests every 2 s
const TIMEOUT_MS = 5000;       // a request with no answer by then counts as failed
const STALE_MS = 6000;         // data older than this is shown as stale
const LATE_HEARTBEAT_S = 5;    // members beat every second, the page reads every 2 s
const TOKEN_KEY = "custody.admin.token";
const RETIRED_SHOWN = 8;

const $ = (id) => document.getElementById(id);
const sources = {node: {ok: 0, error: null}, cluster: {ok: 0, error: null}};
let clockSkewMs = 0;           // the node's clock minus ours, when they differ by > 2 s
let standalone = null;         // not known before the node's first answer
let thisIncarnation = null;    // this node's incarnation
let timer = null;

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// -- building the DOM: text only, never markup from the API ----------------------------
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, String(value));
    else if (key === "title" || key === "colspan" || key === "tabindex" || key === "role" || key.startsWith("aria-")) {
      node.setAttribute(key, String(value));
    }
    else if (key === "style") Object.assign(node.style, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
const badge = (text, kind) => el("span", {class: "badge " + kind}, text);

function link(address, text) {
  // Only http(s) addresses become links: a heartbeat could carry anything.
  let url;
  try { url = new URL(address); } catch (_) { return el("span", {class: "muted"}, text); }
  if (url.protocol !== "http:" && url.protocol !== "https:") return el("span", {class: "muted"}, text);
  const a = el("a", {title: "this node's own status page"}, text);
  a.href = url.href.endsWith("/") ? url.href : url.href + "/";  // its page, under any prefix it has
  return a;
}

function fill(tbody, rows, columns, empty) {
  const built = rows.map((row) => {
    const tr = el("tr", row.attrs || {});
    for (const column of columns) {
      const value = column.cell(row.item);
      tr.append(el("td", {class: column.num ? "num" : null}, value));
    }
    return tr;
  });
  if (!built.length) built.push(el("tr", {}, el("td", {class: "empty", colspan: columns.length}, empty)));
  const focused = focusKeyIn(tbody);
  tbody.replaceChildren(...built);
  refocus(tbody, focused);
}

// Keyboard focus survives a redraw: what the keyboard can open carries a data-focus-key,
// and the element with the same key in the new drawing gets the focus back.
function focusKeyIn(container) {
  const active = document.activeElement;
  return active && container.contains(active) ? active.getAttribute("data-focus-key") : null;
}
function refocus(container, key) {
  if (!key) return;
  const again = [...container.querySelectorAll("[data-focus-key]")].find((e) => e.dataset.focusKey === key);
  if (again) again.focus({preventScroll: true});
}

// -- figures ---------------------------------------------------------------------------
function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(n < 10 ? 1 : 0) : n) + " " + units[i];
}
const count = (n) => (n === null || n === undefined) ? "–" : Number(n).toLocaleString("en-US");
const nowS = () => (Date.now() + clockSkewMs) / 1000;
function age(seconds) {
  if (seconds < 0) seconds = 0;
  if (seconds < 10) return seconds.toFixed(1) + " s";
  if (seconds < 120) return Math.round(seconds) + " s";
  if (seconds < 7200) return Math.round(seconds / 60) + " min";
  return Math.round(seconds / 3600) + " h";
}
function clock(at) {
  return new Date(at * 1000).toLocaleTimeString("en-GB", {hour12: false});
}

// -- the API ---------------------------------------------------------------------------
async function apiRequest(path, {method = "GET", headers = {}, raw = false, timeout = TIMEOUT_MS} = {}) {
  // Every call of the page's parts: the tab's token, a deadline, the API's refusal as an
  // ApiError with its status and message. `raw`: the bytes of the answer and the answer.
  const sent = {Accept: raw ? "*/*" : "application/json", ...headers};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) sent.Authorization = "Bearer " + token;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeout);
  try {
    let response;
    try {
      response = await fetch(path, {method, headers: sent, signal: abort.signal, cache: "no-store"});
    } catch (_) {
      throw new ApiError(0, abort.signal.aborted ? `no answer within ${timeout / 1000} s` : "the node does not answer");
    }
    if (!response.ok) {
      let body = null;
      try { body = await response.json(); } catch (_) { /* not JSON: the status says it */ }
      throw new ApiError(response.status, (body && body.error) || `${response.status} ${response.statusText}`);
    }
    noteClock(response.headers.get("Date"));
    if (raw) return {response, data: new Uint8Array(await response.arrayBuffer())};
    return await response.json();
  } finally {
    clearTimeout(timer);
  }
}
const api = (path) => apiRequest(path);

function noteClock(date) {
  // Heartbeat ages are measured on the node's clock. Date has whole seconds, so it
  // corrects only a browser clock that is clearly off.
  const at = Date.parse(date || "");
  if (Number.isNaN(at)) return;
  const skew = at + 500 - Date.now();
  clockSkewMs = Math.abs(skew) > 2000 ? skew : 0;
}

// -- rendering -------------------------------------------------------------------------
function renderAlarms(alarms) {
  // Swap files set aside (quarantined when corrupt): shown only while there are any.
  $("alarms").hidden = !alarms.length;
  const rows = alarms.map((a) => ({item: a, attrs: {"data-location": a.location, "data-reason": a.reason}}));
  fill($("alarms-body"), rows, [
    {cell: (a) => a.shard},
    {cell: (a) => a.queue},
    {cell: (a) => [el("code", {}, a.location), a.quarantined ? badge("quarantined", "bad") : null]},
    {cell: (a) => badge(a.reason, "bad")},
    {num: true, cell: (a) => count(a.flowfiles)},
    {cell: (a) => age(nowS() - a.since_ms / 1000) + " ago"},
    {cell: (a) => el("small", {}, a.message)},
  ], "no alarm");
}

function renderNode(node, queues, alarms) {
  renderAlarms(alarms || []);
  $("node-name").textContent = node.node;
  $("node-state").replaceChildren(stateBadge(node.state));
  $("node-incarnation").textContent = node.incarnation || "–";
  $("node-incarnation-fact").hidden = !node.incarnation;
  $("node-flow").textContent = node.flow_version || "–";
  $("node-flow-fact").hidden = !node.flow_version;
  const repositories = node.repositories || {};
  $("node-repositories").textContent = ["content", "provenance", "wal"]
    .filter((name) => repositories[name + "_bytes"] !== null && repositories[name + "_bytes"] !== undefined)
    .map((name) => `${name} ${bytes(repositories[name + "_bytes"])}`).join(" · ") || "–";
  document.title = `${node.node} · custody`;
  standalone = node.kind === "standalone";
  thisIncarnation = node.incarnation;
  $("cluster-name").textContent = standalone ? "none (standalone)" : (node.cluster || "–");
  const rows = [];
  for (const [shard, list] of Object.entries(queues)) {
    for (const q of list) {
      const attrs = {"data-shard": shard, "data-queue": q.queue, "data-focus-key": `${shard}/${q.queue}`,
                     tabindex: 0, role: "button", "aria-label": `queue ${q.queue} on shard ${shard}`};
      rows.push({item: {shard, ...q}, attrs});
    }
  }
  // Its home shard first, then adopted ones; the fullest queues first within each.
  const homes = new Set(node.shards.filter((s) => s.home).map((s) => s.shard));
  const home = (shard) => homes.has(shard) ? 0 : 1;
  rows.sort((a, b) => (home(a.item.shard) - home(b.item.shard)) || a.item.shard.localeCompare(b.item.shard) ||
                      (b.item.count - a.item.count) || a.item.queue.localeCompare(b.item.queue));
  fill($("queues-body"), rows, [
    {cell: (q) => q.shard},
    {cell: (q) => [q.queue, q.back_pressure ? badge("back-pressure", "bad") : null]},
    {num: true, cell: (q) => count(q.count)},
    {num: true, cell: (q) => bytes(q.bytes)},
    {num: true, cell: (q) => q.swapped_count ? `${count(q.swapped_count)} in ${count(q.swap_files)} files` : "–"},
    {num: true, cell: (q) => count(q.in_flight)},
    {num: true, cell: (q) => q.oldest_entry_ms ? age(nowS() - q.oldest_entry_ms / 1000) : "–"},
  ], "this node runs no shard");
}

function stateBadge(state) {
  const kind = {RUNNING: "ok", active: "ok", draining: "warn", adopting: "warn", split: "warn",
                STARTING: "warn", OFFLOADING: "warn", retired: "quiet", OFFLOADED: "quiet"}[state] || "bad";
  return badge(state, kind);
}

function renderCluster(view) {
  const members = new Map(view.members.map((m) => [m.incarnation, m]));
  const leader = view.leader ? members.get(view.leader) : null;
  $("leader").replaceChildren(view.leader ? `${view.leader}${leader ? " (" + leader.node + ")" : ""}` : "none");
  $("leader").dataset.leader = view.leader || "";
  $("members-note").textContent = `${view.members.length} live in cluster ${view.cluster}`;
  fill($("members-body"), view.members.map((m) => ({item: m, attrs: {"data-incarnation": m.incarnation,
                                                                        "data-node": m.node}})), [
    {cell: (m) => [el("b", {}, m.node), m.incarnation === view.leader ? badge("leader", "leader") : null,
                   m.incarnation === thisIncarnation ? badge("this node", "self") : null]},
    {cell: (m) => m.incarnation},
    {cell: (m) => link(m.admin, m.admin.replace(/^https?:\/\//, ""))},
    {num: true, cell: (m) => Math.round(m.cpu * 100) + " %"},
    {num: true, cell: (m) => `${m.active_threads} / ${m.max_threads}`},
    {num: true, cell: (m) => bytes(m.free_disk)},
    {num: true, cell: (m) => count(m.queued)},
    {num: true, cell: (m) => el("span", {title: m.owned_shards.join(", ")}, m.owned_shards.length)},
    {num: true, cell: (m) => el("span", {class: "heartbeat", "data-at": m.last_heartbeat})},
  ], "no live member");
  tickHeartbeats();

  const live = view.shards.filter((s) => s.state !== "retired");
  const retired = view.shards.filter((s) => s.state === "retired")
    .sort((a, b) => lastChange(b) - lastChange(a));
  const shown = live.concat(retired.slice(0, RETIRED_SHOWN));
  $("shards-note").textContent = `${live.length} live` +
    (retired.length ? `, ${retired.length} retired` + (retired.length > RETIRED_SHOWN ?
      ` (the ${RETIRED_SHOWN} latest shown)` : "") : "");
  const versions = renderFlowVersions(live);
  fill($("shards-body"), shown.map((s) => ({item: s, attrs: {"data-shard": s.shard, "data-owner": s.owner || "",
                                                             "data-state": s.state,
                                                             "data-flow-version": s.flow_version || "",
                                                             class: s.state === "retired" ? "retired" : null}})), [
    {cell: (s) => s.shard},
    {cell: (s) => s.owner ? [s.owner, members.has(s.owner) ? null : badge("not live", "bad")] : "–"},
    {cell: (s) => stateBadge(s.state)},
    {num: true, cell: (s) => s.epoch},
    {num: true, cell: (s) => count(s.backlog)},
    {cell: (s) => flowVersionCell(s, versions)},
    {cell: (s) => el("span", {title: (s.history.at(-1) || {}).reason || ""}, lastChange(s) ?
                     age(nowS() - lastChange(s)) + " ago" : "–")},
  ], "no shard");

  // Each failover's phases, one after the other (cluster.admin.page_cluster), all bars
  // on the scale of the longest failover shown.
  const now = nowS();
  const failovers = view.failovers.map((f) => ({...f, phases: failoverPhases(f, now)}));
  const longest = Math.max(1, ...failovers.map((f) => phasesSpan(f.phases)));
  const plans = new Map(view.plans.map((p) => [p.plan, p]));
  fill($("failovers-body"), failovers.map((f) => ({item: f, attrs: {
    "data-dead": f.dead, "data-taken-over": f.taken_over_at !== null, "data-finished": f.finished_at !== null,
    "data-resumed": f.resumed_at !== null}})), [
    {cell: (f) => el("b", {}, f.dead)},
    {cell: (f) => [el("span", {title: new Date(f.detected_at * 1000).toISOString()}, clock(f.detected_at)),
                   el("small", {class: "muted"}, `${age(now - f.detected_at)} ago`)]},
    {num: true, cell: (f) => phaseCell(f.phases, "detection")},
    {num: true, cell: (f) => phaseCell(f.phases, "takeover")},
    {num: true, cell: (f) => phaseCell(f.phases, "resume")},
    {num: true, cell: (f) => known(f.finish_s) ? f.finish_s.toFixed(1) + " s" : badge("in progress", "warn")},
    {cell: (f) => timelineBar(f.phases, longest)},
    {cell: (f) => moved(f, plans.get(f.plan))},
  ], "no failover yet");
}

function moved(failover, plan) {
  // "n3-2 → n1-1": where each shard went, from the leader's plan (while it is kept).
  const targets = new Map((plan ? plan.moves : []).map((m) => [m.shard, m.targets.join(" + ")]));
  const parts = failover.shards.map((shard) => targets.get(shard) ? `${shard} → ${targets.get(shard)}` : shard);
  const text = parts.length === 1 ? parts[0] : `${parts.length} shards`;
  return el("span", {title: parts.join("\n")}, text);
}

function lastChange(shard) {
  const entry = shard.history.at(-1);
  return entry ? entry.at : 0;
}

function tickHeartbeats() {
  for (const span of document.querySelectorAll("#members-body .heartbeat")) {
    heartbeatCell(span, nowS() - Number(span.dataset.at));
  }
}

// -- freshness: what is shown, and how old it is ---------------------------------------
function freshness() {
  const now = Date.now();
  const wanted = standalone ? ["node"] : ["node", "cluster"];
  const problems = new Map();    // what went wrong -> which sources, and how old their data is
  for (const name of wanted) {
    const source = sources[name];
    const old = source.ok ? now - source.ok : Infinity;
    const stale = source.error !== null || old > STALE_MS;
    for (const section of document.querySelectorAll(`section[data-source="${name}"]`)) {
      section.classList.toggle("stale", stale && source.ok > 0);
    }
    if (stale) {
      const reason = source.error ? source.error.message : "no fresh answer";
      const shown = source.ok ? `showing data from ${age(old / 1000)} ago` : "no data yet";
      const where = name === "node" ? "this node" : "the cluster";
      problems.set(reason, [...(problems.get(reason) || []), `${where}, ${shown}`]);
    }
  }
  const errors = wanted.map((name) => sources[name].error).filter((error) => error);
  const indicator = $("freshness");
  const banner = $("problem");
  if (problems.size) {
    const kind = errors.length ? "failing" : "stale";
    indicator.className = kind;
    indicator.textContent = !errors.length ? "stale" :
      errors.some((error) => error.status === 0) ? "no answer" : `API error ${errors[0].status}`;
    banner.className = kind;
    banner.textContent = [...problems].map(([reason, where]) =>
      problems.size === 1 && where.length === wanted.length ?
        `${reason} (${where[0].split(", ")[1]})` : `${reason} (${where.join("; ")})`).join(" — ");
  } else {
    const newest = Math.max(...wanted.map((name) => sources[name].ok));
    indicator.className = "live";
    indicator.textContent = `live · updated ${age((now - newest) / 1000)} ago`;
    banner.className = "info";
    banner.textContent = "This node is standalone: it is in no cluster. It shows its own status only.";
  }
  banner.hidden = !problems.size && !standalone;
  for (const id of ["members", "shards", "failovers", "leader-fact"]) $(id).hidden = standalone;
}

// -- tokens ----------------------------------------------------------------------------
function askForToken(refusal, keep) {
  // keep: a token refused mid-session. What the page shows stays, marked stale (and an
  // open panel stays open) until a new token is given; the first load asks first.
  clearTimeout(timer);
  $("login").hidden = false;
  $("refusal").textContent = refusal || "";
  $("refusal").hidden = !refusal;
  for (const section of document.querySelectorAll("section[data-source]")) {
    if (keep && sources[section.dataset.source].ok) section.classList.add("stale");
    else section.hidden = true;
  }
  $("problem").className = "stale";
  $("problem").textContent = "Not updated while the page waits for a token: what it shows is from before.";
  $("problem").hidden = !keep;
  $("freshness").className = "";
  $("freshness").textContent = "waiting for a token";
  $("token").focus();
}

function useToken(event) {
  event.preventDefault();
  const token = $("token").value.trim();
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  $("token").value = "";
  $("login").hidden = true;
  for (const section of document.querySelectorAll("section[data-source]")) section.hidden = false;
  $("forget").hidden = false;
  poll();
}

function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
  $("forget").hidden = true;
  askForToken(null);
}

function refused(error) {
  const keep = sources.node.ok > 0 || sources.cluster.ok > 0;
  if (error.status === 401) {
    const had = sessionStorage.getItem(TOKEN_KEY) !== null;
    if (!had && !$("login").hidden) return true;  // already asking: another request's 401 of the same token
    sessionStorage.removeItem(TOKEN_KEY);
    $("forget").hidden = true;
    askForToken(had ? `The node refused the token: ${error.message}.` : null, keep);
    return true;
  }
  if (error.status === 403) {
    askForToken(`The token may not read this node: ${error.message}. Use a token with the read role.`, keep);
    return true;
  }
  return false;
}

// -- the loop --------------------------------------------------------------------------
const settled = (promise) => promise.then((value) => ({value}), (error) => ({error}));

async function poll() {
  clearTimeout(timer);
  const node = settled(Promise.all([api("api/v1/node"), api("api/v1/node/queues"), api("api/v1/node/alarms")]));
  const flow = settled(Promise.all([api("api/v1/node/flow/graph"), api("api/v1/node/processors"),
                                    clusterFlowFigures()]));
  // Until the first answer says what kind of node this is, the cluster waits for it.
  let cluster = standalone === false ? settled(api("api/v1/cluster")) : null;
  let stop = false;
  const answer = await node;
  if (answer.error) {
    stop = refused(answer.error);
    sources.node.error = answer.error;
  } else {
    renderNode(...answer.value);
    renderFlow(await flow, answer.value[1]);
    sources.node = {ok: Date.now(), error: null};
    if (cluster === null && !standalone) cluster = settled(api("api/v1/cluster"));
  }
  if (cluster !== null) {
    const view = await cluster;
    if (view.error) {
      stop = stop || refused(view.error);
      sources.cluster.error = view.error;
    } else {
      renderCluster(view.value);
      sources.cluster = {ok: Date.now(), error: null};
    }
  }
  if (stop) return;
  freshness();
  timer = setTimeout(poll, POLL_MS);
}

$("login-form").addEventListener("submit", useToken);
$("forget").addEventListener("click", forgetToken);
setInterval(() => { tickHeartbeats(); if ($("login").hidden) freshness(); }, 500);
if (document.body.dataset.tokens === "required" && sessionStorage.getItem(TOKEN_KEY) === null) {
  askForToken(null);
} else {
  $("forget").hidden = sessionStorage.getItem(TOKEN_KEY) === null;
  poll();
}
"""

DOCUMENT = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{node} · custody</title>
<link rel="icon" href="data:,">
<style>{style}</style>
</head>
<body data-tokens="{tokens}">
<header>
  <h1><span class="product">custody</span><span id="node-name">{node}</span></h1>
  <div class="facts">
    <span>state <b id="node-state">–</b></span>
    <span>cluster <b id="cluster-name">–</b></span>
    <span id="leader-fact">leader <b id="leader" data-leader="">–</b></span>
  </div>
  <div class="right">
    <span id="freshness">loading…</span>
    <button id="forget" type="button" hidden title="remove the token from this tab">forget token</button>
  </div>
</header>
<p id="problem" role="status" hidden></p>
<main>
  <section id="alarms" class="wide" data-source="node" hidden>
    <h2>Alarms <span class="note">swap files that cannot be read: their FlowFiles wait in the WAL
      for a repair</span></h2>
    <div class="table-wrap"><table>
      <thead><tr><th>shard</th><th>queue</th><th>swap file</th><th>reason</th><th class="num">FlowFiles</th>
        <th>since</th><th>what to do</th></tr></thead>
      <tbody id="alarms-body"></tbody>
    </table></div>
  </section>
  <section id="login" hidden>
    <h2>A token is needed</h2>
    <p>This node's admin API takes bearer tokens. Paste a token with the read role
       (<code>custody admin token --role read</code> makes one); it is kept in this tab only.</p>
    <p id="refusal" class="refusal" role="alert" hidden></p>
    <form id="login-form">
      <input id="token" type="password" autocomplete="off" placeholder="cst_…" aria-label="token">
      <button type="submit">Use token</button>
    </form>
  </section>
  <section id="members" class="wide" data-source="cluster">
    <h2>Members <span class="note" id="members-note"></span></h2>
    <div class="table-wrap"><table>
      <thead><tr><th>node</th><th>incarnation</th><th>admin</th>
        <th class="num" title="the machine's load average per core (100 %: every core busy)">load</th>
        <th class="num" title="tasks running / the node's flow threads">threads</th>
        <th class="num">free disk</th><th class="num">queued</th>
        <th class="num">shards</th><th class="num">last heartbeat</th></tr></thead>
      <tbody id="members-body"></tbody>
    </table></div>
  </section>
  <section id="shards" class="wide" data-source="cluster">
    <h2>Shards <span class="note" id="shards-note"></span></h2>
    <p id="shards-flow"></p>
    <div class="table-wrap"><table>
      <thead><tr><th>shard</th><th>owner</th><th>state</th><th class="num">epoch</th>
        <th class="num">backlog</th><th title="the version of the flow the shard was written under">flow version</th>
        <th>last change</th></tr></thead>
      <tbody id="shards-body"></tbody>
    </table></div>
  </section>
  <section id="failovers" class="wide" data-source="cluster">
    <h2>Failovers <span class="note">newest first, each in three phases one after the other</span></h2>
    <div class="table-wrap"><table>
      <thead><tr><th>dead</th><th>detected</th>
        <th class="num" title="from its last heartbeat the leader read to the leader's plan">detection</th>
        <th class="num" title="from the plan to the last moved shard running at its new owner">takeover</th>
        <th class="num" title="from the takeover to the last moved shard's first delivery there">resume</th>
        <th class="num" title="from the plan to the leader marking it done: every shard has its new owner
          (which may still be recovering it)">plan done</th>
        <th>phases</th><th>moved</th></tr></thead>
      <tbody id="failovers-body"></tbody>
    </table></div>
    <div class="legend" id="failovers-legend">
      <span><i class="swatch phase-detection"></i>detection: last heard of → the leader's plan (the death is in
        between)</span>
      <span><i class="swatch phase-takeover"></i>takeover: → every moved shard runs at its new owner</span>
      <span><i class="swatch phase-resume"></i>resume: → its first delivery there</span>
      <span><i class="swatch running"></i>in progress (so far)</span>
    </div>
  </section>
{flow_graph}
  <section id="this-node" class="wide" data-source="node">
    <h2>Queues of this node</h2>
    <div class="summary">
      <span id="node-incarnation-fact">incarnation <b id="node-incarnation">–</b></span>
      <span id="node-flow-fact">flow version <b id="node-flow">–</b></span>
      <span>local repositories <b id="node-repositories">–</b></span>
    </div>
    <div class="table-wrap"><table>
      <thead><tr><th>shard</th><th>queue</th><th class="num">queued</th><th class="num">size</th>
        <th class="num">swapped</th><th class="num">in flight</th><th class="num">oldest</th></tr></thead>
      <tbody id="queues-body"></tbody>
    </table></div>
  </section>
{provenance}
</main>
{actions}
<script>{script}</script>
</body>
</html>
"""


# The flow's drawing is kept in a module of its own; the page runs it as part of its one script.
STYLE += FLOW_GRAPH_STYLE
SCRIPT += FLOW_GRAPH_SCRIPT
# The cluster's failover phases, flow versions and late members.
STYLE += CLUSTER_STYLE
SCRIPT += CLUSTER_SCRIPT
# Provenance (search, an event, a lineage) too; it uses the drawing's svg().
STYLE += PROVENANCE_STYLE
SCRIPT += PROVENANCE_SCRIPT
# The panel of actions (processors, queues, FlowFiles) opens from the drawing and the queues.
STYLE += ACTIONS_STYLE
SCRIPT += ACTIONS_SCRIPT


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


# Only this script and this style run; the page talks to its own node only.
HEADERS = {
    "Content-Security-Policy": f"default-src 'none'; script-src {_csp_hash(SCRIPT)}; style-src {_csp_hash(STYLE)}; "
    "connect-src 'self'; img-src data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def render_page(node: str, *, tokens_required: bool) -> str:
    return DOCUMENT.format(
        node=html.escape(node),
        tokens="required" if tokens_required else "none",
        style=STYLE,
        script=SCRIPT,
        flow_graph=FLOW_GRAPH_SECTION,
        provenance=PROVENANCE_SECTION,
        actions=ACTIONS_SECTION,
    )


def register(app: FastAPI) -> None:
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def status_page(request: Request) -> HTMLResponse:
        state = request.app.state
        return HTMLResponse(render_page(state.control.name, tokens_required=state.tokens.enabled), headers=HEADERS)
