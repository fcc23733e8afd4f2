"""The answers of the alarm endpoints (`routes_alarms`). Dates are milliseconds since
the epoch (`_ms`); sizes are bytes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Alarm(BaseModel):
    """A swap file set aside because it cannot be read: its FlowFiles stay recorded in the
    FlowFile WAL (not lost, unread until the file is repaired) and the queue carries on
    without them. A corrupt file is moved into quarantine (never deleted)."""

    kind: Literal["swap_file_unreadable"]
    shard: str
    queue: str
    location: str = Field(description="where the file is now (in quarantine once quarantined)")
    reason: Literal["corrupt", "missing", "unavailable"]
    quarantined: bool
    flowfiles: int = Field(description="FlowFiles in the file")
    bytes: int = Field(description="bytes of content they hold")
    failures: int = Field(description="failed reads in a row (0: set aside by an earlier run, not read since)")
    since_ms: int = Field(description="when this run first found it unreadable")
    next_attempt_ms: int = Field(description="when it is read again (POST .../alarms/retry: now)")
    error: str = Field(description="the last failure")
    message: str = Field(description="what happened and what to do")


class AlarmRetry(BaseModel):
    node: str
    retried: int = Field(description="swap files to be read again at once")
