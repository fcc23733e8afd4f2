"""The status page's cluster parts that need more than a table cell (`cluster.admin.page`
puts these in its one style and one script; its `renderCluster` calls them):

- each failover drawn as `custody drill --plot` draws it: one bar of three phases one
  after the other, detection (the dead incarnation last heard of, its last heartbeat
  the leader read, to the leader's plan: the death is in between, so the phase is at
  most this long), takeover (the plan to the last moved shard running at its new
  owner) and resume (that to the last shard's first delivery there), scaled to the
  longest failover shown. A phase not over yet is drawn hatched, "in progress", as
  long as it has lasted so far; a plan written before the leader kept `last_seen_at`
  has no detection phase ("not known").
- the flow versions the shards run: said once when they agree, per shard when they
  differ (a rolling deploy is under way, or stopped half-way).
- a member whose heartbeat is late: a badge with the time it was last heard of.

All from GET api/v1/cluster (`cluster.admin.models.ClusterView`).
"""

from __future__ import annotations

CLUSTER_STYLE = """
.phases { display: flex; width: 240px; height: 16px; background: #eceff3; border-radius: 3px; overflow: hidden; }
.phases span { flex: 0 0 auto; height: 100%; }
.phases span + span { border-left: 1px solid #ffffff; }
.phase-detection { background: #8a63c9; }
.phase-takeover { background: #e3962c; }
.phase-resume { background: #3b7dd8; }
.phases span[data-state="running"] { background-image: repeating-linear-gradient(135deg, transparent 0 4px,
  rgba(255, 255, 255, 0.55) 4px 8px); }
.phases-text { display: block; font-size: 0.8rem; color: var(--muted); margin-top: 2px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 18px; margin: 8px 0 0; color: var(--muted); font-size: 0.85rem; }
.legend .swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 5px;
                  vertical-align: -1px; }
.legend .swatch.running { background: #b9c1cd; background-image: repeating-linear-gradient(135deg, transparent 0 3px,
  rgba(255, 255, 255, 0.7) 3px 6px); }
#members-body tr[data-late="true"] td { color: var(--muted); }
#members-body tr[data-late="true"] td:first-child b { color: var(--warn); }
#shards-flow { margin: 0 0 8px; color: var(--muted); }
#shards-flow b { color: var(--text); font-weight: 600; }
#shards-flow.differ { color: var(--warn); font-weight: 600; }
td code.flow-version { font-size: 0.85em; }
"""

