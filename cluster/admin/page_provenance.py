"""The status page's provenance part (`cluster.admin.page` puts these parts in its
document), after NiFi's provenance search and lineage view: a search of this node's
events, one event's every field with Replay and Lineage, and a FlowFile's lineage
drawn as a graph.

  GET  api/v1/provenance/events?...             a page of the search, newest first
  GET  api/v1/provenance/events/{id}            an event's every field
  POST api/v1/provenance/events/{id}/replay     replay it (the admin role)
  GET  api/v1/provenance/lineage/{uuid}/graph   the lineage laid out (`cluster.admin.lineage_layout`)

The search is not polled: it runs when the form is submitted, or on "refresh". The
first page's `as_of` is kept and sent with every other page, so paging through a
search neither shifts nor repeats while new events arrive; "refresh" starts the
search again from the newest event. A refused search (a 422: a time the API cannot
read, say) is said under the form, naming the field, and the form keeps its input.

The lineage is drawn as NiFi draws it: FlowFiles and events are both boxes, each
FlowFile's events chained in time order, a FORK, CLONE or REPLAY going on to each
FlowFile it made and each parent going into a JOIN (why both kinds of box: see
`cluster.admin.lineage_layout`). Columns go from the oldest on the left to the newest.
The node's repository holds the events of its shards, adopted ones included, so what
this node's API finds of a FlowFile whose shard failed over is drawn whole; other
nodes' events are on their own pages.

Built with `el()` and the flow drawing's `svg()` (createElementNS) and textContent
only, like the rest of the page's one script; nothing is parsed as HTML.
"""

from __future__ import annotations

import html

from repositories.provenance.query import NIFI_EVENT_TYPES

