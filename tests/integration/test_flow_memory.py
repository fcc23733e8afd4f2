"""Memory: a queue of 1,000,000 FlowFiles stays under a stated bound, thanks to swapping.

The FlowFiles are created by real sessions, committed to a real WAL on local disk, and
swapped to real swap files (threshold 20,000, batches of 10,000, the defaults). The
bound: the process's peak RSS grows by less than MEMORY_BOUND_MB while the queue goes
from 0 to 1,000,000 FlowFiles, and again while a restart registers them. Holding
them all in memory would take about 540 MB (measured with tracemalloc: ~540 bytes per
queued FlowFile with a three-entry attribute map), so the bound fails loudly if
swapping stops working. Measured on the 2-core CI machine: ~55 MB, and ~15 MB for the
restart.
"""

from __future__ import annotations

import gc

import pytest

from flow.commit import DurableCommitter
from flow.queue import FlowFileQueue
from flow.session import ProcessSession
from flow.shard import open_shard
from repositories.storage import LocalStorage

TOTAL = 1_000_000
PER_COMMIT = 10_000
MEMORY_BOUND_MB = 120


def rss_peak_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


class NoContent:
    def sync(self):
        pass

    def check_durable(self, claims):
        pass


@pytest.mark.slow
def test_a_million_flowfiles_stay_under_the_memory_bound(tmp_path):
    gc.collect()
    queue = FlowFileQueue("big", back_pressure_count=0)
    shard = open_shard(LocalStorage(), str(tmp_path / "shard"), "s", [queue], checkpoint_interval=None)
    shard.recover()
    committer = DurableCommitter(shard, NoContent(), None)
    reset_peak()
    baseline = rss_mb()
    for start in range(0, TOTAL, PER_COMMIT):
        session = ProcessSession(
            component_id="gen",
            component_type="Test",
            committer=committer,
            content=None,
            shard=shard,
            outgoing={"success": [queue]},
            clock_ms=lambda: 1_000,
        )
        for index in range(start, start + PER_COMMIT):
            session.transfer(session.create(attributes={"index": str(index)}), "success")
        session.commit()
    grown = rss_peak_mb() - baseline
    summary = queue.summary()
    assert summary.count == TOTAL
    assert queue.in_memory() <= 20_000
    assert summary.swap_files >= 98 and summary.swapped_count >= TOTAL - 20_000
    assert len(shard.wal.records) <= 20_000 + 1, "the WAL's live map holds only what is in memory"
    print(
        f"1M FlowFiles: peak RSS grew {grown:.0f} MB (bound {MEMORY_BOUND_MB} MB), "
        f"{queue.in_memory()} in memory, {summary.swap_files} swap files"
    )
    assert grown < MEMORY_BOUND_MB
    shard.wal.checkpoint()
    shard.wal.close()
    del queue, shard, committer, session
    gc.collect()

    # A restart registers the swap files without loading them.
    reset_peak()
    baseline = rss_mb()
    queue = FlowFileQueue("big", back_pressure_count=0)
    shard = open_shard(LocalStorage(), str(tmp_path / "shard"), "s", [queue], checkpoint_interval=None)
    report = shard.recover()
    grown = rss_peak_mb() - baseline
    assert queue.count == TOTAL and queue.in_memory() <= 20_000
    assert report.swapped_flowfiles >= TOTAL - 20_000
    print(f"restart: peak RSS grew {grown:.0f} MB; {report.flowfiles} loaded, {report.swapped_flowfiles} registered")
    assert grown < MEMORY_BOUND_MB
    # And the oldest comes back first once the in-memory part drains.
    first = queue.poll(1)[0][0]
    assert first.attributes["index"] == "0"
    shard.wal.close()
