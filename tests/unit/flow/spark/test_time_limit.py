"""A batch past its job_timeout has its Spark job group cancelled, and cancelled again
until the batch returns: Spark cancels only the jobs active at that moment, so a job
the batch submits after its time ran out must be cancelled too."""

from __future__ import annotations

import threading
import time

from flow.processors import spark as spark_processors
from flow.processors.spark import time_limit


class _Context:
    """Records what a SparkContext was asked to do."""

    def __init__(self):
        self.cancelled: list[str] = []
        self.properties: dict[str, object] = {}

    def setJobGroup(self, group, description, interruptOnCancel=False):
        self.properties["spark.jobGroup.id"] = group

    def setLocalProperty(self, key, value):
        self.properties[key] = value

    def cancelJobGroup(self, group):
        self.cancelled.append(group)


class _Session:
    def __init__(self):
        self.sparkContext = _Context()


def _wait(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True


def _cancellers() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("spark-time-limit-")]


def test_a_batch_within_its_time_is_never_cancelled():
    session = _Session()
    with time_limit(session, "batch-a", 60.0):
        assert session.sparkContext.properties["spark.jobGroup.id"] == "batch-a"
    assert _wait(lambda: not _cancellers())
    assert session.sparkContext.cancelled == []
    assert session.sparkContext.properties["spark.jobGroup.id"] is None


def test_a_late_batch_is_cancelled_again_and_again_until_it_returns(monkeypatch):
    monkeypatch.setattr(spark_processors, "RECANCEL_INTERVAL_S", 0.01)
    session = _Session()
    with time_limit(session, "batch-b", 0.05):
        # Still inside: each cancel stands for a job that was submitted after the last.
        assert _wait(lambda: len(session.sparkContext.cancelled) >= 3), session.sparkContext.cancelled
    assert _wait(lambda: not _cancellers())
    after = list(session.sparkContext.cancelled)
    assert set(after) == {"batch-b"}
    assert session.sparkContext.cancelled == after  # nothing more once the batch returned
