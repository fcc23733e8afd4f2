"""Swap files under a real standalone node: a damaged one never stops its queue (moved
into quarantine, in alarm in the admin API and /metrics, retried with backoff, logged
a few times, delivered exactly once after its repair); a data directory moved, or
copied and started beside its original, delivers everything and leaves the original
whole; the data directory the previous release left (tests/data/swap-v1) restores; and
`custody run` refuses a directory it cannot recover with one line, never a traceback.

Delivery is counted from provenance: the sink auto-terminates, a DROP event per
FlowFile, so a FlowFile delivered twice shows as two events."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

from cluster.admin.serve import serve
from cluster.admin.settings import AdminSettings
from cluster.core.run_states import RUNNING
from cluster.node.standalone import NodeSettings, StandaloneNode
from cluster.services.process import wait_until
from flow.loading import load_flow, parse_flow
from repositories.provenance import EventType
from tests.prometheus_text import families

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "swap-v1"
QUEUE = "generate/success/deliver"
TOTAL, BATCH = 1000, 200  # 200 in memory, 800 in four swap files of 200
FLOW = {
    "name": "swapping",
    "processors": [
        {
            "id": "generate",
            "type": "GenerateFlowFile",
            "properties": {
                "batch_size": 100,
                "max_count": TOTAL,
                "sequence_attribute": "seq",
                "custom_text": "FlowFile ${seq}\n",
            },
        },
        {"id": "deliver", "type": "UpdateAttribute", "properties": {"delivered": "yes"}, "auto_terminate": ["success"]},
    ],
    "connections": [
        {
            "source": "generate",
            "relationships": ["success"],
            "destination": "deliver",
            "swap_threshold": BATCH,
            "swap_batch": BATCH,
        }
    ],
}
# Unreadable swap files retried every second (5 s doubling to 5 min by default);
# provenance rolled over twice a second, so that DROP events are read soon after.
FAST_RETRY = NodeSettings(threads=2, swap_retry_first_s=1.0, swap_retry_max_s=1.0, provenance_rollover_s=0.5)


def node_on(data_dir, settings=FAST_RETRY, flow=None) -> StandaloneNode:
    return StandaloneNode(flow or parse_flow(FLOW), str(data_dir), settings)


def swapped_data_dir(data_dir) -> list[Path]:
    """A stopped node's data directory: TOTAL FlowFiles queued for `deliver`, 800 of them in
    four swap files; returns those files, oldest first."""
    node = node_on(data_dir)
    node.start(paused=True)
    node.control().stop_processor("local", "deliver")
    node.resume()
    queue = node.graph.queues[QUEUE]
    wait_until(
        lambda: (s := queue.summary()).count == TOTAL and (s.active, s.staging, s.swap_files) == (BATCH, 0, 4),
        30,
        "every FlowFile queued, 800 of them in four swap files",
    )
    node.stop()
    # The operator's stop is kept across restarts; the nodes these tests start from this
    # directory find `deliver` running again, as `start_processor` would have recorded it.
    node.run_states().record("local", "deliver", RUNNING, by="the operator, before the next start")
    swap = Path(data_dir) / "shards" / "local" / "swap"
    return sorted(swap.iterdir(), key=lambda path: int(path.name.split(".")[1]))


def delivered(node) -> list[str]:
    """The `seq` of every FlowFile `deliver` dropped, one per DROP event."""
    events = node.provenance.events(0, node.provenance.next_event_id)
    return [
        e.attributes_before["seq"] for e in events if e.event_type is EventType.DROP and e.component_id == "deliver"
    ]


def wait_delivered(node, count: int, timeout: float = 30) -> None:
    wait_until(lambda: len(delivered(node)) >= count, timeout, f"{count} FlowFiles delivered")


def every_seq_once(node) -> None:
    seqs = delivered(node)
    assert sorted(seqs, key=int) == [str(n) for n in range(TOTAL)], "every FlowFile delivered exactly once"


def get(url: str, path: str):
    request = urllib.request.Request(
        url + path, method="POST" if path.endswith("/retry") else "GET", data=b"" if path.endswith("/retry") else None
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        body = response.read().decode()
    return body if path == "/metrics" else json.loads(body)


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_damaged_swap_files_are_quarantined_in_alarm_and_delivered_once_repaired(tmp_path):
    data = tmp_path / "node"
    flipped, _, truncated, _ = swapped_data_dir(data)
    originals = {flipped.name: flipped.read_bytes(), truncated.name: truncated.read_bytes()}
    damaged = bytearray(originals[flipped.name])
    damaged[-100] ^= 0x04  # a bit in the records part: its summary still reads
    flipped.write_bytes(bytes(damaged))
    truncated.write_bytes(originals[truncated.name][:30])  # cut inside the summary: its claims unknown

    lines = Lines()
    logging.getLogger("flow.shard").addHandler(lines)
    # The backoff (tested with a driven clock in tests/unit/flow/test_shard_unreadable_swap.py)
    # outlasts the test: what it sees does not depend on the machine's speed.
    node = node_on(data, dataclasses.replace(FAST_RETRY, swap_retry_first_s=120, swap_retry_max_s=120))
    server = None
    try:
        node.start()
        server = serve(AdminSettings(bind="127.0.0.1", port=0), node.control())
        quarantine = data / "shards" / "local" / "swap-quarantine"
        assert node.recovery["unreadable_swap_files"] == 1 and node.recovery["swap_files_without_claims"] == 1
        wait_delivered(node, TOTAL - 2 * BATCH)  # the other two files come back; nothing waits on the bad ones
        queue = node.graph.queues[QUEUE]
        wait_until(lambda: len(node.shard.unreadable_swap_files()) == 2, 10, "both damaged files in alarm")
        assert sorted(p.name for p in quarantine.glob("*.swap")) == sorted(originals)
        assert not flipped.exists() and not truncated.exists()
        assert queue.count == 2 * BATCH and queue.summary().unreadable_count == 2 * BATCH

        alarms = get(server.url, "/api/v1/node/alarms")
        assert sorted((a["location"], a["reason"], a["quarantined"], a["flowfiles"]) for a in alarms) == sorted(
            (str(quarantine / name), "corrupt", True, BATCH) for name in originals
        )
        assert all("good copy of the same name" in a["message"] for a in alarms)
        metrics = families(get(server.url, "/metrics"))
        assert [s.value for s in metrics["custody_swap_files_unreadable"].samples] == [2]
        assert [s.value for s in metrics["custody_swap_flowfiles_unreadable"].samples] == [2 * BATCH]

        # The operator puts good copies in place and asks for a retry: delivered, each once.
        for name, data_bytes in originals.items():
            (quarantine / name).write_bytes(data_bytes)
        assert get(server.url, "/api/v1/node/alarms/retry")["retried"] == 2
        wait_delivered(node, TOTAL)
        wait_until(lambda: node.control().alarms() == [], 10, "the alarms cleared")
        every_seq_once(node)
        assert queue.count == 0 and list(quarantine.glob("*.swap")) == []
        assert get(server.url, "/api/v1/node/alarms") == []
        wait_until(
            lambda: not families(get(server.url, "/metrics"))["custody_swap_files_unreadable"].samples,
            10,
            "the metric back to no unreadable swap file",
        )  # a scrape is cached for a second
    finally:
        logging.getLogger("flow.shard").removeHandler(lines)
        if server is not None:
            server.stop()
        node.stop()
    # A warning per file when it is found (each is retried only after its backoff), where
    # the queue used to log 85 a second.
    assert len(lines.lines) == 2 and all("moved into quarantine" in line for line in lines.lines), lines.lines


def test_a_moved_data_directory_starts_and_delivers_everything(tmp_path):
    swapped_data_dir(tmp_path / "before")
    shutil.move(tmp_path / "before", tmp_path / "after")
    node = node_on(tmp_path / "after")
    try:
        node.start()
        assert (node.recovery["swap_files"], node.recovery["unreadable_swap_files"]) == (4, 0)
        wait_delivered(node, TOTAL)
        every_seq_once(node)
    finally:
        node.stop()


def test_a_copy_started_beside_its_original_leaves_the_original_whole_and_both_start(tmp_path):
    files = swapped_data_dir(tmp_path / "original")
    before = {path.name: path.read_bytes() for path in files}
    shutil.copytree(tmp_path / "original", tmp_path / "copy")
    for name in ("copy", "original"):
        node = node_on(tmp_path / name)
        try:
            node.start()
            assert (node.recovery["swap_files"], node.recovery["orphaned_swap_files"]) == (4, 0)
            wait_delivered(node, TOTAL)
            every_seq_once(node)
        finally:
            node.stop()
        if name == "copy":
            assert {path.name: path.read_bytes() for path in files} == before, "the original's swap files"


def test_the_previous_releases_data_directory_restores_every_flowfile(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "swap-v1")
    data = tmp_path / "swap-v1" / "data"
    node = node_on(data, flow=load_flow(str(tmp_path / "swap-v1" / "flow.yaml"), {"data_dir": str(data)}))
    try:
        node.start(paused=True)
        recovery = node.recovery
        assert (recovery["flowfiles"], recovery["swap_files"], recovery["swapped_flowfiles"]) == (10, 4, 20)
        assert (recovery["orphaned_swap_files"], recovery["unreadable_swap_files"]) == (0, 0)
        assert all(
            location.startswith(str(data / "shards" / "local" / "swap") + "/") for location in node.shard.wal.swap_files
        ), "recorded where the files are now"
        # Every FlowFile with its content, from memory and from the swap files.
        queue = node.graph.queues[QUEUE]
        found = [item[2] for item in queue.snapshot().entries]
        for summary in queue.swap_summaries():
            found += [record for record in node.shard.swap_store.read(summary.location)[1]]
        contents = {f.attributes["seq"]: node.content.read(f.content_claim) for f in found}
        assert contents == {str(n): f"swap-v1 FlowFile {n}\n".encode() for n in range(30)}
        node.resume()
        wait_delivered(node, 30)
        assert sorted(delivered(node), key=int) == [str(n) for n in range(30)]
    finally:
        node.stop()


def run_custody(flow: Path, data: Path):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.cli",
            "run",
            "--flow",
            str(flow),
            "--data-dir",
            str(data),
            "--status-interval",
            "0",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_custody_run_refuses_a_directory_it_cannot_recover_with_one_line(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "wal")
    (tmp_path / "wal" / "data" / "shards" / "local" / "wal" / "snapshot").write_bytes(b"garbage")
    shutil.copytree(SAMPLE, tmp_path / "queues")
    renamed = (tmp_path / "queues" / "flow.yaml").read_text().replace("destination: deliver", "destination: other")
    (tmp_path / "queues" / "flow.yaml").write_text(renamed.replace("  - id: deliver", "  - id: other"))
    for case, damaged in (("content", "content"), ("provenance", "provenance/events")):
        shutil.copytree(SAMPLE, tmp_path / case)
        shutil.rmtree(tmp_path / case / "data" / damaged)
        (tmp_path / case / "data" / damaged).write_text("a file where a directory belongs")
    for case, says in (
        ("wal", "cannot recover the FlowFile WAL"),
        ("queues", "connections the flow does not define"),
        ("content", "data/content"),
        ("provenance", "data/provenance/events"),
    ):
        result = run_custody(tmp_path / case / "flow.yaml", tmp_path / case / "data")
        refusals = [line for line in result.stderr.splitlines() if line.startswith("custody run:")]
        assert result.returncode == 1 and len(refusals) == 1 and says in refusals[0], result.stderr[-2000:]
        assert "Traceback" not in result.stderr
        assert not any(advice in refusals[0].lower() for advice in ("remove the", "delete the", "knowingly"))


def test_the_status_page_shows_a_quarantined_swap_file(tmp_path, chromium):
    # Last in the module: the browser's fixture lives until the module ends.
    data = tmp_path / "node"
    bad, *_ = swapped_data_dir(data)
    bad.write_bytes(bad.read_bytes()[:30])
    node = node_on(data, NodeSettings(threads=2, swap_retry_first_s=60, swap_retry_max_s=60))
    node.start()
    server = serve(AdminSettings(bind="127.0.0.1", port=0), node.control())
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto(server.url + "/")
        quarantined = str(data / "shards" / "local" / "swap-quarantine" / bad.name)
        page.wait_for_function(
            "(location) => [...document.querySelectorAll('#alarms-body tr[data-location]')]"
            ".some((tr) => tr.dataset.location === location)",
            arg=quarantined,
            timeout=30_000,
        )
        assert page.locator("#alarms").is_visible()
        shown = page.locator("#alarms-body").inner_text()
        assert "quarantined" in shown and "corrupt" in shown and "good copy of the same name" in shown
    finally:
        context.close()
        server.stop()
        node.stop()