PROVENANCE_STYLE = """
#provenance-form { display: flex; flex-wrap: wrap; gap: 8px 12px; align-items: flex-end; margin-bottom: 8px; }
#provenance-form label { display: flex; flex-direction: column; gap: 2px; font-size: 0.8rem; color: var(--muted); }
#provenance-form input, #provenance-form select { font: inherit; font-size: 0.9rem; padding: 4px 7px;
  border: 1px solid #b9c1cd; border-radius: 4px; background: #fff; color: var(--text); }
#provenance-form input[name="uuid"] { width: 21rem; }
#provenance-form input[name="filename"], #provenance-form input[name="component"] { width: 11rem; }
#provenance-form input[name="start"], #provenance-form input[name="end"] { width: 12.5rem; }
#provenance-form input[aria-invalid="true"] { border-color: var(--bad); background: var(--bad-bg); }
#provenance-form button, .prov-actions button, .prov-pager button {
  font-size: 0.9rem; padding: 5px 14px; border-radius: 4px; border: 1px solid var(--accent); }
#provenance-form button[type="submit"], .prov-actions button.primary { background: var(--accent); color: #fff; }
#provenance-form button[type="button"], .prov-actions button, .prov-pager button { background: #fff;
  color: var(--accent); }
.prov-pager button:disabled { border-color: var(--line); color: var(--muted); cursor: default; }
#prov-error, #prov-event-error, #prov-lineage-error, #prov-replay.bad { color: var(--bad); font-weight: 600; }
#prov-replay.ok { color: var(--ok); font-weight: 600; }
#prov-error, #prov-event-error, #prov-lineage-error { margin: 4px 0 8px; }
#prov-body tr[data-event-id] { cursor: pointer; }
#prov-body tr[data-event-id]:hover td { background: #f2f5fb; }
#prov-body tr.chosen td { background: var(--info-bg); }
#prov-body tr[data-event-id]:focus-visible { outline: 2px solid var(--accent); outline-offset: -2px; }
#prov-body code, #prov-event code { font-size: 0.82rem; }
#prov-body td.filename { max-width: 14rem; overflow: hidden; text-overflow: ellipsis; }
#prov-body td.details { max-width: 22rem; overflow: hidden; text-overflow: ellipsis; color: var(--muted); }
.prov-pager { display: flex; align-items: center; gap: 12px; margin-top: 8px; color: var(--muted); }
#prov-event, #prov-lineage { margin-top: 14px; border-top: 1px solid var(--line); padding-top: 10px;
                             scroll-margin-top: 64px; /* clear of the sticky header */ }
#prov-event h3, #prov-lineage h3 { font-size: 1rem; margin: 0 0 8px; display: flex; flex-wrap: wrap;
  align-items: baseline; gap: 4px 12px; }
#prov-event h3 .note, #prov-lineage h3 .note { font-size: 0.85rem; font-weight: 400; color: var(--muted); }
.prov-columns { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1.4fr); gap: 10px 24px; }
@media (max-width: 1100px) { .prov-columns { grid-template-columns: minmax(0, 1fr); } }
#prov-fields { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 3px 14px; margin: 0; }
#prov-fields dt { color: var(--muted); font-size: 0.85rem; }
#prov-fields dd { margin: 0; overflow-wrap: anywhere; }
#prov-attributes td { white-space: normal; overflow-wrap: anywhere; vertical-align: top; }
#prov-attributes tr.changed td { background: var(--warn-bg); }
#prov-attributes td.gone { color: var(--muted); font-style: italic; }
.prov-actions { display: flex; flex-wrap: wrap; align-items: center; gap: 10px; margin-top: 10px; }
#prov-lineage-wrap { overflow: auto; max-height: 70vh; border: 1px solid var(--line); border-radius: 6px;
                     background: #fafbfc; }
#lineage-svg { display: block; }
#lineage-svg text { font-family: inherit; fill: var(--text); }
#lineage-svg .node { cursor: default; }
#lineage-svg .node.event { cursor: pointer; }
#lineage-svg .node rect.frame { fill: #ffffff; stroke: #9aa6b8; stroke-width: 1.2; }
#lineage-svg .node.flowfile rect.frame { fill: #eef2f8; stroke: #7d8ca3; }
#lineage-svg .node.root rect.frame { stroke: var(--accent); stroke-width: 2.2; }
#lineage-svg .node.chosen rect.frame { fill: var(--info-bg); stroke: var(--accent); stroke-width: 2.2; }
#lineage-svg .node.event:hover rect.frame { stroke: var(--accent); }
#lineage-svg .node rect.stripe { fill: #7d8796; }
#lineage-svg .node[data-category="start"] rect.stripe { fill: var(--ok); }
#lineage-svg .node[data-category="link"] rect.stripe { fill: #7a4fd0; }
#lineage-svg .node[data-category="end"] rect.stripe { fill: var(--bad); }
#lineage-svg .node[data-category="change"] rect.stripe { fill: #e3962c; }
#lineage-svg .node .title { font-size: 14px; font-weight: 600; }
#lineage-svg .node .title.long { font-size: 11.5px; }
#lineage-svg .node .line { font-size: 12px; fill: var(--muted); }
#lineage-svg .node .uuid { font-size: 12px; font-family: "DejaVu Sans Mono", ui-monospace, monospace; }
#lineage-svg .edge path { fill: none; stroke: #8a95a8; stroke-width: 1.4; }
#lineage-svg .edge.lineage path { stroke: #7a4fd0; stroke-width: 2.2; }
#lineage-svg .edge.back path { stroke-dasharray: 6 4; }
#lineage-svg marker path { fill: #8a95a8; }
#lineage-svg marker.lineage path { fill: #7a4fd0; }
#prov-lineage-legend { display: flex; flex-wrap: wrap; gap: 4px 20px; margin: 8px 0 0; color: var(--muted);
                       font-size: 0.85rem; }
"""

_TYPE_OPTIONS = "".join(
    f'<option value="{html.escape(kind)}">{html.escape(kind)}</option>' for kind in NIFI_EVENT_TYPES
)

