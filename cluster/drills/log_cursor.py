"""Where a drill has read a container's log up to, so that each read asks the engine
only for what is new.

A compose drill reads every node's `--events` lines four times a second. Asking the
engine for a container's whole log each time cost the drill and the engine a
quarter of a core after 165 rounds and 42 % after 361, and stretched rounds from 5-6 s
to 10-25 s. Instead the log is read with its timestamps (`timestamps=True`, each line
prefixed by an RFC 3339 time with nanoseconds, UTC) from the second of the newest line
taken (`since`, whole seconds, inclusive), and `LogCursor.take` keeps only the lines
not taken before: newer than the newest taken, or at its very timestamp beyond the
number of lines already taken there (the engine keeps a container's lines in order,
across its restarts).
"""

from __future__ import annotations

from datetime import UTC, datetime

Stamp = tuple[int, int]  # (seconds since the epoch, nanoseconds)


def parse_stamp(text: str) -> Stamp | None:
    """`2026-12-05T00:16:38.123456789Z` as (seconds, nanoseconds); None if it is not
    such a time (a line of the log without one)."""
    if len(text) < 20 or text[-1] != "Z" or text[10] != "T":
        return None
    try:
        seconds = int(datetime.fromisoformat(text[:19]).replace(tzinfo=UTC).timestamp())
    except ValueError:
        return None
    fraction = text[20:-1] if text[19] == "." else ""
    if (text[19] not in ".Z") or (fraction and not fraction.isdigit()) or len(fraction) > 9:
        return None
    return seconds, int(fraction.ljust(9, "0")) if fraction else 0


class LogCursor:
    """The newest line taken from one container's log, and how many were taken at
    exactly its timestamp."""

    def __init__(self) -> None:
        self.newest: Stamp | None = None
        self.at_newest = 0

    def since(self) -> int:
        """The `since` to ask the engine for (whole seconds; 0: from the start)."""
        return 0 if self.newest is None else self.newest[0]

    def take(self, text: str) -> list[str]:
        """The lines of `text` (read with timestamps from `since()`) not taken before,
        without their timestamps, oldest first."""
        taken = []
        skip = self.at_newest  # lines at the newest timestamp already taken
        for line in text.splitlines():
            head, _, body = line.partition(" ")
            stamp = parse_stamp(head)
            if stamp is None:
                continue
            if self.newest is not None and stamp < self.newest:
                continue
            if stamp == self.newest:
                if skip:
                    skip -= 1
                    continue
                self.at_newest += 1
            else:
                self.newest, self.at_newest, skip = stamp, 1, 0
            taken.append(body)
        return taken
