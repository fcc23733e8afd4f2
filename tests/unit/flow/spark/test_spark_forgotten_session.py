"""When a Spark session with no executors is replaced: one that ran a job before at
once (its cluster forgot it), a new one only after ORPHAN_GRACE_S (its executors may
still be starting), a local one never."""

from __future__ import annotations

from flow.processors import spark as spark_processors
from flow.processors.spark import ORPHAN_GRACE_S, forgotten_by_its_cluster


class _Context:
    def __init__(self, master: str):
        self.master = master

    @property
    def _jsc(self):
        raise ConnectionError("the driver's JVM is not answering")  # no executors to count


class _Session:
    def __init__(self, master: str = "spark://127.0.0.1:7077"):
        self.sparkContext = _Context(master)


def test_a_local_session_always_has_somewhere_to_run():
    session = _Session("local[2]")
    spark_processors._RAN_A_JOB.add(session)
    assert not forgotten_by_its_cluster(session, now=10 * ORPHAN_GRACE_S)


def test_a_new_session_gets_time_for_its_executors_to_start():
    session = _Session()
    spark_processors._FIRST_SEEN[session] = 100.0
    assert not forgotten_by_its_cluster(session, now=100.0 + ORPHAN_GRACE_S - 1)
    assert forgotten_by_its_cluster(session, now=100.0 + ORPHAN_GRACE_S)


def test_a_session_that_ran_a_job_and_lost_its_executors_is_replaced_at_once():
    session = _Session()
    spark_processors._FIRST_SEEN[session] = 100.0
    spark_processors._RAN_A_JOB.add(session)
    assert forgotten_by_its_cluster(session, now=101.0)
