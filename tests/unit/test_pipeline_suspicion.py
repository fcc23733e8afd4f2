"""Once a write pipeline hung for its full deadline, hsyncs have a short deadline for a
while (`replication.pipeline_suspicion`): the decision, and an HDFS file's hsync under
it with a writer that never answers (the real thing: a frozen DataNode of the harness's
HDFS, tests/integration/test_hdfs_pipeline_suspicion.py, and the compose drill's
DataNode rounds, docs/operate/failures.md)."""

from __future__ import annotations

import io
import threading
import time

import pytest

from replication.deadline import DeadlineRunner, NoWorkerFree
from replication.hdfs_storage import HdfsWritableFile
from replication.pipeline_suspicion import (
    HEDGE_TYPICAL_FACTOR,
    RECENT_HSYNCS,
    SUSPECT_FOR_S,
    SUSPECT_HSYNC_S,
    SUSPECT_TYPICAL_FACTOR,
    PipelineSuspicion,
    hedge_delay,
    hsync_deadline,
    typical_hsync,
)
from repositories.instruments import ByLabel, LatencyHistogram
from repositories.storage import StorageUnavailable

IO_TIMEOUT = 1.5


def test_an_hsync_has_the_full_deadline_unless_pipelines_are_suspected():
    assert hsync_deadline(IO_TIMEOUT, float("-inf"), 100.0) == IO_TIMEOUT
    assert hsync_deadline(IO_TIMEOUT, 108.0, 100.0) == SUSPECT_HSYNC_S
    assert hsync_deadline(IO_TIMEOUT, 108.0, 108.0) == IO_TIMEOUT  # the window has closed
    assert hsync_deadline(0.1, 108.0, 100.0) == 0.1  # never longer than the storage's own
    assert hsync_deadline(None, 108.0, 100.0) is None  # a storage without deadlines


def test_a_hang_suspects_every_pipeline_for_a_while():
    now = [100.0]
    suspicion = PipelineSuspicion(clock=lambda: now[0])
    assert not suspicion.suspected and suspicion.hsync_deadline(IO_TIMEOUT) == IO_TIMEOUT
    suspicion.hung()
    now[0] += SUSPECT_FOR_S - 0.1
    assert suspicion.suspected and suspicion.hsync_deadline(IO_TIMEOUT) == SUSPECT_HSYNC_S
    now[0] += 0.2
    assert not suspicion.suspected


def test_the_typical_hsync_is_a_high_quantile_of_the_latest_that_answered():
    assert typical_hsync([]) == 0.0
    assert typical_hsync([0.01]) == 0.01
    recent = [0.01] * 90 + [0.5] * 10  # a few slow ones (a pipeline through a dying DataNode)
    assert typical_hsync(recent) == 0.5
    assert typical_hsync([0.01] * 91 + [0.5] * 9) == 0.01


def test_on_an_hdfs_slow_everywhere_the_short_deadline_and_the_hedges_follow_its_typical_hsync():
    # A healthy HDFS: milliseconds, so the floors hold.
    assert hsync_deadline(IO_TIMEOUT, 108.0, 100.0, typical=0.005) == SUSPECT_HSYNC_S
    assert hedge_delay(0.2, 0.005) == 0.2
    # Slow everywhere: an hsync is given up, or hedged, only when slow for this HDFS.
    assert hsync_deadline(IO_TIMEOUT, 108.0, 100.0, typical=0.2) == pytest.approx(SUSPECT_TYPICAL_FACTOR * 0.2)
    assert hedge_delay(0.2, 0.2) == pytest.approx(HEDGE_TYPICAL_FACTOR * 0.2)
    assert hsync_deadline(IO_TIMEOUT, 108.0, 100.0, typical=1.0) == IO_TIMEOUT  # never past the full deadline
    assert hsync_deadline(IO_TIMEOUT, 100.0, 100.0, typical=1.0) == IO_TIMEOUT  # and not suspected: the full one


