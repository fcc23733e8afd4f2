"""Run a few independent storage calls at once and wait for all of them.

On HDFS a new file costs round trips that do nothing locally: the NameNode's create,
the pipeline's setup to the DataNodes, and an hsync that every DataNode of the
pipeline acknowledges. Files that do not depend on each other (the journals of a
checkpoint, one per partition) are made side by side, so that making four of them
takes about as long as making one, instead of four times as long.

Each call runs on a thread of its own, the last one on the caller's thread. Every
call is waited for, even after another one failed, so that when `side_by_side`
returns or raises nothing it started is still running (the caller cleans up what
the calls made, and no call outlives the caller's lock). The error raised is the
first one in call order, not in time, so that a failure reads the same from one run
to the next. A call blocked in a storage call ends when that call's own deadline
passes (`replication.deadline` for HDFS): nothing here adds one.

`beside` starts one call and lets the caller go on with other work, asking for the
result when it needs it (a shard's recovery lists its swap directories while it
restores the WAL).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def side_by_side(calls: Sequence[Callable[[], object]], name: str) -> None:
    """Run every call in `calls` at once; return when all have ended, or raise the
    first error (in call order) once all have ended. `name` names the threads."""
    errors: list[BaseException | None] = [None] * len(calls)

    def run(index: int) -> None:
        try:
            calls[index]()
        except BaseException as error:  # noqa: BLE001 - re-raised on the caller's thread
            errors[index] = error

    threads = [
        threading.Thread(target=run, args=(index,), name=f"{name}-{index}", daemon=True)
        for index in range(len(calls) - 1)
    ]
    for thread in threads:
        thread.start()
    if calls:
        run(len(calls) - 1)
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error


def beside(call: Callable[[], T], name: str) -> Callable[[], T]:
    """Start `call` on a thread of its own (named `name`) and go on; the function
    returned waits for it, then returns its result or raises its error. For calls that
    only read: a caller that gives up on the way (its own error) need not wait, and the
    thread ends with its call."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append((call(), None))
        except BaseException as error:  # noqa: BLE001 - raised on the caller's thread
            outcome.append((None, error))

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()

    def result() -> T:
        thread.join()
        value, error = outcome[0]
        if error is not None:
            raise error
        return value

    return result
