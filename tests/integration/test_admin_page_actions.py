"""The status page's actions, clicked in Debian's headless Chromium (Playwright) on a
real standalone `custody run` node with tokens: a processor stopped, started and run
once from its panel, a queue listed, a FlowFile opened (attributes, content as text
and as hex), a queue dropped after a confirm step, a read token's click refused in
words, and a token refused mid-session asking again while the page keeps what it
shows. Every claim is checked against the API as well as on the page.

One node serves every test of the module (a node start costs seconds); each test puts
the processors it relies on in the state it needs. Screenshots (1366x768 and
1920x1080) go where the page's other tests put theirs.
"""

from __future__ import annotations

import urllib.parse
import urllib.request

import pytest

from cluster.admin.client import call
from cluster.admin.tokens import add_token
from cluster.services.process import wait_until
from flow.loading import load_flow
from tests.integration.test_admin_page import SEEN_WITHIN_MS, reader, standalone_admin  # noqa: F401 - a fixture, used here

# text makes small UTF-8 FlowFiles, noise 70 KB of random bytes each (more than the
# 64 KiB the page shows); both go to tag, whose stop lets their queues fill.
FLOW = """
name: acted
processors:
  - id: text
    type: GenerateFlowFile
    properties: {sequence_attribute: seq, custom_text: "payload ${seq} for the page"}
    scheduling: {run_schedule: 300 ms}
  - {id: noise, type: GenerateFlowFile, properties: {file_size: 70 KB, unique_flowfiles: true},
     scheduling: {run_schedule: 1 sec}}
  - {id: tag, type: UpdateAttribute, properties: {kind: shown}}
  - {id: done, type: UpdateAttribute, properties: {}, auto_terminate: [success]}
connections:
  - {source: text, relationships: [success], destination: tag}
  - {source: noise, relationships: [success], destination: tag}
  - {source: tag, relationships: [success], destination: done}
"""
SHARD = "local"
READ_ONLY = "this token may only read; actions need a token with the admin role"

DRAWN = "() => document.querySelectorAll('#flow-svg .box[data-processor]').length === 4"
PANEL_STATE = """({processor, state}) => {
  const panel = document.getElementById('actions-panel');
  const row = panel.querySelector("#actions-shards tr[data-shard='local']");
  return !panel.hidden && panel.dataset.processor === processor && row !== null && row.dataset.state === state;
}"""
GRAPH_STATE = (
    "({processor, state}) => document.querySelector(`#flow-svg .box[data-processor='${processor}']`)"
    "?.dataset.state === state"
)
MESSAGE = "(outcome) => document.getElementById('actions-message').dataset.outcome === outcome"
LIVE = "() => document.getElementById('freshness').className === 'live'"


class Node:
    def __init__(self, url: str, admin: str, read: str, connections: dict[str, str]):
        self.url = url
        self.admin = admin
        self.read = read
        self.connections = connections  # source -> its connection's (queue's) id

    def get(self, path: str) -> dict:
        status, answer = call(self.url + path, token=self.admin)
        assert status == 200, (path, status, answer)
        return answer

    def processor(self, processor: str) -> dict:
        return next(p for p in self.get("/api/v1/node/processors")[SHARD] if p["processor"] == processor)

    def queued(self, source: str) -> int:
        queue = urllib.parse.quote(self.connections[source], safe="/")
        return self.get(f"/api/v1/queues/{SHARD}/{queue}/flowfiles?limit=1")["count"]

    def control(self, processor: str, action: str) -> None:
        status, answer = call(f"{self.url}/api/v1/processors/{SHARD}/{processor}/{action}", "POST", token=self.admin)
        assert status == 200, (processor, action, status, answer)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    where = tmp_path_factory.mktemp("actions")
    flow = where / "acted.yaml"
    flow.write_text(FLOW)
    tokens = str(where / "tokens")
    admin = add_token(tokens, "admin", "page-admin")
    read = add_token(tokens, "read", "page-reader")
    definition = load_flow(str(flow), {"data_dir": str(where / "data")})
    connections = {c.source: c.id for c in definition.connections}
    with standalone_admin(str(flow), str(where / "data"), "acted", "--admin-tokens", tokens) as url:
        yield Node(url, admin, read, connections)


