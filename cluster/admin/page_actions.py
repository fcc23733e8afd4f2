"""The status page's actions (`cluster.admin.page` puts these parts in its document):
as NiFi's canvas menu, small. A side panel opens on a click, or from the keyboard
(each box, label and row below is a button in the tab order: Enter or Space opens it,
Escape closes the panel and gives the focus back to it, across the page's redraws):

  a processor's box   its state on each shard this node runs, its figures (five
                      minutes and since start), its last bulletin, and Stop, Start,
                      Run once per shard (or for all shards of this node)
  a connection's label, or a row of "Queues of this node"
                      the queue's FlowFiles a page at a time, and Drop behind a
                      confirm step inside the panel
  a listed FlowFile   its attributes, the first 64 KiB of its content (text when it
                      decodes as UTF-8, else a hex dump of its first bytes) and a
                      download through a one-time ticket (NiFi's download tokens), so
                      the browser's own download needs no bearer header

It calls, with the page's token:

  GET  api/v1/node/processors                          the processor panel, every 2 s while open
  POST api/v1/processors/{shard}/{processor}/stop|start|run-once
  GET  api/v1/queues/{shard}/{queue}/flowfiles?offset=&limit=
  POST api/v1/queues/{shard}/{queue}/drop
  GET  api/v1/flowfiles/{uuid}?shard=, .../content?shard= (Range: bytes=0-65535)
  POST api/v1/flowfiles/{uuid}/content/ticket?shard=   then the answer's url

Every action needs the admin role: a read token's click is answered 403, and the panel
says so in words instead of failing quietly; a refused token (401) asks for a new one
while the page and the panel keep what they show (`refused` in `cluster.admin.page`),
and the action can be repeated once it is given. Built with el() and textContent only,
like the rest of the page.
"""

from __future__ import annotations