PROVENANCE_SECTION = f"""
  <section id="provenance" class="wide" data-source="node">
    <h2>Provenance <span class="note">this node's events: its shards', adopted ones included; searched when
      asked, not polled</span></h2>
    <form id="provenance-form" autocomplete="off">
      <label>FlowFile uuid<input name="uuid" placeholder="its events, and FORK/CLONE/JOIN naming it"></label>
      <label>filename<input name="filename"></label>
      <label>component<input name="component" placeholder="processor id"></label>
      <label>event type<select name="type"><option value="">any</option>{_TYPE_OPTIONS}</select></label>
      <label>start<input name="start" placeholder="15m, 2h, or a date"
        title="an RFC 3339 date-time (2024-05-01T12:00:00Z), epoch milliseconds, or 15m/2h/3d ago"></label>
      <label>end<input name="end" placeholder="15m, 2h, or a date"
        title="an RFC 3339 date-time (2024-05-01T12:00:00Z), epoch milliseconds, or 15m/2h/3d ago"></label>
      <button type="submit">Search</button>
      <button type="button" id="prov-refresh" title="search again, from the newest event">Refresh</button>
    </form>
    <p id="prov-error" role="alert" hidden></p>
    <div class="summary" id="prov-summary" hidden></div>
    <div class="table-wrap" id="prov-results" hidden><table>
      <thead><tr><th>time</th><th>type</th><th>component</th><th>FlowFile</th><th>filename</th>
        <th class="num">size</th><th>details</th></tr></thead>
      <tbody id="prov-body"></tbody>
    </table></div>
    <div class="prov-pager" id="prov-pager" hidden>
      <button type="button" id="prov-previous">← newer</button>
      <span id="prov-page"></span>
      <button type="button" id="prov-next">older →</button>
    </div>
    <p id="prov-event-error" role="alert" hidden></p>
    <div id="prov-event" hidden>
      <h3><span id="prov-event-title"></span><span class="note" id="prov-event-note"></span></h3>
      <div class="prov-columns">
        <dl id="prov-fields"></dl>
        <div class="table-wrap"><table id="prov-attributes">
          <thead><tr><th>attribute</th><th>before</th><th>after</th></tr></thead>
          <tbody id="prov-attributes-body"></tbody>
        </table></div>
      </div>
      <div class="prov-actions">
        <button type="button" class="primary" id="prov-lineage-button">Lineage</button>
        <button type="button" id="prov-replay-button"
          title="a new FlowFile from this event, into the queue its component reads (the admin role)">Replay</button>
        <span id="prov-replay" role="status"></span>
      </div>
    </div>
    <p id="prov-lineage-error" role="alert" hidden></p>
    <div id="prov-lineage" hidden>
      <h3><span id="prov-lineage-title"></span><span class="note" id="prov-lineage-note"></span></h3>
      <div id="prov-lineage-wrap"></div>
      <div id="prov-lineage-legend">
        <span>columns: oldest on the left · each FlowFile's events in time order · click an event for its
          details</span>
        <span>purple edges: parent → child (FORK, CLONE, REPLAY, into a JOIN)</span>
      </div>
    </div>
  </section>"""