def signed_in(reader, node: Node, token: str):  # noqa: F811 - reader is the fixture's value
    page = reader.page
    page.goto(node.url + "/")
    page.locator("#login").wait_for(state="visible", timeout=SEEN_WITHIN_MS)
    page.fill("#token", token)
    page.click("#login button[type=submit]")
    page.wait_for_function(DRAWN, timeout=SEEN_WITHIN_MS)
    return page


def open_processor(page, processor: str) -> None:
    page.locator(f"#flow-svg .box[data-processor='{processor}']").click()
    page.locator("#actions-panel").wait_for(state="visible", timeout=SEEN_WITHIN_MS)
    page.wait_for_function(
        "(p) => document.querySelector(`#actions-panel[data-processor='${p}'] #actions-shards`) !== null",
        arg=processor,
        timeout=SEEN_WITHIN_MS,
    )


def close_panel(page) -> None:
    page.click("#actions-close")
    page.locator("#actions-panel").wait_for(state="hidden", timeout=SEEN_WITHIN_MS)


def message(page) -> str:
    return page.locator("#actions-message").inner_text()


@pytest.mark.timeout(180)
def test_a_processor_is_stopped_and_started_from_its_panel_a_read_token_is_refused_and_a_refused_token_asks_again(
    node,
    reader,  # noqa: F811
):
    page = signed_in(reader, node, node.admin)
    open_processor(page, "tag")
    page.wait_for_function(PANEL_STATE, arg={"processor": "tag", "state": "RUNNING"}, timeout=SEEN_WITHIN_MS)
    assert "UpdateAttribute" in reader.text("#actions-subtitle")
    page.wait_for_function(
        "() => Number(document.getElementById('actions-figures').dataset.tasks) > 0", timeout=SEEN_WITHIN_MS
    )

    page.click("#actions-shards button[data-action='stop'][data-shard='local']")
    page.wait_for_function(MESSAGE, arg="done", timeout=SEEN_WITHIN_MS)
    assert "Stop done" in message(page)
    page.wait_for_function(PANEL_STATE, arg={"processor": "tag", "state": "STOPPED"}, timeout=SEEN_WITHIN_MS)
    page.wait_for_function(GRAPH_STATE, arg={"processor": "tag", "state": "STOPPED"}, timeout=SEEN_WITHIN_MS)
    assert node.processor("tag")["state"] == "STOPPED"
    # Stopped, tag takes nothing more: what text makes piles up in front of it.
    before = node.queued("text")
    wait_until(lambda: node.queued("text") >= before + 3, 20, "text's FlowFiles queued in front of the stopped tag")
    reader.screenshots("processor-panel")

    # A read token reads on, but its click is refused, and the panel says why in words.
    page.evaluate("(token) => sessionStorage.setItem('custody.admin.token', token)", node.read)
    page.click("#actions-shards button[data-action='start'][data-shard='local']")
    page.wait_for_function(MESSAGE, arg="refused", timeout=SEEN_WITHIN_MS)
    assert READ_ONLY in message(page).lower()
    assert node.processor("tag")["state"] == "STOPPED"
    assert page.locator("#login").is_hidden()
    page.wait_for_function(LIVE, timeout=SEEN_WITHIN_MS)  # the polling goes on with the read token
    reader.screenshots("read-token-refused")

    # A token the node does not know, mid-session, on a click (and on the next poll): the
    # page asks again and keeps what it shows.
    queue_rows = page.locator("#queues-body tr[data-queue]").count()
    assert queue_rows == 3
    page.evaluate("() => sessionStorage.setItem('custody.admin.token', 'cst_not-a-token-of-this-node')")
    page.click("#actions-shards button[data-action='start'][data-shard='local']")
    page.wait_for_function(
        "() => document.getElementById('actions-message').textContent.includes('refused the token')",
        timeout=SEEN_WITHIN_MS,
    )
    assert page.locator("#actions-message").get_attribute("data-outcome") == "refused"
    page.locator("#login").wait_for(state="visible", timeout=SEEN_WITHIN_MS)
    assert "refused the token" in reader.text("#refusal")
    assert page.locator("#queues-body tr[data-queue]").count() == queue_rows
    assert page.locator("#flow-svg .box[data-processor]").count() == 4
    for section in ("#flow", "#this-node"):
        assert page.locator(section).is_visible()
        assert "stale" in page.locator(section).get_attribute("class")
    assert page.locator("#actions-panel").is_visible()
    page.locator("#actions-stale").wait_for(state="visible", timeout=SEEN_WITHIN_MS)
    reader.screenshots("token-refused-mid-session")

    # A new token: the polling resumes, and the refused action is repeated from the same panel.
    page.fill("#token", node.admin)
    page.click("#login button[type=submit]")
    page.wait_for_function(LIVE, timeout=SEEN_WITHIN_MS)
    assert "stale" not in page.locator("#this-node").get_attribute("class")
    page.click("#actions-shards button[data-action='start'][data-shard='local']")
    page.wait_for_function(MESSAGE, arg="done", timeout=SEEN_WITHIN_MS)
    page.wait_for_function(PANEL_STATE, arg={"processor": "tag", "state": "RUNNING"}, timeout=SEEN_WITHIN_MS)
    page.wait_for_function(GRAPH_STATE, arg={"processor": "tag", "state": "RUNNING"}, timeout=SEEN_WITHIN_MS)
    assert node.processor("tag")["state"] == "RUNNING"
    page.locator("#actions-stale").wait_for(state="hidden", timeout=SEEN_WITHIN_MS)
    assert not reader.errors, reader.errors


