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


def test_renewed_workers_take_every_later_call_and_the_old_ones_end_once_their_calls_returned():
    from cluster.services.process import wait_until

    runner = DeadlineRunner("renewing", max_workers=2)
    release = threading.Event()

    def workers():
        return sum(1 for thread in threading.enumerate() if thread.name.startswith("renewing-"))

    assert runner.renew() == 0  # nothing running: nothing renewed
    assert runner.run(lambda: "idle after this", 5) == "idle after this"
    assert runner.renew() == 0 and workers() == 1
    stuck = [runner.start(lambda: release.wait(10)) for _ in range(2)]
    with pytest.raises(DeadlineExceeded, match="all 2 renewing workers are still blocked"):
        runner.run(lambda: "never run", 5)
    waiting: list[object] = []
    waiter = threading.Thread(target=lambda: waiting.append(runner.start(lambda: "waited", wait=10)), daemon=True)
    waiter.start()
    assert runner.renew() == 2
    waiter.join(5)  # the waiting start was given a fresh worker
    assert not waiter.is_alive() and waiting[0].done.wait(5) and waiting[0].result == "waited"
    assert [runner.run(lambda: "fresh", 5) for _ in range(3)] == ["fresh"] * 3
    assert runner.busy == 0  # the stuck calls no longer count
    release.set()
    assert all(call.done.wait(5) and call.result is True for call in stuck)  # their callers still get answers
    wait_until(lambda: workers() == 1, 10, "the old workers to end, the fresh one to stay")
    assert runner.run(lambda: "still served", 5) == "still served" and workers() == 1


def test_renewals_stop_once_the_workers_they_retired_still_blocked_reach_the_cap():
    """A storage that never answers, and an incarnation that dies each time with its
    calls blocked: each renewal would leave another pool of threads behind."""
    from cluster.services.process import wait_until

    runner = DeadlineRunner("capped", max_workers=2, max_retired=4)
    release = threading.Event()
    for _ in range(2):  # two renewals of two blocked workers each: the cap
        stuck = [runner.start(lambda: release.wait(10)) for _ in range(2)]
        assert runner.renew() == 2
    assert runner.retired == 4
    stuck = [runner.start(lambda: release.wait(10)) for _ in range(2)]
    assert runner.renew() == 0 and runner.busy == 2  # refused: the calls keep their workers
    with pytest.raises(DeadlineExceeded, match="all 2 capped workers are still blocked"):
        runner.run(lambda: "never run", 5)
    release.set()
    assert all(call.done.wait(5) for call in stuck)
    wait_until(lambda: runner.retired == 0, 10, "the retired workers to end")
    assert runner.run(lambda: "served", 5) == "served"
