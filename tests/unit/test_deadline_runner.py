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


def test_stuck_workers_are_capped_and_calls_are_refused_at_the_cap_until_one_returns():
    from cluster.services.process import wait_until

    runner = DeadlineRunner("capped", max_workers=2)
    release = threading.Event()

    def workers():
        return sum(1 for thread in threading.enumerate() if thread.name.startswith("capped-"))

    for _ in range(2):
        with pytest.raises(DeadlineExceeded, match="within"):
            runner.run(release.wait, 0.05)
    with pytest.raises(DeadlineExceeded, match="all 2 capped workers are still blocked"):
        runner.run(lambda: "never run", 5)
    assert workers() == 2  # no third thread
    release.set()  # the storage answers again: the stuck calls return, their workers are idle
    assert wait_until(lambda: runner.run(lambda: "taken again", 5), 10, "a worker to be free") == "taken again"
    assert workers() == 2


def test_a_start_that_may_wait_takes_the_first_worker_to_come_free_and_is_refused_after_its_wait():
    runner = DeadlineRunner("waiting", max_workers=1)
    release = threading.Event()
    runner.start(lambda: release.wait(5))
    with pytest.raises(DeadlineExceeded, match="all 1 waiting workers are still blocked"):
        runner.start(lambda: "never run", wait=0.05)
    started: list[object] = []
    waiter = threading.Thread(target=lambda: started.append(runner.start(lambda: "ran", wait=5)), daemon=True)
    waiter.start()
    release.set()  # the busy worker comes free: the waiting start takes it
    waiter.join(5)
    assert not waiter.is_alive() and started[0].done.wait(5) and started[0].result == "ran"


def test_a_retired_runner_refuses_calls_and_its_workers_end_once_their_calls_returned():
    from cluster.services.process import wait_until

    runner = DeadlineRunner("retiring", max_workers=3)
    release = threading.Event()

    def workers():
        return sum(1 for thread in threading.enumerate() if thread.name.startswith("retiring-"))

    assert runner.run(lambda: "idle after this", 5) == "idle after this"
    with pytest.raises(DeadlineExceeded, match="within"):
        runner.run(release.wait, 0.05)
    assert (workers(), runner.busy) == (1, 1)  # the idle worker took it
    waiting = threading.Event()
    refused: list[BaseException] = []

    def wait_for_a_worker():
        waiting.set()
        try:
            runner.start(lambda: "never run", wait=30)
        except DeadlineExceeded as error:
            refused.append(error)

    # Two more stuck calls fill the cap; a start then waits for a worker, and is refused on retire.
    with pytest.raises(DeadlineExceeded, match="within"):
        runner.run(release.wait, 0.05)
    with pytest.raises(DeadlineExceeded, match="within"):
        runner.run(release.wait, 0.05)
    waiter = threading.Thread(target=wait_for_a_worker, daemon=True)
    waiter.start()
    assert waiting.wait(5)
    runner.retire()
    waiter.join(5)
    assert not waiter.is_alive() and refused and "retired" in str(refused[0])
    with pytest.raises(DeadlineExceeded, match="retired"):
        runner.run(lambda: "never run", 5)
    assert runner.busy == 3 and workers() == 3  # the blocked calls are left to end on their own
    release.set()
    wait_until(lambda: workers() == 0, 10, "every worker of the retired runner to end")
    assert runner.busy == 0