ACTIONS_STYLE = """
#flow-svg .box:not(.port), #flow-svg .label[data-label], #queues-body tr[data-queue] { cursor: pointer; }
#flow-svg .box:not(.port):hover rect.frame { stroke: var(--accent); stroke-width: 2.2; }
#flow-svg .label[data-label]:hover rect { stroke: var(--accent); stroke-width: 1.8; }
#queues-body tr[data-queue]:hover td { background: #eef3fb; }
#flow-svg .box:focus, #flow-svg .label:focus { outline: none; }
#flow-svg .box:focus-visible rect.frame { stroke: var(--accent); stroke-width: 3; }
#flow-svg .label:focus-visible rect { stroke: var(--accent); stroke-width: 2.5; }
#queues-body tr[data-queue]:focus-visible { outline: 2px solid var(--accent); outline-offset: -2px; }
#actions-panel { position: fixed; top: 0; right: 0; bottom: 0; z-index: 5; width: min(680px, calc(100vw - 16px));
                 background: var(--card); border-left: 1px solid #c5cdd8;
                 box-shadow: -10px 0 28px rgba(20, 30, 50, 0.18); padding: 12px 18px 22px; overflow-y: auto; }
#actions-panel .head { display: flex; align-items: flex-start; gap: 12px; }
#actions-panel h2 { font-size: 1.1rem; margin: 2px 0 0; flex: 1; overflow-wrap: anywhere; }
#actions-panel h3 { font-size: 0.95rem; margin: 16px 0 6px; }
#actions-close { background: transparent; border: 1px solid #b9c1cd; border-radius: 4px; padding: 0 10px;
                 font-size: 1.1rem; line-height: 1.6rem; color: var(--muted); }
#actions-subtitle { margin: 2px 0 8px; color: var(--muted); overflow-wrap: anywhere; }
#actions-stale { margin: 6px 0; padding: 6px 10px; border-radius: 4px; background: var(--warn-bg); color: var(--warn);
                 font-weight: 600; }
#actions-panel.stale .data { opacity: 0.55; }
#actions-message { margin: 8px 0; padding: 7px 10px; border-radius: 4px; font-weight: 600; overflow-wrap: anywhere; }
#actions-message[data-outcome="done"] { background: var(--ok-bg); color: var(--ok); }
#actions-message[data-outcome="pending"] { background: var(--info-bg); color: var(--accent); }
#actions-message[data-outcome="refused"], #actions-message[data-outcome="failed"] { background: var(--bad-bg);
                                                                                   color: var(--bad); }
#actions-panel table { margin-bottom: 4px; }
#actions-panel td { white-space: normal; overflow-wrap: anywhere; vertical-align: top; }
#actions-panel td.tight, #actions-panel td.num { white-space: nowrap; }
#actions-panel td.filename { max-width: 7rem; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
#actions-flowfile { margin-top: 8px; }
#actions-flowfiles code { font-size: 0.78rem; }
#actions-panel .buttons { display: flex; flex-wrap: wrap; gap: 6px; }
#actions-panel button.act { border: 1px solid #9aa6b8; background: #f7f9fc; color: var(--text); border-radius: 4px;
                            padding: 2px 10px; }
#actions-panel button.act:hover:not(:disabled) { border-color: var(--accent); color: var(--accent); }
#actions-panel button.act.danger { border-color: var(--bad); color: var(--bad); }
#actions-panel button.act.danger.sure { background: var(--bad); color: #ffffff; }
#actions-panel button:disabled { opacity: 0.5; cursor: default; }
#actions-panel button.linkish { border: none; background: none; padding: 0; color: var(--accent); text-align: left; }
#actions-panel button.linkish:hover { text-decoration: underline; }
#actions-panel .bulletin { margin: 0; padding: 8px 10px; border-left: 3px solid var(--bad); background: #fbf6f6; }
#actions-panel .bulletin p { margin: 2px 0; overflow-wrap: anywhere; }
#actions-panel .pager { display: flex; align-items: center; gap: 10px; margin: 6px 0; color: var(--muted); }
#actions-confirm { margin: 8px 0; padding: 10px 12px; border: 1px solid var(--bad); border-radius: 6px;
                   background: var(--bad-bg); }
#actions-confirm p { margin: 0 0 8px; color: var(--bad); font-weight: 600; }
#actions-content { margin: 6px 0 0; padding: 8px 10px; max-height: 42vh; overflow: auto; background: #f6f7f9;
                   border: 1px solid var(--line); border-radius: 4px; font-family: "DejaVu Sans Mono", ui-monospace,
                   monospace; font-size: 0.8rem; white-space: pre-wrap; overflow-wrap: anywhere; }
#actions-content[data-shown-as="hex"] { white-space: pre; overflow-wrap: normal; }
"""

ACTIONS_SECTION = """
<aside id="actions-panel" role="dialog" aria-labelledby="actions-title" hidden>
  <div class="head">
    <h2 id="actions-title"></h2>
    <button id="actions-close" type="button" title="close (Esc)" aria-label="close">×</button>
  </div>
  <p id="actions-subtitle"></p>
  <p id="actions-stale" hidden>Not updated: the page waits for a token (its form "A token is needed"); once it is
    given, repeat the action.</p>
  <p id="actions-message" role="status" hidden></p>
  <div id="actions-body"></div>
</aside>"""