@pytest.mark.timeout(180)
def test_run_once_runs_a_stopped_processor_one_task_and_is_refused_while_it_runs(node, reader):  # noqa: F811
    node.control("tag", "stop")
    page = signed_in(reader, node, node.admin)
    open_processor(page, "tag")
    page.wait_for_function(PANEL_STATE, arg={"processor": "tag", "state": "STOPPED"}, timeout=SEEN_WITHIN_MS)
    wait_until(lambda: node.queued("text") > 0, 20, "a FlowFile in front of the stopped tag")
    tasks = node.processor("tag")["since_start"]["tasks"]
    page.click("#actions-shards button[data-action='run-once'][data-shard='local']")
    page.wait_for_function(MESSAGE, arg="done", timeout=SEEN_WITHIN_MS)
    assert "Run once done" in message(page)
    wait_until(lambda: node.processor("tag")["since_start"]["tasks"] == tasks + 1, 20, "tag's one task counted")
    assert node.processor("tag")["state"] == "STOPPED"
    page.wait_for_function(
        "(tasks) => Number(document.getElementById('actions-figures').dataset.tasks) === tasks",
        arg=tasks + 1,
        timeout=SEEN_WITHIN_MS,
    )
    # Running, it is refused (409), and the panel shows the node's reason.
    node.control("tag", "start")
    page.wait_for_function(PANEL_STATE, arg={"processor": "tag", "state": "RUNNING"}, timeout=SEEN_WITHIN_MS)
    page.click("#actions-shards button[data-action='run-once'][data-shard='local']")
    page.wait_for_function(MESSAGE, arg="failed", timeout=SEEN_WITHIN_MS)
    assert "Run once on local refused" in message(page)
    assert not reader.errors, reader.errors


