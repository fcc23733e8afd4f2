"""The status page's drawing of the flow (`cluster.admin.page` puts these parts in its
document): as NiFi's canvas, small. Each processor (and port) is a box with its id,
type, state and its five-minute figures (in, out, tasks, FlowFiles to failure); each
connection an edge labelled with what its queue holds, drawn in the warning colour
while back-pressure applies.

The script reads three answers, keyed by the same ids:

  GET api/v1/node/flow/graph   where each box and edge goes (`cluster.admin.flow_layout`)
  GET api/v1/node/processors   each processor's figures, per shard
  GET api/v1/node/queues       each connection's queue, per shard

On a node with several shards the figures are summed over them (the page says so).
On a clustered node a toggle chooses whose figures: this node's, or the whole
cluster's, summed over every member's shards (NiFi's cluster summary, by request
replication):

  GET api/v1/cluster/processors, api/v1/cluster/queues
      {"shards": {shard: [as the node's answer]}, "members": [{"node", "incarnation",
       "admin", "answered", "error", "answered_at"}]}

asked only while the cluster is chosen. The page says which members answered; one
that did not is named with the age of its last answer, or as not included.
The SVG is built with createElementNS and textContent only, like the rest of the page.
"""

from __future__ import annotations

FLOW_GRAPH_STYLE = """
#flow-wrap { overflow: auto; max-height: 72vh; border: 1px solid var(--line); border-radius: 6px;
             background: #fafbfc; }
#flow-svg { display: block; height: auto; }
#flow-svg text { font-family: inherit; fill: var(--text); }
#flow-svg .box rect.frame { fill: #ffffff; stroke: #9aa6b8; stroke-width: 1.2; }
#flow-svg .box rect.stripe { fill: #7d8796; }
#flow-svg .box[data-state="RUNNING"] rect.stripe { fill: var(--ok); }
#flow-svg .box[data-state="STOPPING"] rect.stripe { fill: #e3962c; }
#flow-svg .box[data-state="mixed"] rect.stripe { fill: #e3962c; }
#flow-svg .box.port rect.frame { fill: #eef2f8; stroke-dasharray: 4 3; }
#flow-svg .box .id { font-size: 14px; font-weight: 600; }
#flow-svg .box .type { font-size: 12px; fill: var(--muted); }
#flow-svg .box .state { font-size: 12.5px; font-weight: 600; fill: var(--muted); }
#flow-svg .box[data-state="RUNNING"] .state { fill: var(--ok); }
#flow-svg .box .figures { font-size: 12.5px; font-variant-numeric: tabular-nums; }
#flow-svg .box .failing { fill: var(--bad); font-weight: 600; }
#flow-svg .edge path { fill: none; stroke: #6b778a; stroke-width: 1.5; }
#flow-svg .edge.back path { stroke-dasharray: 6 4; }
#flow-svg .edge[data-back-pressure="true"] path { stroke: var(--bad); stroke-width: 2.5; }
#flow-svg .label rect { fill: #ffffff; stroke: #c5cdd8; stroke-width: 1; }
#flow-svg .label text { font-size: 12px; font-variant-numeric: tabular-nums; }
#flow-svg .label .relationship { fill: var(--muted); }
#flow-svg .label[data-back-pressure="true"] rect { fill: var(--bad-bg); stroke: var(--bad); }
#flow-svg .label[data-back-pressure="true"] text { fill: var(--bad); font-weight: 600; }
#flow-svg marker path { fill: #6b778a; }
#flow-svg marker.warn path { fill: var(--bad); }
#flow-scope { margin-left: auto; display: inline-flex; border: 1px solid #b9c1cd; border-radius: 5px;
              overflow: hidden; font-size: 0.85rem; font-weight: 400; }
#flow-scope button { background: #ffffff; color: var(--text); border: none; padding: 3px 12px; }
#flow-scope button + button { border-left: 1px solid #b9c1cd; }
#flow-scope button[aria-pressed="true"] { background: var(--accent); color: #ffffff; font-weight: 600; }
#flow-members { margin: 0 0 8px; color: var(--muted); display: flex; flex-wrap: wrap; gap: 2px 14px; }
#flow-members .stale { color: var(--warn); font-weight: 600; }
#flow-legend { display: flex; flex-wrap: wrap; gap: 4px 20px; margin: 8px 0 0; color: var(--muted);
               font-size: 0.85rem; }
"""

