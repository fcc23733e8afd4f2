"""A swap file that cannot be read back: what to do about it, decided without I/O.

As NiFi's swap manager does with a swap file that fails to load, the queue does not
wait for it: the file is set aside, the queue's other swap files come back in their
turn, and the file is tried again later. Its FlowFiles stay recorded in the FlowFile
WAL (the `SwapFile` record is kept, so nothing is forgotten): they are not lost, only
unreadable until the file is repaired. The shard (`flow.shard`) carries out what these
functions decide and keeps their state; the queue counts the FlowFiles all along.

Why a read failed (`ReadFailure`):
  * CORRUPT: the bytes fail their checks (`CorruptSwapFileError`), or the file holds
    something else than the WAL recorded (another queue, another count);
  * MISSING: nothing is at its location (`SwapFileMissingError`);
  * UNAVAILABLE: the storage did not answer (an HDFS outage): the file may be fine.

The decisions (`on_read_failed`):
  * quarantine a CORRUPT file not yet quarantined: move it (a rename, never a delete)
    into the quarantine directory beside the swap directory and record the new
    location in the WAL, so that a restart finds it set aside rather than in the
    queue's line, and never blocks the queue on it again. A MISSING file has nothing
    to move; an UNAVAILABLE one is on storage that does not answer.
  * retry every unreadable file, after a backoff that doubles from `RetryBackoff.first_ms`
    up to `max_ms`: a damaged read may have been transient (HDFS), and an operator may
    put a good copy in place. A retry puts the file back at the head of the queue's
    line of swap files; it is read when the queue has room, as any other.
  * log once per failed attempt that was due, hence at most once per backoff (or per
    operator's retry, which makes the file due at once); a read the backoff did not
    schedule (a drop reading the file) logs only if the reason changed.

`on_registered` is a restart's view of a file an earlier run quarantined (due at once:
it may have been repaired meanwhile), `retry_now` an operator's request, `alarm_text`
what the operator reads.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

DEFAULT_FIRST_RETRY_MS = 5_000
DEFAULT_MAX_RETRY_MS = 300_000
RETRY_PATH = "/api/v1/node/alarms/retry"  # the admin API's "retry now" (cluster.admin.routes_alarms)


class ReadFailure(str, enum.Enum):
    CORRUPT = "corrupt"
    MISSING = "missing"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True, slots=True)
class RetryBackoff:
    first_ms: int = DEFAULT_FIRST_RETRY_MS
    max_ms: int = DEFAULT_MAX_RETRY_MS

    def __post_init__(self):
        if self.first_ms < 1 or self.max_ms < self.first_ms:
            raise ValueError(
                f"swap retry backoff: first ({self.first_ms} ms) must be positive and at most "
                f"the maximum ({self.max_ms} ms)"
            )

    def delay_ms(self, failures: int) -> int:
        """The wait after the `failures`-th failure in a row (1: the first)."""
        return min(self.max_ms, self.first_ms << min(max(failures, 1) - 1, 40))


@dataclass(frozen=True, slots=True)
class UnreadableSwapFile:
    """One swap file set aside, as its alarm shows it."""

    location: str  # where the WAL records it now (in quarantine once quarantined)
    queue: str
    flowfiles: int
    size: int
    reason: ReadFailure
    error: str  # the last failure, one line
    failures: int  # failed reads in a row (0: set aside by an earlier run, not read since)
    quarantined: bool
    since_ms: int  # when it was first found unreadable (by this run)
    next_attempt_ms: int

    def due(self, now_ms: int) -> bool:
        return now_ms >= self.next_attempt_ms


@dataclass(frozen=True, slots=True)
class ReadFailedDecision:
    file: UnreadableSwapFile  # the new state (not quarantined yet if `quarantine`)
    quarantine: bool  # move the file into quarantine now, and record that in the WAL
    log: bool  # write one line about it


def on_read_failed(
    previous: UnreadableSwapFile | None,
    *,
    location: str,
    queue: str,
    flowfiles: int,
    size: int,
    reason: ReadFailure,
    error: str,
    quarantined: bool,
    now_ms: int,
    backoff: RetryBackoff,
) -> ReadFailedDecision:
    """A read of the swap file at `location` failed for `reason`; `previous` is its state
    if it was already set aside (None: it was in the queue's line, read for the first
    time), `quarantined` whether `location` is in the quarantine directory."""
    failures = (previous.failures if previous is not None else 0) + 1
    # A line when its retry was due (or it is new), or when it fails in another way.
    log = previous is None or previous.due(now_ms) or previous.reason is not reason
    state = UnreadableSwapFile(
        location,
        queue,
        flowfiles,
        size,
        reason,
        error,
        failures,
        quarantined,
        previous.since_ms if previous is not None else now_ms,
        now_ms + backoff.delay_ms(failures),
    )
    return ReadFailedDecision(state, reason is ReadFailure.CORRUPT and not quarantined, log)


def quarantined(file: UnreadableSwapFile, location: str) -> UnreadableSwapFile:
    """The file was moved into quarantine, now at `location`."""
    return replace(file, location=location, quarantined=True)


def on_registered(
    *,
    location: str,
    queue: str,
    flowfiles: int,
    size: int,
    reason: ReadFailure,
    error: str,
    quarantined: bool,
    now_ms: int,
) -> UnreadableSwapFile:
    """A restart found this file set aside (quarantined by an earlier run, or missing, or
    with an unreadable summary): in alarm at once, and tried at once (it may have been
    repaired while the node was down)."""
    return UnreadableSwapFile(location, queue, flowfiles, size, reason, error, 0, quarantined, now_ms, now_ms)


def retry_now(file: UnreadableSwapFile, now_ms: int) -> UnreadableSwapFile:
    """An operator asked for a retry (after repairing the file): due at once."""
    return replace(file, next_attempt_ms=min(file.next_attempt_ms, now_ms))


def alarm_text(file: UnreadableSwapFile, backoff: RetryBackoff) -> str:
    """What happened and what to do, for the operator. Never advice that drops FlowFiles."""
    held = f"its {file.flowfiles} FlowFiles ({file.size} bytes) of queue {file.queue!r}"
    kept = "stay recorded in the FlowFile WAL, unread, and the queue carries on without them"
    retry = (
        f"it is read again after a backoff of {_seconds(backoff.first_ms)} doubling up to "
        f"{_seconds(backoff.max_ms)}, or at once on POST {RETRY_PATH}"
    )
    if file.reason is ReadFailure.CORRUPT and file.quarantined:
        return (
            f"swap file {file.location} is corrupt ({file.error}) and was moved into quarantine: {held} {kept}. "
            f"Replace it there with a good copy of the same name (from a replica or a backup); {retry}. "
            "Do not delete it: its FlowFiles would be lost."
        )
    if file.reason is ReadFailure.CORRUPT:
        return (
            f"swap file {file.location} is corrupt ({file.error}) and could not be moved into quarantine yet: "
            f"{held} {kept}. Replace it with a good copy of the same name (from a replica or a backup); "
            f"{retry}. Do not delete it: its FlowFiles would be lost."
        )
    if file.reason is ReadFailure.MISSING:
        return (
            f"swap file {file.location} is recorded in the FlowFile WAL but does not exist: {held} {kept}. "
            "Put the file back at this path (from the data directory this one was moved or copied from, a "
            f"replica or a backup); {retry}."
        )
    return (
        f"swap file {file.location} could not be read ({file.error}): {held} {kept}. Check the storage it is on; "
        f"{retry}."
    )


def _seconds(ms: int) -> str:
    return f"{ms / 1000:g} s"