@pytest.mark.timeout(180)
def test_a_queue_is_listed_its_flowfiles_opened_and_it_is_dropped_after_a_confirm_step(node, reader):  # noqa: F811
    node.control("tag", "stop")
    wait_until(lambda: node.queued("text") >= 3 and node.queued("noise") >= 1, 20, "FlowFiles in front of tag")
    page = signed_in(reader, node, node.admin)
    text_queue = node.connections["text"]

    # The connection's label opens its queue, a page of FlowFiles at most.
    page.locator(f"#flow-svg .label[data-label='{text_queue}']").click()
    page.wait_for_function(
        "(queue) => { const p = document.getElementById('actions-panel'); return !p.hidden && p.dataset.queue === queue"
        " && document.querySelectorAll('#actions-flowfiles tr[data-uuid]').length > 0; }",
        arg=text_queue,
        timeout=SEEN_WITHIN_MS,
    )
    listed = page.locator("#actions-flowfiles tr[data-uuid]").count()
    assert 3 <= listed <= 20
    first = page.locator("#actions-flowfiles tr[data-uuid]").first.get_attribute("data-uuid")
    page.locator(f"#actions-flowfiles tr[data-uuid='{first}'] button").click()
    page.locator("#actions-content").wait_for(state="visible", timeout=SEEN_WITHIN_MS)
    sequence = page.locator("#actions-attributes tr[data-attribute='seq'] td").nth(1).inner_text()
    assert page.locator("#actions-flowfile").get_attribute("data-uuid") == first
    assert page.locator("#actions-attributes tr[data-attribute='filename']").count() == 1
    assert page.locator("#actions-content").get_attribute("data-shown-as") == "text"
    assert page.locator("#actions-content").inner_text() == f"payload {sequence} for the page"
    assert f"all {len(f'payload {sequence} for the page')} bytes" in reader.text("#actions-content-note")
    reader.screenshots("flowfile-text")
    close_panel(page)

    # noise's FlowFiles are 70 KB of random bytes: a hex dump of the first, and what is not shown said.
    page.locator(f"#queues-body tr[data-queue='{node.connections['noise']}']").click()
    page.locator("#actions-flowfiles tr[data-uuid] button").first.click()
    page.locator("#actions-content").wait_for(state="visible", timeout=SEEN_WITHIN_MS)
    assert page.locator("#actions-content").get_attribute("data-shown-as") == "hex"
    assert page.locator("#actions-flowfile").get_attribute("data-size") == str(70 * 1024)
    assert "the first 512 of its 71,680 bytes as hex" in reader.text("#actions-content-note")
    assert reader.text("#actions-content").startswith("00000000  ")
    reader.screenshots("flowfile-hex")
    close_panel(page)

    # Dropped: text stopped first, so that the queue stays empty once dropped.
    node.control("text", "stop")
    page.locator(f"#queues-body tr[data-queue='{text_queue}']").click()
    page.locator("#actions-flowfiles tr[data-uuid]").first.wait_for(timeout=SEEN_WITHIN_MS)
    queued = node.queued("text")
    assert queued >= 3
    page.click("#actions-panel button[data-action='drop']")
    page.locator("#actions-confirm").wait_for(state="visible", timeout=SEEN_WITHIN_MS)
    assert node.queued("text") == queued  # nothing dropped before the confirmation
    reader.screenshots("drop-confirm")
    page.click("#actions-confirm button[data-action='drop-confirm']")
    page.wait_for_function(MESSAGE, arg="done", timeout=SEEN_WITHIN_MS)
    assert f"Dropped {queued} FlowFiles" in message(page)
    assert node.queued("text") == 0
    page.wait_for_function(
        "() => document.getElementById('actions-panel').dataset.count === '0'", timeout=SEEN_WITHIN_MS
    )
    assert "the queue is empty" in reader.text("#actions-flowfiles")
    node.control("text", "start")
    node.control("tag", "start")
    assert not reader.errors, reader.errors