FLOW_GRAPH_SECTION = """
  <section id="flow" class="wide" data-source="node">
    <h2>Flow <span class="note" id="flow-note"></span>
      <span id="flow-scope" role="group" aria-label="whose figures" data-scope="node" hidden>
        <button type="button" data-scope="node" aria-pressed="true">this node</button>
        <button type="button" data-scope="cluster" aria-pressed="false">whole cluster</button>
      </span></h2>
    <p id="flow-members" hidden></p>
    <p id="flow-empty" class="muted" hidden></p>
    <div id="flow-wrap"></div>
    <div id="flow-legend">
      <span>boxes: the last five minutes (in, out, tasks, FlowFiles to failure)</span>
      <span>edges: FlowFiles queued · their size; red while back-pressure applies; dashed: back to an earlier
        processor</span>
    </div>
  </section>"""

FLOW_GRAPH_SCRIPT = r"""
// -- the flow as a graph (cluster.admin.page_flow_graph) -------------------------------
const SVG_NS = "http://www.w3.org/2000/svg";

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function summedProcessors(byShard) {
  // processor id -> its figures over every shard; the state is one word when all agree.
  const sums = new Map();
  for (const list of Object.values(byShard)) {
    for (const p of list) {
      const sum = sums.get(p.processor) || {type: p.type, states: new Set(), running: 0,
                                            in_count: 0, out_count: 0, tasks: 0, failures: 0};
      const recent = p.five_minutes || {};
      sum.states.add(p.state);
      sum.running += p.running || 0;
      for (const key of ["in_count", "out_count", "tasks", "failures"]) sum[key] += recent[key] || 0;
      sums.set(p.processor, sum);
    }
  }
  for (const sum of sums.values()) sum.state = sum.states.size === 1 ? [...sum.states][0] : "mixed";
  return sums;
}

function summedQueues(byShard) {
  const sums = new Map();
  for (const list of Object.values(byShard)) {
    for (const q of list) {
      const sum = sums.get(q.queue) || {count: 0, bytes: 0, back_pressure: false};
      sum.count += q.count;
      sum.bytes += q.bytes;
      sum.back_pressure = sum.back_pressure || q.back_pressure;
      sums.set(q.queue, sum);
    }
  }
  return sums;
}

function fitText(text, width) {
  // Cut a label that does not fit its box; the whole text stays in the box's title.
  const full = text.textContent;
  if (text.getComputedTextLength() <= width) return;
  let keep = full.length;
  while (keep > 1 && text.getComputedTextLength() > width) text.textContent = full.slice(0, --keep) + "…";
}

function short(n) {
  // A count that fits a box: 12,345 up to 99,999, then 123k, 1.2M; the table has the exact figure.
  if (n < 100000) return count(n);
  for (const [unit, size] of [["G", 1e9], ["M", 1e6], ["k", 1e3]]) {
    if (n >= size) return (n / size).toFixed(n < 10 * size ? 1 : 0) + unit;
  }
  return count(n);
}

function pathOf(points) {
  return points.map((p, i) => (i ? "L" : "M") + p.x + " " + p.y).join(" ");
}

function edgeLabel(edge, queue, warn) {
  const relationship = edge.relationships.join(", ");
  const figures = queue ? `${short(queue.count)} · ${bytes(queue.bytes)}` : "–";
  const label = svg("g", {class: "label", "data-label": edge.id, "data-back-pressure": warn,
                          "data-focus-key": `queue:${edge.id}`, tabindex: 0, role: "button",
                          "aria-label": `queue ${edge.id}: ${figures}`});
  const first = svg("text", {class: "relationship", x: edge.label.x, y: edge.label.y - 2, "text-anchor": "middle"},
                    relationship);
  const second = svg("text", {x: edge.label.x, y: edge.label.y + 13, "text-anchor": "middle",
                              "data-queued": queue ? queue.count : ""}, figures);
  label.append(svg("title", {}, `${edge.id}\nqueued ${figures}` +
                   `\nback-pressure at ${count(edge.back_pressure_count)} FlowFiles or ` +
                   `${bytes(edge.back_pressure_bytes)}`), first, second);
  return label;
}

function sizeLabel(label) {
  // A white card under the label's text, as wide as its longer line.
  const texts = [...label.querySelectorAll("text")];
  for (const text of texts) fitText(text, 116);
  const widths = texts.map((text) => text.getComputedTextLength());
  const width = Math.max(...widths) + 10;
  const x = Number(texts[0].getAttribute("x"));
  const y = Number(texts[0].getAttribute("y"));
  label.insertBefore(svg("rect", {x: x - width / 2, y: y - 13, width, height: 32, rx: 4}), texts[0]);
}

function processorBox(node, figures, graph) {
  const w = graph.box_width, h = graph.box_height;
  const port = node.kind !== "processor";
  const state = port ? "port" : (figures ? figures.state : "unknown");
  const box = svg("g", {class: "box" + (port ? " port" : ""), "data-processor": node.id, "data-state": state,
                        "data-in": figures ? figures.in_count : "", "data-tasks": figures ? figures.tasks : "",
                        transform: `translate(${node.x} ${node.y})`});
  if (!port) {
    const named = `processor ${node.id} (${node.type}), ${state.toLowerCase()}`;
    for (const [name, value] of Object.entries({"data-focus-key": `processor:${node.id}`, tabindex: 0, role: "button",
                                                "aria-label": named})) {
      box.setAttribute(name, String(value));
    }
  }
  box.append(svg("title", {}, `${node.id} (${node.type})`));
  box.append(svg("rect", {class: "frame", width: w, height: h, rx: 6}));
  box.append(svg("rect", {class: "stripe", width: 5, height: h - 2, x: 1, y: 1, rx: 2}));
  box.append(svg("text", {class: "id", x: 14, y: 20}, node.id));
  box.append(svg("text", {class: "type", x: 14, y: 38}, node.type));
  if (!port) {
    const running = figures && figures.running ? ` · ${figures.running} task${figures.running > 1 ? "s" : ""} now` : "";
    box.append(svg("text", {class: "state", x: 14, y: 56}, figures ? figures.state.toLowerCase() + running : "–"));
    box.append(svg("text", {class: "figures", x: 14, y: 74},
                   figures ? `in ${short(figures.in_count)} → out ${short(figures.out_count)}` : ""));
    const failures = figures ? figures.failures : 0;
    box.append(svg("text", {class: "figures", x: 14, y: 92},
                   figures ? `tasks ${short(figures.tasks)} · ` : "",
                   figures ? svg("tspan", {class: failures ? "failing" : null}, `failures ${short(failures)}`) : ""));
  }
  return box;
}

// -- whose figures: this node's or the whole cluster's ---------------------------------
// The choice is kept on #flow-scope, read by a hoisted function: the first poll() runs
// before this part of the script has (a `let` here would not be set yet).
function flowScope() {
  return $("flow-scope").dataset.scope || "node";
}

function clusterFlowFigures() {
  // The cluster's figures while they are chosen, settled (a refusal shows, and the
  // node's figures stay); null otherwise, and always on a standalone node.
  if (flowScope() !== "cluster" || standalone !== false) return null;
  return settled(Promise.all([api("api/v1/cluster/processors"), api("api/v1/cluster/queues")]));
}

function chooseFlowScope(event) {
  const button = event.target.closest("button[data-scope]");
  if (!button || button.dataset.scope === flowScope()) return;
  $("flow-scope").dataset.scope = button.dataset.scope;
  for (const each of $("flow-scope").querySelectorAll("button")) {
    each.setAttribute("aria-pressed", String(each === button));
  }
  poll();
}
document.getElementById("flow-scope").addEventListener("click", chooseFlowScope);

function renderFlowMembers(members) {
  // Who answered for the cluster's figures; a member that did not is named, with how
  // old its figures are, or as not included.
  const line = $("flow-members");
  const now = nowS();
  const parts = members.map((m) => {
    const self = m.incarnation === thisIncarnation ? " (this node)" : "";
    if (m.answered) return el("span", {"data-member": m.node, "data-answered": "true"}, `${m.node}${self}`);
    const why = m.error ? ` (${m.error})` : "";
    const shown = m.answered_at !== null && m.answered_at !== undefined ?
      `figures from ${age(now - m.answered_at)} ago` : "not included";
    return el("span", {class: "stale", "data-member": m.node, "data-answered": "false", title: m.error || ""},
              `${m.node}${self}: no answer${why}, ${shown}`);
  });
  const answered = members.filter((m) => m.answered).length;
  line.replaceChildren(el("span", {}, `figures of ${answered} of ${members.length} members:`), ...parts);
  line.hidden = false;
}

function renderFlow(answer, queuesByShard) {
  const wrap = $("flow-wrap");
  const empty = $("flow-empty");
  if (answer.error) {
    if (answer.error.status === 404) {
      wrap.replaceChildren();
      empty.textContent = answer.error.message;
      empty.hidden = false;
    }
    return;  // anything else: the last drawing stays, and the section shows as stale
  }
  const [graph, processorsByShard, whole] = answer.value;
  empty.hidden = true;
  $("flow-scope").hidden = standalone !== false;
  let processors = summedProcessors(processorsByShard);
  let queues = summedQueues(queuesByShard || {});
  let summed = graph.shards.length > 1 ? ` · figures summed over this node's ${graph.shards.length} shards` : "";
  let scope = "node";
  if (whole && whole.error) {
    summed = ` · this node's figures: the cluster's were not read (${whole.error.message})`;
    $("flow-members").hidden = true;
  } else if (whole) {
    const [clusterProcessors, clusterQueues] = whole.value;
    processors = summedProcessors(clusterProcessors.shards);
    queues = summedQueues(clusterQueues.shards);
    const shards = Object.keys(clusterProcessors.shards).length;
    summed = ` · figures summed over the cluster's ${shards} shard${shards === 1 ? "" : "s"}`;
    scope = "cluster";
    renderFlowMembers(clusterProcessors.members);
  } else {
    $("flow-members").hidden = true;
  }
  $("flow").dataset.scope = scope;
  $("flow-note").textContent = `${graph.flow}: ${graph.nodes.length} processors and ports, ` +
    `${graph.edges.length} connections` + summed;

  const drawing = svg("svg", {id: "flow-svg", viewBox: `0 0 ${graph.width} ${graph.height}`,
                              role: "img", "aria-label": `the flow ${graph.flow}`,
                              "data-nodes": graph.nodes.length, "data-edges": graph.edges.length});
  // Shrink to the section's width down to 80 % of its own size, then scroll.
  Object.assign(drawing.style, {width: "100%", minWidth: Math.round(graph.width * 0.8) + "px",
                                maxWidth: Math.round(graph.width * 1.1) + "px"});
  const defs = svg("defs", {});
  for (const [id, kind] of [["flow-arrow", ""], ["flow-arrow-warn", "warn"]]) {
    defs.append(svg("marker", {id, class: kind, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
                               markerHeight: 7, orient: "auto-start-reverse"}, svg("path", {d: "M0 0 L10 5 L0 10 z"})));
  }
  const edges = svg("g", {}), boxes = svg("g", {}), labels = svg("g", {});
  for (const edge of graph.edges) {
    const queue = queues.get(edge.id);
    const warn = queue ? queue.back_pressure : false;
    edges.append(svg("g", {class: "edge" + (edge.back_edge ? " back" : ""), "data-edge": edge.id,
                           "data-back-pressure": warn},
                     svg("path", {d: pathOf(edge.points),
                                  "marker-end": `url(#${warn ? "flow-arrow-warn" : "flow-arrow"})`})));
    labels.append(edgeLabel(edge, queue, warn));
  }
  for (const node of graph.nodes) boxes.append(processorBox(node, processors.get(node.id), graph));
  drawing.append(defs, edges, boxes, labels);
  const scroll = [wrap.scrollLeft, wrap.scrollTop];
  const focused = focusKeyIn(wrap);
  wrap.replaceChildren(drawing);
  [wrap.scrollLeft, wrap.scrollTop] = scroll;
  refocus(wrap, focused);
  // Text is measured once it is in the document.
  for (const text of drawing.querySelectorAll(".box .id, .box .type, .box .state")) {
    fitText(text, graph.box_width - 22);
  }
  for (const label of labels.children) sizeLabel(label);
}
"""