ACTIONS_SCRIPT = r"""
// -- actions from the page (cluster.admin.page_actions) --------------------------------
const ACTION_TIMEOUT_MS = 35000;  // a stop or run once waits up to STOP_WAIT_S for its task
const STOP_WAIT_S = 10;
const PANEL_QUEUE_PAGE = 20;
const PANEL_CONTENT_SHOWN = 65536;      // bytes of content the FlowFile view asks for
const PANEL_HEX_SHOWN = 512;            // bytes of it a hex dump shows
const ACTION_READ_ONLY = "This token may only read; actions need a token with the admin role.";
const ACTION_NAMES = {stop: "Stop", start: "Start", "run-once": "Run once"};

const panel = {view: null, timer: null, pending: false, opener: null};
const pathPart = encodeURIComponent;
const processorPath = (shard, processor) => `api/v1/processors/${pathPart(shard)}/${pathPart(processor)}`;
// A queue id holds '/': each part is encoded and the '/' kept, which the route takes as it is.
const queuePath = (shard, queue) => `api/v1/queues/${pathPart(shard)}/${queue.split("/").map(pathPart).join("/")}`;
const flowfilePath = (uuid, shard, rest) => `api/v1/flowfiles/${pathPart(uuid)}${rest || ""}?shard=${pathPart(shard)}`;

const actionPost = (path) => apiRequest(path, {method: "POST", timeout: ACTION_TIMEOUT_MS});

// -- the panel -------------------------------------------------------------------------
function panelSay(text, outcome) {
  const message = $("actions-message");
  message.textContent = text || "";
  message.dataset.outcome = outcome || "";
  message.hidden = !text;
}

function actionRefusal(error) {
  // What a failed action says. A refused token also asks for a new one, keeping the page.
  if (error.status === 403) return `${ACTION_READ_ONLY} (The node says: ${error.message}.)`;
  if (error.status === 401) {
    refused(error);
    return `The node refused the token (${error.message}). ` +
      'Give one in the page\'s form "A token is needed", then repeat.';
  }
  return error.message;
}
const outcomeOf = (error) => (error.status === 401 || error.status === 403) ? "refused" : "failed";

function openPanel(view, title, subtitle) {
  clearTimeout(panel.timer);
  panel.view = view;
  panel.pending = false;
  const aside = $("actions-panel");
  aside.dataset.kind = view.kind;
  for (const key of ["processor", "shard", "queue", "uuid"]) {
    if (view[key]) aside.dataset[key] = view[key]; else delete aside.dataset[key];
  }
  $("actions-title").textContent = title;
  $("actions-subtitle").textContent = subtitle || "";
  panelSay(null);
  $("actions-body").replaceChildren();
  if (aside.hidden) {
    // Opened from the flow or the queues (by a click, Enter or Space): focus goes to the
    // panel, and back to what opened it when the panel closes.
    const opener = document.activeElement;
    panel.opener = opener && opener.dataset ? opener.dataset.focusKey || null : null;
  }
  aside.hidden = false;
  $("actions-close").focus({preventScroll: true});
  markPanel();
  schedulePanel(view);  // a queue's or FlowFile's panel is read when asked, but marked while the page waits
}

function closePanel() {
  clearTimeout(panel.timer);
  panel.view = null;
  $("actions-panel").hidden = true;
  refocus(document.body, panel.opener);
  panel.opener = null;
}

function markPanel() {
  // While the page waits for a token the panel keeps what it shows, marked as not updated.
  const waiting = !$("login").hidden;
  $("actions-panel").classList.toggle("stale", waiting);
  $("actions-stale").hidden = !waiting;
  return waiting;
}

function schedulePanel(view) {
  clearTimeout(panel.timer);
  panel.timer = setTimeout(() => refreshPanel(view), POLL_MS);
}

async function refreshPanel(view) {
  if (panel.view !== view) return;
  if (!markPanel() && view.kind === "processor") {
    try {
      showProcessorFigures(view, await api("api/v1/node/processors"));
    } catch (_) {
      $("actions-panel").classList.add("stale");  // the page's own polling says why
    }
  }
  if (panel.view === view) schedulePanel(view);
}

function setPending(pending) {
  // While an action runs every button waits; then each is as it was (see panelOff()).
  panel.pending = pending;
  for (const made of $("actions-body").querySelectorAll("button.act")) {
    made.disabled = pending || made.dataset.off === "true";
  }
}

function panelOff(made, disabled) {
  made.dataset.off = String(disabled);
  made.disabled = disabled || panel.pending;
  return made;
}

function withId(node, id) {
  node.id = id;
  return node;
}

function panelButton(text, action, props, onClick) {
  const made = el("button", {class: "act" + (props && props.class ? " " + props.class : ""), "data-action": action,
                             "data-shard": props && props.shard, title: props && props.title}, text);
  made.type = "button";
  made.addEventListener("click", onClick);
  return made;
}

function panelCell(content, cls) { return el("td", {class: cls || null}, content); }

// -- a processor -----------------------------------------------------------------------
function openProcessor(processor) {
  const view = {kind: "processor", processor, shards: null};
  openPanel(view, processor, "processor");
  $("actions-body").append(el("p", {class: "muted"}, "reading its state…"));
  refreshPanel(view);
}

function showProcessorFigures(view, byShard) {
  if (panel.view !== view) return;
  const found = [];
  for (const [shard, list] of Object.entries(byShard)) {
    for (const p of list) if (p.processor === view.processor) found.push({shard, p});
  }
  $("actions-panel").classList.remove("stale");
  if (!found.length) {
    view.shards = null;
    $("actions-body").replaceChildren(el("p", {class: "muted"},
      `This node runs no processor ${view.processor} now.`));
    return;
  }
  const shards = found.map((f) => f.shard);
  $("actions-subtitle").textContent = `${found[0].p.type} · on ${shards.length === 1 ? "shard " + shards[0] :
    shards.length + " shards of this node"}`;
  if (view.shards === null || view.shards.join("\n") !== shards.join("\n")) {
    view.shards = shards;
    buildProcessorPanel(view);
  }
  // Only the cells change from one poll to the next: the buttons stay where they are.
  for (const {shard, p} of found) {
    const row = $("actions-body").querySelector(`tr[data-shard="${CSS.escape(shard)}"]`);
    row.dataset.state = p.state;
    row.querySelector(".state").replaceChildren(stateBadge(p.state));
    row.querySelector(".running").textContent = count(p.running);
  }
  const sum = (part) => {
    const total = {};
    for (const {p} of found) {
      for (const [key, value] of Object.entries(p[part] || {})) total[key] = (total[key] || 0) + value;
    }
    return total;
  };
  const recent = sum("five_minutes"), all = sum("since_start");
  const figures = [
    ["in", (f) => `${count(f.in_count)} · ${bytes(f.in_bytes)}`],
    ["read", (f) => bytes(f.read_bytes)],
    ["written", (f) => bytes(f.written_bytes)],
    ["out", (f) => `${count(f.out_count)} · ${bytes(f.out_bytes)}`],
    ["tasks", (f) => count(f.tasks)],
    ["task time", (f) => `${(f.task_seconds || 0).toFixed(2)} s`],
    ["to failure", (f) => count(f.failures)],
  ];
  $("actions-figures").replaceChildren(...figures.map(([name, shown]) =>
    el("tr", {"data-figure": name}, panelCell(name), panelCell(shown(recent), "num"), panelCell(shown(all), "num"))));
  $("actions-figures").dataset.tasks = all.tasks || 0;
  const bulletins = found.filter((f) => f.p.last_bulletin).map((f) => ({shard: f.shard, ...f.p.last_bulletin}))
    .sort((a, b) => b.at_ms - a.at_ms);
  const last = bulletins[0];
  $("actions-bulletin").replaceChildren(last ?
    el("div", {class: "bulletin", "data-at": last.at_ms},
       el("p", {}, el("b", {}, clock(last.at_ms / 1000)), ` (${age(nowS() - last.at_ms / 1000)} ago)`,
          found.length > 1 ? ` · shard ${last.shard}` : ""),
       el("p", {}, last.message),
       last.flowfile_id ? el("p", {class: "muted"}, "FlowFile ", el("code", {}, last.flowfile_id)) : null) :
    el("p", {class: "muted"}, "none: it has met no error since its engine started"));
}

function buildProcessorPanel(view) {
  const several = view.shards.length > 1;
  const actions = (shards, label) => el("div", {class: "buttons"}, ["stop", "start", "run-once"].map((action) =>
    panelButton(ACTION_NAMES[action], action, {shard: label, title: `${ACTION_NAMES[action]} on ${label === "*" ?
      "every shard of this node" : "shard " + label}`}, () => processorAction(view, action, shards))));
  const rows = view.shards.map((shard) => el("tr", {"data-shard": shard},
    panelCell(shard, "tight"), el("td", {class: "state tight"}), el("td", {class: "running num"}),
    panelCell(actions([shard], shard))));
  if (several) {
    rows.push(el("tr", {"data-shard": "*"}, el("td", {colspan: 3}, el("b", {}, "all shards of this node")),
                 panelCell(actions(view.shards, "*"))));
  }
  const figuresTable = el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "figure"),
      el("th", {class: "num"}, "five minutes"), el("th", {class: "num"}, "since start"))),
    withId(el("tbody", {}), "actions-figures"));
  $("actions-body").replaceChildren(el("div", {class: "data"},
    el("h3", {}, "State"),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "shard"), el("th", {}, "state"),
                                      el("th", {class: "num"}, "running"), el("th", {}, "actions"))),
       withId(el("tbody", {}, rows), "actions-shards")),
    el("h3", {}, "Figures" + (several ? " (summed over this node's shards)" : "")),
    figuresTable,
    el("h3", {}, "Last bulletin"),
    withId(el("div", {}), "actions-bulletin")));
  if (panel.pending) setPending(true);
}

async function processorAction(view, action, shards) {
  if (panel.pending) return;
  setPending(true);
  panelSay(`${ACTION_NAMES[action]}: asking the node…`, "pending");
  const done = [];
  let failure = null;
  for (const shard of shards) {
    // A stop and a run once wait for their task to end, within the time an action is given.
    const asked = action === "start" ? action : `${action}?wait_s=${STOP_WAIT_S}`;
    const path = `${processorPath(shard, view.processor)}/${asked}`;
    try {
      const state = await actionPost(path);
      done.push(`${shard}: ${state.state.toLowerCase()}` +
                (state.running ? `, ${state.running} task${state.running > 1 ? "s" : ""} running` : ""));
    } catch (error) {
      failure = {shard, error};
      break;  // the same refusal would meet every other shard
    }
  }
  if (panel.view !== view) return;
  setPending(false);
  if (failure) {
    const before = done.length ? ` (done before it: ${done.join("; ")})` : "";
    panelSay(`${ACTION_NAMES[action]} on ${failure.shard} refused: ${actionRefusal(failure.error)}${before}`,
        outcomeOf(failure.error));
  } else {
    panelSay(`${ACTION_NAMES[action]} done: ${done.join("; ")}`, "done");
  }
  refreshPanel(view);
}

// -- a queue ---------------------------------------------------------------------------
function queueShards(queue) {
  // The shards of this node holding the queue, as its table shows them.
  const rows = [...document.querySelectorAll("#queues-body tr[data-queue]")];
  return [...new Set(rows.filter((tr) => tr.dataset.queue === queue).map((tr) => tr.dataset.shard))];
}

function openQueue(queue, shard, offset) {
  const shards = queueShards(queue);
  const chosen = shard || shards[0];
  const view = {kind: "queue", queue, shard: chosen, shards, offset: offset || 0, listing: null};
  openPanel(view, queue, `queue on shard ${chosen}`);
  if (!chosen) {
    $("actions-body").replaceChildren(el("p", {class: "muted"}, "This node runs no shard with this queue now."));
    return;
  }
  loadQueue(view);
}

async function loadQueue(view) {
  try {
    const page = `offset=${view.offset}&limit=${PANEL_QUEUE_PAGE}`;
    view.listing = await api(`${queuePath(view.shard, view.queue)}/flowfiles?${page}`);
  } catch (error) {
    if (panel.view === view) panelSay(`Cannot list the queue: ${actionRefusal(error)}`, outcomeOf(error));
    return;
  }
  if (panel.view === view) showQueue(view);
}

function showQueue(view) {
  const listing = view.listing;
  const aside = $("actions-panel");
  aside.dataset.count = listing.count;
  const picker = view.shards.length > 1 ? el("div", {class: "buttons"}, "shard:", view.shards.map((shard) => {
    return panelOff(panelButton(shard, "shard", {shard}, () => openQueue(view.queue, shard)), shard === view.shard);
  })) : null;
  const summary = el("div", {class: "summary"},
    el("span", {}, "queued ", withId(el("b", {}, count(listing.count)), "actions-queued"), " · ", bytes(listing.bytes)),
    el("span", {}, "in memory ", el("b", {}, count(listing.listable))),
    listing.swapped_count ? el("span", {}, "swapped out ", el("b", {}, count(listing.swapped_count))) : null,
    listing.in_flight ? el("span", {}, "in flight ", el("b", {}, count(listing.in_flight))) : null);
  const rows = listing.flowfiles.map((f) => {
    const open = el("button", {class: "linkish", title: "show its attributes and content"}, el("code", {}, f.uuid));
    open.type = "button";
    open.addEventListener("click", () => openFlowFile(view, f.uuid));
    return el("tr", {"data-uuid": f.uuid, "data-position": f.position},
      panelCell(count(f.position), "num"), panelCell(open, "tight"),
      el("td", {class: "filename", title: f.filename}, f.filename), panelCell(bytes(f.size), "num"),
      panelCell([age(nowS() - f.entry_date_ms / 1000), f.penalized ? badge("penalized", "warn") : null], "tight"));
  });
  if (!rows.length) {
    rows.push(el("tr", {}, el("td", {class: "empty", colspan: 5},
      listing.count ? "none listed here: the rest are swapped out or in flight" : "the queue is empty")));
  }
  const first = listing.flowfiles.length ? listing.offset + 1 : 0;
  const last = listing.offset + listing.flowfiles.length;
  const previous = panelButton("‹ previous", "previous", null, () => pageQueue(view, -PANEL_QUEUE_PAGE));
  panelOff(previous, listing.offset === 0);
  const next = panelButton("next ›", "next", null, () => pageQueue(view, PANEL_QUEUE_PAGE));
  panelOff(next, last >= listing.listable);
  const refresh = panelButton("refresh", "refresh", null, () => loadQueue(view));
  const drop = panelButton("Drop…", "drop", {class: "danger", title: "drop every FlowFile of this queue"},
                      () => confirmDrop(view));
  panelOff(drop, !listing.count);
  $("actions-body").replaceChildren(el("div", {class: "data"},
    picker, summary,
    el("div", {class: "buttons"}, drop),
    withId(el("div", {}), "actions-confirm"),
    el("div", {class: "pager"}, previous, withId(el("span", {},
      `${count(first)}–${count(last)} of ${count(listing.listable)} in memory`), "actions-range"), next, refresh),
    el("div", {class: "table-wrap"}, el("table", {}, el("thead", {}, el("tr", {}, el("th", {class: "num"}, "#"),
      el("th", {}, "FlowFile"), el("th", {}, "filename"), el("th", {class: "num"}, "size"),
      el("th", {}, "queued for"))),
      withId(el("tbody", {}, rows), "actions-flowfiles")))));
  $("actions-confirm").hidden = true;
}

function pageQueue(view, step) {
  view.offset = Math.max(0, view.offset + step);
  loadQueue(view);
}

function confirmDrop(view) {
  // A step inside the panel, not window.confirm: the reader sees what will go.
  const box = $("actions-confirm");
  const sure = panelButton("Drop them", "drop-confirm", {class: "danger sure"}, () => dropQueue(view));
  const keep = panelButton("Keep them", "drop-cancel", null, () => { box.hidden = true; });
  box.replaceChildren(el("p", {}, `Drop every FlowFile of ${view.queue} on shard ${view.shard}: ` +
    `${count(view.listing.count)} now, swapped ones too? They are gone for good (a DROP provenance event each); ` +
    "FlowFiles a running task holds stay."), el("div", {class: "buttons"}, sure, keep));
  box.hidden = false;
  if (panel.pending) setPending(true);
}

async function dropQueue(view) {
  if (panel.pending) return;
  setPending(true);
  panelSay("Drop: asking the node…", "pending");
  try {
    const result = await actionPost(`${queuePath(view.shard, view.queue)}/drop`);
    if (panel.view !== view) return;
    panelSay(`Dropped ${count(result.dropped)} FlowFiles (${bytes(result.dropped_bytes)}); ` +
             `${count(result.remaining)} remain (held by running tasks or arrived since).`, "done");
    view.offset = 0;
  } catch (error) {
    if (panel.view !== view) return;
    panelSay(`Drop refused: ${actionRefusal(error)}`, outcomeOf(error));
  } finally {
    if (panel.view === view) setPending(false);
  }
  $("actions-confirm").hidden = true;
  loadQueue(view);
}

// -- a FlowFile ------------------------------------------------------------------------
function openFlowFile(queueView, uuid) {
  const view = {kind: "flowfile", uuid, shard: queueView.shard, queue: queueView.queue, from: queueView};
  openPanel(view, "FlowFile " + uuid, `in ${queueView.queue} on shard ${queueView.shard}`);
  loadFlowFile(view);
}

async function loadFlowFile(view) {
  const back = panelButton("‹ back to the queue", "back", null,
                           () => openQueue(view.queue, view.shard, view.from.offset));
  $("actions-body").replaceChildren(el("div", {class: "buttons"}, back));
  let details;
  try {
    details = await api(flowfilePath(view.uuid, view.shard));
  } catch (error) {
    if (panel.view === view) panelSay(`Cannot read the FlowFile: ${actionRefusal(error)}`, outcomeOf(error));
    return;
  }
  if (panel.view !== view) return;
  const download = panelButton("Download", "download", {title: "its whole content, as a file"},
                               () => downloadContent(view));
  const facts = [
    ["filename", details.filename],
    ["size", `${count(details.size)} bytes (${bytes(details.size)})`],
    ["queued since", `${clock(details.entry_date_ms / 1000)} (${age(nowS() - details.entry_date_ms / 1000)} ago)`],
    ["lineage start", clock(details.lineage_start_date_ms / 1000)],
    ["held", [details.penalized ? badge("penalized", "warn") : null, details.swapped ? badge("swapped out", "quiet") :
              null].filter((b) => b).concat(details.penalized || details.swapped ? [] : ["no"])],
  ];
  const attributes = Object.entries(details.attributes).sort(([a], [b]) => a.localeCompare(b));
  $("actions-body").append(withId(el("div", {class: "data", "data-uuid": view.uuid, "data-size": details.size},
    el("table", {}, el("tbody", {}, facts.map(([name, value]) =>
      el("tr", {}, panelCell(name, "tight"), panelCell(value))))),
    el("h3", {}, `Attributes (${attributes.length})`),
    el("table", {}, withId(el("tbody", {}, attributes.map(([name, value]) =>
      el("tr", {"data-attribute": name}, panelCell(el("code", {}, name), "tight"), panelCell(value)))),
      "actions-attributes")),
    el("h3", {}, "Content"),
    el("div", {class: "buttons"}, download),
    withId(el("p", {class: "muted"}, details.size ? "reading…" : "none: its content is empty"), "actions-content-note"),
    withId(el("pre", {}), "actions-content")), "actions-flowfile"));
  $("actions-content").hidden = true;
  if (details.size) loadContent(view, details.size);
}

function contentText(data, whole) {
  // UTF-8 text without control characters but tab and line ends; a cut may split the
  // last character, which streaming decoding leaves aside.
  try {
    const text = new TextDecoder("utf-8", {fatal: true}).decode(data, {stream: !whole});
    return /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text) ? null : text;
  } catch (_) {
    return null;
  }
}

function contentHex(data) {
  const lines = [];
  const end = Math.min(data.length, PANEL_HEX_SHOWN);
  for (let at = 0; at < end; at += 16) {
    const row = [...data.subarray(at, Math.min(at + 16, end))];
    const hex = row.map((b) => b.toString(16).padStart(2, "0")).join(" ");
    const ascii = row.map((b) => (b >= 32 && b < 127) ? String.fromCharCode(b) : ".").join("");
    lines.push(`${at.toString(16).padStart(8, "0")}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return lines.join("\n");
}

async function loadContent(view, size) {
  let data;
  try {
    ({data} = await apiRequest(flowfilePath(view.uuid, view.shard, "/content"),
                            {headers: {Range: `bytes=0-${PANEL_CONTENT_SHOWN - 1}`}, raw: true}));
  } catch (error) {
    if (panel.view === view) $("actions-content-note").textContent = `Cannot read its content: ${actionRefusal(error)}`;
    return;
  }
  if (panel.view !== view) return;
  const whole = data.length >= size;
  const text = contentText(data, whole);
  const shown = whole ? `all ${count(size)} bytes` : `showing the first ${bytes(data.length)} of ${count(size)} bytes`;
  const pre = $("actions-content");
  pre.dataset.shownAs = text === null ? "hex" : "text";
  pre.textContent = text === null ? contentHex(data) : text;
  $("actions-content-note").textContent = text === null ?
    `not UTF-8 text: the first ${count(Math.min(data.length, PANEL_HEX_SHOWN))} of its ${count(size)} bytes as hex` :
    `as UTF-8 text, ${shown}`;
  pre.hidden = false;
}

function ticketUntil(expires) {
  // expires_at as seconds or milliseconds since the epoch, or an ISO date.
  const at = typeof expires === "number" ? (expires > 1e11 ? expires : expires * 1000) : Date.parse(expires || "");
  return Number.isNaN(at) ? "" : `, valid until ${clock(at / 1000)}`;
}

async function downloadContent(view) {
  // The browser's download sends no bearer header: a one-time ticket's url needs none.
  if (panel.pending) return;
  setPending(true);
  panelSay("Download: asking the node for a ticket…", "pending");
  try {
    const ticket = await actionPost(flowfilePath(view.uuid, view.shard, "/content/ticket"));
    if (panel.view !== view) return;
    const link = el("a", {});
    link.href = new URL(ticket.url, document.baseURI).href;
    link.download = "";
    document.body.append(link);
    link.click();
    link.remove();
    panelSay(`Download started: a one-time link${ticketUntil(ticket.expires_at)}.`, "done");
  } catch (error) {
    if (panel.view === view) panelSay(`Download refused: ${actionRefusal(error)}`, outcomeOf(error));
  } finally {
    if (panel.view === view) setPending(false);
  }
}

// -- where the panel opens -------------------------------------------------------------
function openFromFlow(target) {
  const box = target.closest(".box[data-processor]");
  if (box && !box.classList.contains("port")) { openProcessor(box.dataset.processor); return; }
  const label = target.closest(".label[data-label]");
  if (label) openQueue(label.dataset.label, null);
}
function openFromQueues(target) {
  const row = target.closest("tr[data-queue]");
  if (row) openQueue(row.dataset.queue, row.dataset.shard);
}
function onEnterOrSpace(open) {
  // A processor's box, a connection's label and a queue's row open as buttons do.
  return (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    if (!event.target.closest("[role=button][data-focus-key]")) return;
    event.preventDefault();
    open(event.target);
  };
}
$("flow-wrap").addEventListener("click", (event) => openFromFlow(event.target));
$("flow-wrap").addEventListener("keydown", onEnterOrSpace(openFromFlow));
$("queues-body").addEventListener("click", (event) => openFromQueues(event.target));
$("queues-body").addEventListener("keydown", onEnterOrSpace(openFromQueues));
$("actions-close").addEventListener("click", closePanel);
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && !$("actions-panel").hidden) closePanel();
});
"""