@pytest.mark.timeout(180)
def test_a_flowfiles_content_is_downloaded_through_a_one_time_ticket(node, reader):  # noqa: F811
    node.control("tag", "stop")
    wait_until(lambda: node.queued("noise") >= 1, 20, "a noise FlowFile in front of tag")
    page = signed_in(reader, node, node.admin)
    page.locator(f"#queues-body tr[data-queue='{node.connections['noise']}']").click()
    page.locator("#actions-flowfiles tr[data-uuid] button").first.click()
    page.locator("#actions-content").wait_for(state="visible", timeout=SEEN_WITHIN_MS)
    uuid = page.locator("#actions-flowfile").get_attribute("data-uuid")
    with page.expect_download(timeout=SEEN_WITHIN_MS) as downloading:
        page.click("#actions-panel button[data-action='download']")
    request = urllib.request.Request(f"{node.url}/api/v1/flowfiles/{uuid}/content?shard={SHARD}")
    request.add_header("Authorization", f"Bearer {node.admin}")
    with urllib.request.urlopen(request, timeout=30) as answer:
        content = answer.read()
    assert len(content) == 70 * 1024
    with open(downloading.value.path(), "rb") as handle:
        assert handle.read() == content
    node.control("tag", "start")
    assert not reader.errors, reader.errors


def focused_key(page) -> str | None:
    return page.evaluate("() => document.activeElement && document.activeElement.getAttribute('data-focus-key')")


@pytest.mark.timeout(180)
def test_the_panels_open_from_the_keyboard_and_escape_gives_the_focus_back(node, reader):  # noqa: F811
    page = signed_in(reader, node, node.read)
    # Tab reaches a processor's box, whatever comes before it on the page.
    for _ in range(200):
        page.keyboard.press("Tab")
        if focused_key(page) == "processor:tag":
            break
    assert focused_key(page) == "processor:tag"
    # The page redraws every few seconds; the focus stays on the box through a redraw.
    drawn = page.evaluate("() => document.querySelector('#flow-svg .box[data-processor=tag]') !== null")
    page.wait_for_function(
        "() => { const box = document.querySelector('#flow-svg .box[data-processor=tag]');"
        " return window.__firstBox === undefined ? (window.__firstBox = box, false) : box !== window.__firstBox; }",
        timeout=SEEN_WITHIN_MS,
        polling=200,
    )
    assert drawn and focused_key(page) == "processor:tag"
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => { const p = document.getElementById('actions-panel');"
        " return !p.hidden && p.dataset.processor === 'tag'; }",
        timeout=SEEN_WITHIN_MS,
    )
    assert page.evaluate("() => document.activeElement.id") == "actions-close"
    page.keyboard.press("Escape")
    page.locator("#actions-panel").wait_for(state="hidden", timeout=SEEN_WITHIN_MS)
    assert focused_key(page) == "processor:tag"
    reader.screenshots("box-focused")

    # A connection's label and a queue's row open the queue with Space and Enter.
    text_queue = node.connections["text"]
    page.locator(f"#flow-svg .label[data-label='{text_queue}']").focus()
    page.keyboard.press(" ")
    page.wait_for_function(
        "(q) => { const p = document.getElementById('actions-panel'); return !p.hidden && p.dataset.queue === q; }",
        arg=text_queue,
        timeout=SEEN_WITHIN_MS,
    )
    page.keyboard.press("Escape")
    page.locator("#actions-panel").wait_for(state="hidden", timeout=SEEN_WITHIN_MS)
    assert focused_key(page) == f"queue:{text_queue}"
    row = page.locator(f"#queues-body tr[data-queue='{text_queue}']").first
    row.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        "(q) => { const p = document.getElementById('actions-panel'); return !p.hidden && p.dataset.queue === q; }",
        arg=text_queue,
        timeout=SEEN_WITHIN_MS,
    )
    reader.screenshots("panel-from-keyboard")
    page.keyboard.press("Escape")
    page.locator("#actions-panel").wait_for(state="hidden", timeout=SEEN_WITHIN_MS)
    assert (focused_key(page) or "").endswith(f"/{text_queue}")
