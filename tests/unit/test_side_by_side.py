import threading

import pytest

from repositories.storage.side_by_side import beside, side_by_side

DEADLINE = 10.0


def test_every_call_runs_at_once():
    """Four calls that each wait for all four to have started: they can only all
    finish if they run at the same time (a sequential run breaks the barrier)."""
    barrier = threading.Barrier(4, timeout=DEADLINE)
    threads: list[threading.Thread] = []

    def call() -> None:
        threads.append(threading.current_thread())
        barrier.wait()

    side_by_side([call] * 4, "t")
    assert len(threads) == 4 and len(set(threads)) == 4
    assert threading.current_thread() in threads  # the last call ran on the caller's thread


def test_a_failure_waits_for_the_others_and_raises_the_first_in_call_order():
    """The fourth call fails first; the others go on only once it has failed, and the
    second then fails too: side_by_side returns only after every call ended, and
    raises the second call's error (first in call order), not the fourth's (first in
    time)."""
    fourth_failed = threading.Event()
    ended: list[int] = []

    def after_the_fourth(index: int, fail: bool) -> None:
        assert fourth_failed.wait(DEADLINE)
        ended.append(index)
        if fail:
            raise ValueError(f"call {index}")

    def fourth() -> None:
        ended.append(3)
        fourth_failed.set()
        raise ValueError("call 3")

    with pytest.raises(ValueError, match="call 1"):
        side_by_side(
            [
                lambda: after_the_fourth(0, False),
                lambda: after_the_fourth(1, True),
                lambda: after_the_fourth(2, False),
                fourth,
            ],
            "t",
        )
    assert sorted(ended) == [0, 1, 2, 3]


def test_no_calls_and_one_call():
    side_by_side([], "t")
    ran: list[threading.Thread] = []
    side_by_side([lambda: ran.append(threading.current_thread())], "t")
    assert ran == [threading.current_thread()]


def test_a_base_exception_crosses_threads():
    class Crash(BaseException):
        pass

    def crash() -> None:
        raise Crash("at a seam")

    with pytest.raises(Crash):
        side_by_side([crash, lambda: None], "t")


def test_beside_runs_while_the_caller_goes_on_and_gives_its_result_when_asked():
    """The call waits for the caller to have gone on: it can only end if it runs on a
    thread of its own while the caller works."""
    caller_went_on = threading.Event()

    def call() -> str:
        assert caller_went_on.wait(DEADLINE)
        return threading.current_thread().name

    result = beside(call, "listing")
    caller_went_on.set()
    assert result() == "listing"
    assert result() == "listing"  # asked again: the same answer


def test_beside_raises_the_calls_error_on_the_callers_thread():
    def call() -> None:
        raise FileNotFoundError("gone")

    result = beside(call, "t")
    with pytest.raises(FileNotFoundError, match="gone"):
        result()
