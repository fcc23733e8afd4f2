import threading

import pytest

from replication.deadline import DeadlineExceeded, DeadlineRunner


def test_returns_results_and_raises_errors():
    runner = DeadlineRunner("t")
    assert runner.run(lambda: 41 + 1, 5) == 42
    with pytest.raises(ZeroDivisionError):
        runner.run(lambda: 1 / 0, 5)


def test_a_stuck_call_is_abandoned_and_others_still_run():
    runner = DeadlineRunner("t")
    release = threading.Event()
    with pytest.raises(DeadlineExceeded):
        runner.run(release.wait, 0.2)
    # The stuck worker is not reused: the next call gets a fresh one.
    assert runner.run(lambda: "fresh", 5) == "fresh"
    release.set()


def test_no_timeout_runs_inline():
    runner = DeadlineRunner("t")
    assert runner.run(threading.current_thread, None) is threading.current_thread()
