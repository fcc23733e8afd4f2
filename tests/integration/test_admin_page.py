"""The status page at `/`, read as a person reads it: Debian's headless Chromium
(Playwright) opens one node's page while real `custody node` processes run on the
real ZooKeeper ensemble and HDFS, and every check waits on the page's DOM, with a
deadline, for what a reader would wait to see.

Screenshots (1366x768 and 1920x1080) go to $CUSTODY_ARTIFACTS, by default
.work/artifacts/, under admin-page/.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.admin.client import call
from cluster.admin.tokens import add_token
from cluster.drills.harness import PROJECT_ROOT
from cluster.services.process import wait_until
from tests.integration.test_standalone_cli import read_line_containing

ARTIFACTS = Path(os.environ.get("CUSTODY_ARTIFACTS") or os.path.join(PROJECT_ROOT, ".work", "artifacts")) / "admin-page"
SCREENS = ((1366, 768), (1920, 1080))
SEEN_WITHIN_MS = 30_000  # the page polls every 2 s: what the API has, it shows soon after
FAILOVER_WITHIN_MS = 90_000

MEMBERS = "[...document.querySelectorAll('#members-body tr[data-incarnation]')].map((tr) => tr.dataset.incarnation)"
SHOWS_MEMBERS = (
    f"(wanted) => {{ const shown = {MEMBERS}; "
    "return shown.length === wanted.length && wanted.every((i) => shown.includes(i)); }"
)
SHOWS_LEADER = "(leader) => document.getElementById('leader').dataset.leader === leader"
# The dead incarnation is no member any more, each of its shards has another owner,
# and the failover timeline has its row, taken over and finished.
SHOWS_FAILOVER = f"""({{victim, shards}}) => {{
  if ({MEMBERS}.includes(victim)) return false;
  const owners = new Map([...document.querySelectorAll('#shards-body tr[data-shard]')]
                         .map((tr) => [tr.dataset.shard, tr.dataset.owner]));
  if (!shards.every((shard) => owners.has(shard) && owners.get(shard) && owners.get(shard) !== victim)) return false;
  const row = [...document.querySelectorAll('#failovers-body tr[data-dead]')].find((tr) => tr.dataset.dead === victim);
  return row !== undefined && row.dataset.takenOver === 'true' && row.dataset.finished === 'true';
}}"""
# The victim's failover bar, once its shards delivered again: three phases, each with its
# seconds and a width on the page.
FAILOVER_PHASES = """(victim) => {
  const row = [...document.querySelectorAll('#failovers-body tr[data-dead]')].find((tr) => tr.dataset.dead === victim);
  if (!row || row.dataset.resumed !== 'true') return null;
  return [...row.querySelectorAll('.phases span[data-phase]')].map((span) => ({
    phase: span.dataset.phase, state: span.dataset.state, seconds: Number(span.dataset.seconds),
    width: span.getBoundingClientRect().width, left: span.getBoundingClientRect().left}));
}"""
FLOW_BOXES = """() => Object.fromEntries([...document.querySelectorAll('#flow-svg .box[data-processor]')]
  .filter((box) => box.dataset.in !== '').map((box) => [box.dataset.processor, Number(box.dataset.in)]))"""
# The flow's figures summed over the cluster, and every survivor named as having answered.
SHOWS_CLUSTER_FLOW = """(nodes) => {
  if (document.getElementById('flow').dataset.scope !== 'cluster') return false;
  const answered = [...document.querySelectorAll('#flow-members [data-answered="true"]')]
    .map((span) => span.dataset.member);
  return nodes.every((node) => answered.includes(node));
}"""


class PageReader:
    """One browser tab on a node's page, collecting the script's errors."""

    def __init__(self, browser, name: str):
        self.name = name
        self.context = browser.new_context(viewport={"width": SCREENS[0][0], "height": SCREENS[0][1]})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))
        self.page.on("console", self._console)

    def _console(self, message) -> None:
        # Chromium logs every answer >= 400 to the console; the page shows those itself.
        if message.type == "error" and not message.text.startswith("Failed to load resource: the server responded"):
            self.errors.append(message.text)

    def screenshots(self, moment: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for width, height in SCREENS:
            self.page.set_viewport_size({"width": width, "height": height})
            self.page.screenshot(path=str(ARTIFACTS / f"{self.name}-{moment}-{width}x{height}.png"))
        self.page.set_viewport_size({"width": SCREENS[0][0], "height": SCREENS[0][1]})

    def text(self, selector: str) -> str:
        return self.page.locator(selector).inner_text()

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def reader(request, chromium):
    made = PageReader(chromium, request.node.name.removeprefix("test_")[:40])
    yield made
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        made.screenshots("at-failure")
    made.close()


@pytest.mark.zookeeper
@pytest.mark.hdfs
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_page_shows_the_cluster_and_follows_a_killed_nodes_failover(flow_cluster, reader, tmp_path):
    cluster = flow_cluster
    tokens = str(tmp_path / "tokens")
    read_token = add_token(tokens, "read", "page-reader")
    nodes = cluster.start_joined(("n1", "n2", "n3"), timeout=90, count=2000, sections={"admin": {"tokens": tokens}})
    viewed = nodes[0]
    incarnations = [node.incarnation for node in nodes]
    url = wait_until(lambda: cluster.heartbeats()[viewed.incarnation].admin, 30, "n1's admin address in its heartbeat")

    page = reader.page
    page.goto(url + "/")
    # The node takes tokens: the page asks for one, and says so when it is refused.
    page.locator("#login").wait_for(state="visible", timeout=SEEN_WITHIN_MS)
    page.fill("#token", "cst_not-a-token-of-this-node")
    page.click("#login button[type=submit]")
    page.locator("#refusal").wait_for(state="visible", timeout=SEEN_WITHIN_MS)
    assert "refused the token" in reader.text("#refusal")
    reader.screenshots("token-refused")
    page.fill("#token", read_token)
    page.click("#login button[type=submit]")

    page.wait_for_function(SHOWS_MEMBERS, arg=incarnations, timeout=SEEN_WITHIN_MS)
    leader = wait_until(lambda: cluster.store.status().leader, 30, "a leader")
    page.wait_for_function(SHOWS_LEADER, arg=leader, timeout=SEEN_WITHIN_MS)
    assert reader.text("#node-name") == "n1" and "RUNNING" in reader.text("#node-state")
    assert page.locator(f"#members-body tr[data-incarnation='{viewed.incarnation}'] .badge.self").count() == 1
    assert page.locator("#queues-body tr[data-queue]").count() > 0
    assert "live" in reader.text("#freshness")
    reader.screenshots("three-nodes")

    # Kill another node, the leader when it is not the viewed one (the page then has
    # a new leader to show, too).
    victim_node = next((n for n in nodes if n.incarnation == leader and n is not viewed), nodes[1])
    victim = victim_node.incarnation
    moved = [shard.shard for shard in cluster.shards() if shard.owner == victim]
    assert moved, "the victim owns its home shard"
    heard_before_the_kill = cluster.heartbeats()[victim].sent_at
    victim_node.signal(signal.SIGKILL)
    page.wait_for_function(SHOWS_FAILOVER, arg={"victim": victim, "shards": moved}, timeout=FAILOVER_WITHIN_MS)
    survivors = [i for i in incarnations if i != victim]
    page.wait_for_function(SHOWS_MEMBERS, arg=survivors, timeout=SEEN_WITHIN_MS)
    new_leader = wait_until(lambda: cluster.store.status().leader, 30, "a leader after the failover")
    page.wait_for_function(SHOWS_LEADER, arg=new_leader, timeout=SEEN_WITHIN_MS)
    for shard in moved:
        assert page.locator(f"#shards-body tr[data-shard='{shard}']").get_attribute("data-owner") in survivors

    # The failover's bar: detection | takeover | resume, one after the other, each with
    # its seconds, once the moved shards delivered again at their new owners.
    phases = page.wait_for_function(FAILOVER_PHASES, arg=victim, timeout=FAILOVER_WITHIN_MS).json_value()
    assert [p["phase"] for p in phases] == ["detection", "takeover", "resume"], phases
    assert all(p["state"] == "done" and p["seconds"] > 0 and p["width"] > 0 for p in phases), phases
    assert phases[0]["left"] < phases[1]["left"] < phases[2]["left"], phases
    status, view = call(url + "/api/v1/cluster", token=read_token)
    [failover] = [f for f in view["failovers"] if f["dead"] == victim]
    # The leader (or, when the victim led, its successor while it contended) reads the
    # victim's heartbeat every second: what it last heard is about as new as what this
    # test read before the kill (a beat a second, read a second apart, on a loaded machine).
    assert heard_before_the_kill - 3.0 <= failover["last_seen_at"] < failover["detected_at"], failover
    assert phases[0]["seconds"] == pytest.approx(failover["detection_s"], abs=0.01)

    # Each shard's flow version, said once: every live shard runs the one deployed.
    versions = {shard.shard: shard.flow for shard in cluster.shards() if shard.state.value != "retired"}
    assert len(set(versions.values())) == 1 and None not in versions.values(), versions
    for shard, version in versions.items():
        row = page.locator(f"#shards-body tr[data-shard='{shard}']")
        assert row.get_attribute("data-flow-version") == version and version in row.inner_text()
    assert reader.text("#shards-flow") == f"every live shard runs flow version {next(iter(versions.values()))}"

    # The flow's figures for the whole cluster: more than this node's alone (read from
    # its API after the page read the cluster's, so time works against the claim).
    page.wait_for_function(f"() => Object.keys(({FLOW_BOXES})()).length > 0", timeout=SEEN_WITHIN_MS)
    assert page.locator("#flow-scope").is_visible() and page.locator("#flow").get_attribute("data-scope") == "node"
    page.click("#flow-scope button[data-scope='cluster']")
    survivor_nodes = [node.name for node in nodes if node.incarnation != victim]
    page.wait_for_function(SHOWS_CLUSTER_FLOW, arg=survivor_nodes, timeout=SEEN_WITHIN_MS)
    whole = page.evaluate(FLOW_BOXES)
    status, answer = call(url + "/api/v1/node/processors", token=read_token)
    assert status == 200, answer
    alone: dict[str, int] = {}
    for processors in answer.values():
        for processor in processors:
            alone[processor["processor"]] = alone.get(processor["processor"], 0) + processor["five_minutes"]["in_count"]
    busiest = max(whole, key=lambda name: whole[name])
    assert whole[busiest] > alone.get(busiest, 0) > 0, (busiest, whole, alone)
    assert "the cluster's" in reader.text("#flow-note")
    assert "live" in reader.text("#freshness")
    page.locator("#failovers").scroll_into_view_if_needed()
    reader.screenshots("after-failover")
    page.locator("#flow").scroll_into_view_if_needed()
    reader.screenshots("cluster-flow")
    page.click("#flow-scope button[data-scope='node']")
    page.wait_for_function("() => document.getElementById('flow').dataset.scope === 'node'", timeout=SEEN_WITHIN_MS)
    assert not reader.errors, reader.errors


@contextlib.contextmanager
def standalone_admin(flow: str, data_dir: str, name: str, *options: str):
    """A standalone `custody run` of `flow` serving its admin API on a free port, with more
    `options` of custody run (e.g. --admin-tokens FILE): its URL; the node stopped
    (SIGTERM) at the end."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cluster.cli",
            "run",
            "--flow",
            flow,
            "--data-dir",
            data_dir,
            "--status-interval",
            "0",
            "--name",
            name,
            "--admin",
            "127.0.0.1:0",
            *options,
        ],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        yield read_line_containing(process, "admin API on", 60).split()[-1]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)


@pytest.mark.timeout(120)
def test_a_standalone_nodes_page_shows_its_status_and_that_it_is_in_no_cluster(reader, tmp_path):
    hello = os.path.join(PROJECT_ROOT, "examples", "hello.yaml")
    with standalone_admin(hello, str(tmp_path / "data"), "solo") as url:
        page = reader.page
        page.goto(url + "/")
        page.wait_for_function(
            "() => document.getElementById('problem').textContent.includes('in no cluster')", timeout=SEEN_WITHIN_MS
        )
        page.wait_for_function(
            "() => document.querySelectorAll('#queues-body tr[data-queue]').length > 0", timeout=SEEN_WITHIN_MS
        )
        assert reader.text("#node-name") == "solo" and "RUNNING" in reader.text("#node-state")
        assert "standalone" in reader.text("#cluster-name")
        for section in ("#members", "#shards", "#failovers"):
            assert page.locator(section).is_hidden()
        reader.screenshots("standalone")
        assert not reader.errors, reader.errors