CLUSTER_SCRIPT = r"""
// -- the cluster: failovers as phases, flow versions, late members (cluster.admin.page_cluster)
const PHASES = {
  detection: "detection: last heard of (its last heartbeat the leader read) to the leader's plan",
  takeover: "takeover: the plan to the last moved shard running at its new owner",
  resume: "resume: that to the last moved shard's first delivery at its new owner",
};
const RUNNING_SCALE_CAP_S = 60;  // a phase in progress stretches the scale this far at most

function known(value) {
  return value !== null && value !== undefined;
}

function failoverPhases(f, now) {
  // The three phases one after the other: {phase, state, seconds, from, to}. state is
  // "done", "running" (begun, not over: its seconds so far), "waiting" (not begun) or
  // "unknown" (a plan that did not keep when the dead was last heard of).
  const detection = known(f.detection_s) ?
    {phase: "detection", state: "done", seconds: f.detection_s, from: f.last_seen_at, to: f.detected_at} :
    {phase: "detection", state: "unknown", seconds: null, from: null, to: f.detected_at};
  const takeover = known(f.taken_over_at) ?
    {phase: "takeover", state: "done", seconds: Math.max(0, f.taken_over_at - f.detected_at),
     from: f.detected_at, to: f.taken_over_at} :
    {phase: "takeover", state: "running", seconds: Math.max(0, now - f.detected_at), from: f.detected_at, to: null};
  const start = known(f.taken_over_at) ? f.taken_over_at : null;
  let resume;
  if (known(f.resumed_at)) {
    resume = {phase: "resume", state: "done", seconds: Math.max(0, f.resumed_at - (start ?? f.resumed_at)),
              from: start, to: f.resumed_at};
  } else if (start !== null) {
    resume = {phase: "resume", state: "running", seconds: Math.max(0, now - start), from: start, to: null};
  } else {
    resume = {phase: "resume", state: "waiting", seconds: null, from: null, to: null};
  }
  return [detection, takeover, resume];
}

function phasesSpan(phases) {
  // A failover's length for the scale: a phase in progress counts up to RUNNING_SCALE_CAP_S.
  return phases.reduce((sum, p) => sum + (p.seconds === null ? 0 :
    p.state === "running" ? Math.min(p.seconds, RUNNING_SCALE_CAP_S) : p.seconds), 0);
}

function phaseWords(p) {
  if (p.state === "unknown") return "not known (the plan predates it)";
  if (p.state === "waiting") return "not begun";
  if (p.state === "running") return `in progress, ${p.seconds.toFixed(1)} s so far`;
  return `${p.seconds.toFixed(1)} s` + (known(p.from) && known(p.to) ? ` (${clock(p.from)} → ${clock(p.to)})` : "");
}

function phaseCell(phases, name) {
  const p = phases.find((each) => each.phase === name);
  if (p.state === "done") return el("span", {"data-phase": name}, p.seconds.toFixed(1) + " s");
  if (p.state === "running") return badge("in progress", "warn");
  return el("span", {class: "muted", title: phaseWords(p)}, "–");
}

function timelineBar(phases, longest) {
  // One bar, three segments one after the other; each as wide as its share of the
  // longest failover shown (a phase that lasted at all keeps 3 px, so it can be seen).
  const track = el("div", {class: "phases"});
  track.setAttribute("role", "img");
  track.setAttribute("aria-label", phases.map((p) => `${p.phase} ${phaseWords(p)}`).join("; "));
  for (const p of phases) {
    const shown = p.seconds === null ? 0 : p.state === "running" ? Math.min(p.seconds, RUNNING_SCALE_CAP_S) : p.seconds;
    const width = shown > 0 ? `max(3px, ${(100 * shown / longest).toFixed(2)}%)` : "0";
    track.append(el("span", {class: "phase-" + p.phase, "data-phase": p.phase, "data-state": p.state,
                             "data-seconds": p.seconds === null ? "" : p.seconds.toFixed(2),
                             title: `${PHASES[p.phase]}\n${phaseWords(p)}`, style: {width}}));
  }
  const words = phases.map((p) => p.state === "done" ? p.seconds.toFixed(1) :
                                  p.state === "running" ? "…" : "?").join(" + ");
  const done = phases.filter((p) => p.state === "done");
  const total = done.length === 3 ? ` = ${done.reduce((sum, p) => sum + p.seconds, 0).toFixed(1)} s` : " s";
  return [track, el("small", {class: "phases-text"}, words + total)];
}

function flowVersions(shards) {
  // version -> the shards that run it (live shards only: a retired one keeps its last).
  const versions = new Map();
  for (const s of shards) {
    const version = s.flow_version || "not known";
    versions.set(version, [...(versions.get(version) || []), s.shard]);
  }
  return versions;
}

function renderFlowVersions(live) {
  const versions = flowVersions(live);
  const line = $("shards-flow");
  line.classList.toggle("differ", versions.size > 1);
  line.dataset.versions = versions.size;
  if (!versions.size) {
    line.replaceChildren("no live shard");
  } else if (versions.size === 1) {
    const [version] = versions.keys();
    line.replaceChildren("every live shard runs flow version ", el("b", {}, el("code", {}, version)));
  } else {
    const parts = [...versions].sort((a, b) => b[1].length - a[1].length)
      .map(([version, names]) => `${version} on ${names.length === 1 ? names[0] : names.length + " shards"}`);
    line.replaceChildren(`the shards run ${versions.size} flow versions (a rolling deploy?): ${parts.join("; ")}`);
  }
  return versions;
}

function flowVersionCell(shard, versions) {
  const version = shard.flow_version || "not known";
  const text = el("code", {class: "flow-version", title: version}, version);
  if (versions.size <= 1 || shard.state === "retired") return el("span", {class: "muted"}, text);
  // While they differ, the versions run by fewer shards stand out.
  const most = Math.max(...[...versions.values()].map((names) => names.length));
  return (versions.get(version) || []).length < most ? [text, badge("differs", "warn")] : text;
}

function heartbeatCell(span, seconds) {
  // A member not heard of for LATE_HEARTBEAT_S: a badge with the time it was last heard of.
  const at = Number(span.dataset.at);
  const late = seconds > LATE_HEARTBEAT_S;
  span.classList.toggle("late", late);
  const row = span.closest("tr");
  if (row) row.dataset.late = late;
  if (late) {
    span.replaceChildren(badge(`late: last heard ${clock(at)}`, "warn"));
    span.title = `no heartbeat for ${age(seconds)} (members beat every second): its figures are from then`;
  } else {
    span.replaceChildren(age(seconds) + " ago");
    span.title = "";
  }
}
"""
