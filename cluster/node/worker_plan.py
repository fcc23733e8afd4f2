"""The supervisor's decisions, pure: whether a data directory may start with N workers,
and when a worker that died is started again.

A node of N workers keeps its FlowFiles in N WALs, one under each `workers/I/`: the
count is recorded in the data directory (`workers.json`) at the first start, and a
later start with another count is refused, since the FlowFiles of a worker that no
longer runs would wait in its WAL for ever (and a node run without `--workers` keeps
its own under `shards/`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from repositories.storage.local import FILE_MODE

COUNT_FILE = "workers.json"
SINGLE_NODE_SHARDS = "shards"  # where a node run without --workers keeps its WAL

# A worker that ends within this of its start "died at once" (a flow it cannot run, a
# port taken): it is started again after a delay that doubles up to the maximum.
DIED_AT_ONCE_S = 5.0
FIRST_DELAY_S = 1.0
MAX_DELAY_S = 30.0


def count_problem(recorded: int | None, single_node_data: bool, wanted: int) -> str | None:
    """Why a data directory whose recorded worker count is `recorded` (None: none is),
    and which holds a single node's shard when `single_node_data`, cannot start with
    `wanted` workers; None when it can."""
    if recorded is None:
        if single_node_data and wanted > 1:
            recorded = 1
        else:
            return None
    if recorded == wanted:
        return None
    where = "the WALs of its workers under workers/" if recorded > 1 else "the WAL under shards/"
    return (
        f"it was run with --workers {recorded}, not {wanted}: the FlowFiles queued there are in {where} "
        f"and only {recorded} worker(s) read them; start it with --workers {recorded}, or let its "
        f"queues empty and start --workers {wanted} on a new --data-dir"
    )


def read_count(data_dir: str) -> int | None:
    """The worker count recorded in `data_dir`; None when none is. Raises ValueError
    for a file that does not hold one."""
    path = os.path.join(data_dir, COUNT_FILE)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    try:
        count = json.loads(text)["workers"]
    except (ValueError, KeyError, TypeError):
        count = None
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"{path} does not say how many workers the node runs ({text[:80]!r})")
    return count


def record_count(data_dir: str, count: int) -> None:
    """Record `count` in `data_dir`, durably: written aside, synced, renamed."""
    path = os.path.join(data_dir, COUNT_FILE)
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8", opener=lambda name, flags: os.open(name, flags, FILE_MODE)) as handle:
        handle.write(json.dumps({"workers": count}) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)
    directory = os.open(data_dir, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


@dataclass(frozen=True)
class Restart:
    """What to do about a worker that ended: start it again after `delay_s`, and why."""

    delay_s: float
    reason: str


def restart_after(lived_s: float, exit_code: int, last_delay_s: float) -> Restart:
    """When to start again a worker that lived `lived_s` and ended with `exit_code` (a
    negative code: killed by that signal); `last_delay_s` is the delay before its last
    start (0 for its first). A worker that ran a while is started again at once; one
    that died at once waits, twice as long each time it does so again."""
    ended = f"killed by signal {-exit_code}" if exit_code < 0 else f"exited with code {exit_code}"
    if lived_s >= DIED_AT_ONCE_S:
        return Restart(0.0, f"{ended} after {lived_s:.1f} s; starting it again")
    delay = min(MAX_DELAY_S, max(FIRST_DELAY_S, last_delay_s * 2))
    return Restart(
        delay,
        f"{ended} {lived_s:.1f} s after its start (its error is above); starting it again in {delay:g} s",
    )
