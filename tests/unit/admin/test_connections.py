"""The admin API's connections, the pure part: the cap from the process's descriptor
limit, and asyncio's accept failures logged once per interval without a traceback."""

import errno
import logging

import pytest

from cluster.admin.connections import MAX_CONNECTIONS, MIN_CONNECTIONS, AcceptErrors, connection_cap
from repositories.log_limits import LimitedLog


@pytest.mark.parametrize(
    "limit, cap",
    [
        (256, 32),
        (1024, 128),
        (20_000, MAX_CONNECTIONS),
        (16, MIN_CONNECTIONS),
        (0, MAX_CONNECTIONS),
        (-1, MAX_CONNECTIONS),
    ],
)
def test_the_cap_leaves_most_descriptors_to_the_flow(limit, cap):
    assert connection_cap(limit) == cap
    assert limit <= 0 or cap <= max(MIN_CONNECTIONS, limit // 8)


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


class Loop:
    def __init__(self):
        self.default = []

    def default_exception_handler(self, context):
        self.default.append(context)


def test_accepts_without_descriptors_are_one_line_a_minute_without_a_traceback(caplog):
    caplog.set_level(logging.DEBUG, logger="test.accept")
    clock, loop = Clock(), Loop()
    handler = AcceptErrors(LimitedLog(logging.getLogger("test.accept"), 60.0, clock=clock), 256)
    for second in range(120):
        clock.now = float(second)
        handler(
            loop,
            {
                "message": "socket.accept() out of system resource",
                "exception": OSError(errno.EMFILE, "Too many open files"),
            },
        )
    records = [record for record in caplog.records if record.name == "test.accept"]
    assert len(records) == 2 and not any(record.exc_info for record in records)
    assert "Too many open files" in records[0].getMessage() and "ulimit -n" in records[0].getMessage()
    assert "59 more like it" in records[1].getMessage()
    assert loop.default == []
    handler(loop, {"message": "something else", "exception": ValueError("x")})
    assert len(loop.default) == 1  # anything else is asyncio's to log