def test_the_suspicion_keeps_only_the_latest_hsyncs():
    now = [100.0]
    suspicion = PipelineSuspicion(clock=lambda: now[0])
    for _ in range(RECENT_HSYNCS):
        suspicion.answered(0.6)
    suspicion.hung()
    assert suspicion.hsync_deadline(IO_TIMEOUT) == IO_TIMEOUT  # 3 x 0.6 s, capped at the full deadline
    assert suspicion.hedge_delay(0.2) == pytest.approx(HEDGE_TYPICAL_FACTOR * 0.6)
    for _ in range(RECENT_HSYNCS):
        suspicion.answered(0.01)  # HDFS fast again: the slow ones are forgotten
    assert suspicion.hsync_deadline(IO_TIMEOUT) == SUSPECT_HSYNC_S and suspicion.hedge_delay(0.2) == 0.2


def test_an_hsync_that_answered_is_counted_and_one_given_up_is_not():
    suspicion = PipelineSuspicion()
    file, writer = open_file(suspicion, 5.0)
    writer.released.set()
    file.sync()
    assert suspicion.typical > 0.0
    other = PipelineSuspicion()
    hung, hung_writer = open_file(other, 0.05)
    with pytest.raises(StorageUnavailable):
        hung.sync()
    assert other.typical == 0.0
    hung_writer.released.set()


class Silent:
    """hdfs-native's Rust writer, for a dead pipeline: every call waits until released."""

    def __init__(self):
        self.released = threading.Event()

    def write(self, data):
        self.released.wait(30)

    def hsync(self):
        self.released.wait(30)

    def close(self):
        self.released.wait(30)


class Wrapper(io.RawIOBase):
    """hdfs-native's FileWriter: the Rust writer is `inner`."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner


def open_file(suspicion: PipelineSuspicion, timeout: float, path: str = "/c1/shards/n1-7/wal/journal-0"):
    writer = Silent()
    file = HdfsWritableFile(
        path, Wrapper(writer), 0, DeadlineRunner("test-suspicion"), timeout, ByLabel(LatencyHistogram), None, suspicion
    )
    return file, writer


def test_after_one_hsync_hung_for_its_deadline_the_next_is_given_up_soon():
    suspicion = PipelineSuspicion()
    content, content_writer = open_file(suspicion, 0.5, "/c1/content/n1-7/0/r1")
    journal, journal_writer = open_file(suspicion, 0.5)
    began = time.monotonic()
    with pytest.raises(StorageUnavailable, match="within 0.5 s"):
        content.sync()  # the full deadline: a pipeline through a dead DataNode
    assert suspicion.suspected
    second = time.monotonic()
    with pytest.raises(StorageUnavailable, match=f"within {SUSPECT_HSYNC_S:g} s, another pipeline having hung"):
        journal.sync()
    assert time.monotonic() - second < 0.5 <= second - began  # the second waited the short deadline
    content_writer.released.set()
    journal_writer.released.set()


def test_a_short_hsync_given_up_does_not_extend_the_suspicion():
    now = [100.0]
    suspicion = PipelineSuspicion(clock=lambda: now[0])
    suspicion.hung()
    file, writer = open_file(suspicion, 5.0)
    with pytest.raises(StorageUnavailable, match=f"within {SUSPECT_HSYNC_S:g} s"):
        file.sync()
    now[0] += SUSPECT_FOR_S
    assert not suspicion.suspected  # only a hang of the full deadline opens the window
    writer.released.set()


def test_a_call_refused_for_want_of_a_worker_suspects_no_pipeline_and_says_so():
    """Every worker is held (hsyncs a frozen DataNode keeps): the call never reached
    hdfs-native, so nothing of the pipelines is known; its error says why and carries
    `NoWorkerFree` (a new file's race does not count such a hedge)."""
    suspicion = PipelineSuspicion()
    held = Silent()
    runner = DeadlineRunner("test-refused", max_workers=1)
    runner.start(held.hsync)
    file = HdfsWritableFile(
        "/c1/shards/n1-7/wal/journal-0",
        Wrapper(Silent()),
        0,
        runner,
        IO_TIMEOUT,
        ByLabel(LatencyHistogram),
        None,
        suspicion,
    )
    with pytest.raises(StorageUnavailable, match="workers are still blocked") as refused:
        file.write(b"a")
    assert isinstance(refused.value.__cause__, NoWorkerFree) and not suspicion.suspected
    held.released.set()