PROVENANCE_SCRIPT = r"""
// -- provenance: search, an event, a lineage (cluster.admin.page_provenance) -------------
const PROVENANCE_PAGE = 20;
const PROVENANCE_FIELDS = ["uuid", "filename", "component", "type", "start", "end"];
const provenance = {filters: null, offset: 0, asOf: null, event: null, asked: 0};

function shown(id, text) {
  $(id).textContent = text || "";
  $(id).hidden = !text;
}

function eventClock(ms) {
  const at = new Date(ms);
  return at.toLocaleTimeString("en-GB", {hour12: false}) + "." + String(at.getMilliseconds()).padStart(3, "0");
}

function eventDay(ms) {
  return new Date(ms).toLocaleDateString("en-CA");
}

// Uuids made one after another share their start (custody's are time-ordered): the end tells them apart.
const shortUuid = (uuid) => "…" + uuid.slice(-8);

function provenanceFilters() {
  const form = $("provenance-form");
  const filters = {};
  for (const name of PROVENANCE_FIELDS) {
    const value = form.elements[name].value.trim();
    if (value) filters[name] = value;
  }
  return filters;
}

async function searchProvenance(fresh) {
  if (fresh) {
    provenance.filters = provenanceFilters();
    provenance.offset = 0;
    provenance.asOf = null;
  }
  const form = $("provenance-form");
  for (const name of PROVENANCE_FIELDS) form.elements[name].removeAttribute("aria-invalid");
  const query = new URLSearchParams({...provenance.filters, offset: provenance.offset, limit: PROVENANCE_PAGE});
  if (provenance.asOf !== null) query.set("as_of", provenance.asOf);
  // Only the answer to the last request is shown (a quick "older" twice, say).
  const asked = ++provenance.asked;
  let page;
  try {
    page = await api("api/v1/provenance/events?" + query);
  } catch (error) {
    if (asked !== provenance.asked) return;
    if (refused(error)) return;
    if (error.status === 422) {
      // "query.start: ..." names the field; the form keeps what was typed.
      const named = PROVENANCE_FIELDS.filter((name) => error.message.includes(`query.${name}:`));
      for (const name of named) form.elements[name].setAttribute("aria-invalid", "true");
      shown("prov-error", "The search was refused: " + error.message.replaceAll("query.", "") + ".");
    } else {
      shown("prov-error", `The search failed: ${error.message}.`);
    }
    return;
  }
  if (asked !== provenance.asked) return;
  shown("prov-error", null);
  if (provenance.asOf === null) provenance.asOf = page.as_of;
  renderProvenancePage(page);
}

function renderProvenancePage(page) {
  const results = $("prov-results");
  results.hidden = false;
  results.dataset.total = page.total;
  results.dataset.offset = page.offset;
  results.dataset.asOf = page.as_of === null ? "" : page.as_of;
  const first = page.events.length ? page.offset + 1 : 0;
  const last = page.offset + page.events.length;
  const summary = $("prov-summary");
  summary.hidden = false;
  summary.replaceChildren(...[
    el("span", {}, el("b", {"data-total": page.total}, count(page.total)), page.total === 1 ? " match" : " matches"),
    el("span", {}, "showing ", el("b", {}, page.events.length ? `${count(first)}–${count(last)}` : "none")),
    page.as_of !== null ? el("span", {title: "events after this one are not shown until refresh"},
                             "as of event ", el("b", {}, page.as_of)) : null,
    page.aged_off ? el("span", {}, el("b", {}, page.aged_off), " aged off since indexed") : null,
    page.damaged.length ? el("span", {class: "late", title: page.damaged.map((d) => d.error).join("\n")},
                             `${page.damaged.length} damaged`) : null].filter((part) => part !== null));
  const rows = page.events.map((e) => ({item: e, attrs: {
    "data-event-id": e.event_id, "data-flowfile": e.flowfile_uuid, "data-type": e.event_type,
    class: provenance.event === e.event_id ? "chosen" : null}}));
  fill($("prov-body"), rows, [
    {cell: (e) => el("span", {title: e.event_time}, eventClock(e.event_time_ms),
                     el("small", {class: "muted"}, `${eventDay(e.event_time_ms)} · event ${e.event_id}`))},
    {cell: (e) => el("b", {}, e.event_type)},
    {cell: (e) => [e.component_id, el("small", {class: "muted"}, e.component_type)]},
    {cell: (e) => el("code", {}, e.flowfile_uuid)},
    {cell: (e) => el("span", {title: e.attributes_after.filename || ""}, e.attributes_after.filename || "–")},
    {num: true, cell: (e) => bytes(e.size)},
    {cell: (e) => el("span", {title: e.details || ""}, e.details || (e.relationship ? `to ${e.relationship}` :
                     (e.transit_uri || "")))},
  ], "no event matches");
  for (const tr of $("prov-body").children) {
    const cells = tr.children;
    if (cells.length === 7) { cells[4].classList.add("filename"); cells[6].classList.add("details"); }
    if (tr.dataset.eventId) tr.tabIndex = 0;  // Enter opens it, as a click does
  }
  $("prov-pager").hidden = false;
  $("prov-previous").disabled = page.offset === 0;
  $("prov-next").disabled = page.next_offset === null;
  $("prov-page").textContent = `page ${count(Math.floor(page.offset / PROVENANCE_PAGE) + 1)} of ` +
    count(Math.max(1, Math.ceil(page.total / PROVENANCE_PAGE)));
  provenance.next = page.next_offset;
}

// -- one event -------------------------------------------------------------------------
function claimText(claim) {
  return claim ? `${claim.container}/${claim.section}/${claim.id} @ ${claim.offset} + ${bytes(claim.length)}` : "–";
}

function uuidList(uuids) {
  return uuids.length ? uuids.map((uuid) => el("code", {}, uuid, el("br", {}))) : "–";
}

async function showEvent(eventId) {
  provenance.event = eventId;
  for (const tr of $("prov-body").querySelectorAll("tr[data-event-id]")) {
    tr.classList.toggle("chosen", Number(tr.dataset.eventId) === eventId);
  }
  for (const node of document.querySelectorAll("#lineage-svg .node.event")) {
    node.classList.toggle("chosen", Number(node.dataset.eventId) === eventId);
  }
  let event;
  try {
    event = await api(`api/v1/provenance/events/${eventId}`);
  } catch (error) {
    if (refused(error)) return;
    shown("prov-event-error", `Event ${eventId} could not be read: ${error.message}.`);
    return;
  }
  shown("prov-event-error", null);
  renderEvent(event);
  $("prov-event").scrollIntoView({block: "nearest"});
}

function renderEvent(event) {
  const panel = $("prov-event");
  panel.hidden = false;
  panel.dataset.eventId = event.event_id;
  panel.dataset.flowfile = event.flowfile_uuid;
  $("prov-event-title").textContent = `${event.event_type} · event ${event.event_id}`;
  $("prov-event-note").textContent = `${event.event_time} · ${event.component_id}`;
  const facts = [
    ["event id", event.event_id],
    ["type", event.event_type],
    ["time", `${event.event_time} (${event.event_time_ms} ms)`],
    ["FlowFile", el("code", {}, event.flowfile_uuid)],
    ["component", `${event.component_id} (${event.component_type || "–"})`],
    ["relationship", event.relationship || "–"],
    ["size", `${bytes(event.size)} (${count(event.size)} bytes)`],
    ["content before", el("code", {}, claimText(event.content_before))],
    ["content after", el("code", {}, claimText(event.content_after))],
    ["parents", uuidList(event.parent_uuids)],
    ["children", uuidList(event.child_uuids)],
    ["transit URI", event.transit_uri || "–"],
    ["details", event.details || "–"],
  ];
  $("prov-fields").replaceChildren(...facts.flatMap(([name, value]) => [el("dt", {}, name),
                                                                         el("dd", {"data-field": name}, value)]));
  const names = [...new Set([...Object.keys(event.attributes_before), ...Object.keys(event.attributes_after)])].sort();
  const value = (attributes, name) => name in attributes ? attributes[name] : null;
  fill($("prov-attributes-body"), names.map((name) => ({item: name, attrs: {
    "data-attribute": name, class: name in event.updated_attributes ? "changed" : null}})), [
    {cell: (name) => el("code", {}, name)},
    {cell: (name) => value(event.attributes_before, name) ?? el("span", {class: "muted"}, "(none)")},
    {cell: (name) => value(event.attributes_after, name) ?? el("span", {class: "muted"}, "(removed)")},
  ], "no attribute");
  $("prov-replay").textContent = "";
  $("prov-replay").className = "";
}

async function replayEvent() {
  const eventId = Number($("prov-event").dataset.eventId);
  const status = $("prov-replay");
  status.className = "";
  status.textContent = "replaying…";
  try {
    const made = await actionPost(`api/v1/provenance/events/${eventId}/replay`);
    status.className = "ok";
    status.textContent = `Replayed: new FlowFile ${made.uuid} in queue ${made.queue} (shard ${made.shard}).`;
  } catch (error) {
    status.className = "bad";
    status.textContent = error.status === 403 ?
      "This token may only read; replay needs a token with the admin role." :
      `The replay was refused: ${error.message}.`;
    if (error.status === 401) refused(error);
  }
}

// -- the lineage as a graph ------------------------------------------------------------
const EVENT_CATEGORY = {CREATE: "start", RECEIVE: "start", FETCH: "start", FORK: "link", CLONE: "link",
                        JOIN: "link", REPLAY: "link", DROP: "end", EXPIRE: "end", SEND: "end",
                        CONTENT_MODIFIED: "change", ATTRIBUTES_MODIFIED: "change"};

function lineageBox(node, graph) {
  const w = graph.box_width, h = graph.box_height;
  const event = node.kind === "event";
  const box = svg("g", {class: `node ${node.kind}` + (node.root ? " root" : "") +
                                (event && node.event_id === provenance.event ? " chosen" : ""),
                        "data-node": node.id, "data-flowfile": node.flowfile_uuid,
                        "data-event-id": event ? node.event_id : null,
                        "data-category": event ? (EVENT_CATEGORY[node.event_type] || "other") : null,
                        transform: `translate(${node.x} ${node.y})`});
  const lines = event ?
    [[node.event_type.length > 14 ? "title long" : "title", node.event_type], ["line", node.component_id],
     ["line", eventClock(node.event_time_ms)], ["uuid", `FlowFile ${shortUuid(node.flowfile_uuid)}`]] :
    [["title", node.root ? "FlowFile (asked for)" : "FlowFile"], ["uuid", shortUuid(node.flowfile_uuid)],
     ["line", node.filename && node.filename !== node.flowfile_uuid ? node.filename : ""]];
  box.append(svg("title", {}, event ?
    `${node.event_type} · event ${node.event_id}\n${node.component_id} (${node.component_type})\n` +
    `${node.event_time}\nFlowFile ${node.flowfile_uuid}` + (node.relationship ? `\nto ${node.relationship}` : "") :
    `FlowFile ${node.flowfile_uuid}` + (node.filename ? `\n${node.filename}` : "")));
  box.append(svg("rect", {class: "frame", width: w, height: h, rx: event ? 6 : h / 2 - 20}));
  if (event) box.append(svg("rect", {class: "stripe", width: 5, height: h - 2, x: 1, y: 1, rx: 2}));
  const left = event ? 14 : 22;
  const top = event ? 24 : 30;
  lines.forEach(([kind, text], i) => box.append(svg("text", {class: kind, x: left, y: top + i * 20}, text)));
  return box;
}

async function showLineage(uuid) {
  let graph;
  try {
    graph = await api(`api/v1/provenance/lineage/${encodeURIComponent(uuid)}/graph`);
  } catch (error) {
    if (refused(error)) return;
    $("prov-lineage").hidden = true;
    shown("prov-lineage-error", `The lineage of ${uuid} could not be drawn: ${error.message}.`);
    return;
  }
  shown("prov-lineage-error", null);
  renderLineage(graph);
  $("prov-lineage").scrollIntoView({block: "start"});
}

function renderLineage(graph) {
  const panel = $("prov-lineage");
  panel.hidden = false;
  panel.dataset.root = graph.root;
  panel.dataset.truncated = graph.truncated;
  $("prov-lineage-title").textContent = `Lineage of FlowFile ${graph.root}`;
  $("prov-lineage-note").textContent = `${count(graph.flowfiles)} FlowFiles, ${count(graph.events)} events` +
    (graph.truncated ? ` · truncated: more than ${count(graph.max_flowfiles)} FlowFiles are related, ` +
                       "the graph stops there" : "");
  $("prov-lineage-note").classList.toggle("late", graph.truncated);
  const drawing = svg("svg", {id: "lineage-svg", viewBox: `0 0 ${graph.width} ${graph.height}`,
                              width: graph.width, height: graph.height, role: "img",
                              "aria-label": `the lineage of FlowFile ${graph.root}`,
                              "data-nodes": graph.nodes.length, "data-edges": graph.edges.length});
  const defs = svg("defs", {});
  for (const [id, kind] of [["lineage-arrow", ""], ["lineage-arrow-lineage", "lineage"]]) {
    defs.append(svg("marker", {id, class: kind, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
                               markerHeight: 7, orient: "auto-start-reverse"}, svg("path", {d: "M0 0 L10 5 L0 10 z"})));
  }
  const edges = svg("g", {}), boxes = svg("g", {});
  for (const edge of graph.edges) {
    edges.append(svg("g", {class: `edge ${edge.kind}` + (edge.back_edge ? " back" : ""), "data-edge": edge.id,
                           "data-source": edge.source, "data-target": edge.target, "data-kind": edge.kind},
                     svg("title", {}, `${edge.kind === "lineage" ? "parent → child" : "next step"}: FlowFile ` +
                                      edge.flowfile_uuids.join(", ")),
                     svg("path", {d: pathOf(edge.points),
                                  "marker-end": `url(#${edge.kind === "lineage" ? "lineage-arrow-lineage" :
                                                                                   "lineage-arrow"})`})));
  }
  for (const node of graph.nodes) boxes.append(lineageBox(node, graph));
  drawing.append(defs, edges, boxes);
  const wrap = $("prov-lineage-wrap");
  wrap.replaceChildren(drawing);
  for (const text of drawing.querySelectorAll(".node text")) fitText(text, graph.box_width - 26);
  // The oldest column first, the FlowFile asked for in sight.
  const root = graph.nodes.find((node) => node.id === "flowfile:" + graph.root) || {y: 0};
  wrap.scrollLeft = 0;
  wrap.scrollTop = Math.max(0, root.y + graph.box_height / 2 - wrap.clientHeight / 2);
}

$("provenance-form").addEventListener("submit", (event) => { event.preventDefault(); searchProvenance(true); });
$("prov-refresh").addEventListener("click", () => {
  // Again from the newest event, with the filters of the search shown (or the form's, before any).
  if (provenance.filters === null) provenance.filters = provenanceFilters();
  provenance.offset = 0;
  provenance.asOf = null;
  searchProvenance(false);
});
$("prov-next").addEventListener("click", () => {
  if (provenance.next === null || provenance.next === undefined) return;
  provenance.offset = provenance.next;
  searchProvenance(false);
});
$("prov-previous").addEventListener("click", () => {
  provenance.offset = Math.max(0, provenance.offset - PROVENANCE_PAGE);
  searchProvenance(false);
});
$("prov-body").addEventListener("click", (event) => {
  const row = event.target.closest("tr[data-event-id]");
  if (row) showEvent(Number(row.dataset.eventId));
});
$("prov-body").addEventListener("keydown", (event) => {
  const row = event.target.closest("tr[data-event-id]");
  if (row && event.key === "Enter") showEvent(Number(row.dataset.eventId));
});
$("prov-lineage-wrap").addEventListener("click", (event) => {
  const node = event.target.closest(".node.event");
  if (node) showEvent(Number(node.dataset.eventId));
});
$("prov-lineage-button").addEventListener("click", () => showLineage($("prov-event").dataset.flowfile));
$("prov-replay-button").addEventListener("click", replayEvent);
"""
