"""Two crashes at every ordered pair of seams of rollover, merge and indexing.

Crash 1 stops a repository at a seam while another generation waits in the journals;
the next life recovers and crashes at a call of a seam during that recovery or after
it; the third life recovers again. Each acknowledged event must then be stored once,
returned by `events` in id order, and found exactly once by a uuid query and by a
time-range query (`crashes.check_every_event_once`).

Crash 1 falls at the first call of its seam once armed; crash 2 at every call of its
seam in turn (a counting life without crash 2 says how many there are, and is itself
checked). CUSTODY_LONG=1 also crashes the first life at every later call of its seam,
and repeats it all with shards of one file each.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

from repositories.provenance import ProvenanceRepository
from repositories.provenance import hooks as seams
from repositories.provenance.index import DEFAULT_SHARD_BYTES

from .conftest import make_config
from .crashes import Crash, Ledger, SimulatedCrash, check_every_event_once, life_of, recovered

LONG = os.environ.get("CUSTODY_LONG") == "1"
WAIT_S = 30.0
BATCH = 3  # events per generation: every event is queried twice in each check
# Every file in its own shard (1 byte) exercises a shard closed by the file it claims.
SHARD_SIZES = (DEFAULT_SHARD_BYTES, 1) if LONG else (DEFAULT_SHARD_BYTES,)


@pytest.fixture
def crash_root(tmp_path):
    """Where the crashed repositories live: in memory (/dev/shm) where the host has it.
    A process crash keeps the page cache, so fsync changes nothing these tests check,
    and on disk it costs most of their time."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        root = tempfile.mkdtemp(prefix="custody-provenance-crash-", dir="/dev/shm")
        try:
            yield Path(root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    else:
        yield tmp_path


def config_at(root: Path, shard_bytes: int):
    # One container of two journals: a merge deletes two journals, so a crash can fall
    # between them, and the matrix stays small.
    return make_config(root, containers=(str(root / "c0"),), shard_bytes=shard_bytes)


def first_life(config, clock, ledger: Ledger, crash: SimulatedCrash) -> None:
    """Generation a merged and indexed cleanly; then, the crash armed, b rolled over
    with c in the journals (its seams held until c is registered), and c rolled over."""
    go = threading.Event()
    repo = ProvenanceRepository(config, clock=clock, hooks=crash.hooks())
    with life_of(repo, hold=go):
        ledger.register(repo, BATCH, "a")
        repo.sync(WAIT_S)
        crash.arm(hold=go)
        ledger.register(repo, BATCH, "b")
        repo.rollover()
        ledger.register(repo, BATCH, "c")
        go.set()
        repo.wait_idle(WAIT_S)
        repo.rollover()
        repo.wait_idle(WAIT_S)


def second_life(config, clock, ledger: Ledger, crash: SimulatedCrash) -> None:
    """Recovery (which may crash in its own merges) and its indexing with generation d
    in the journals; then d rolled over, merged and indexed."""
    try:
        repo = ProvenanceRepository(config, clock=clock, hooks=crash.hooks())
    except Crash:
        return
    with life_of(repo):
        ledger.register(repo, BATCH, "d")
        repo.wait_idle(WAIT_S)
        repo.rollover()
        repo.wait_idle(WAIT_S)


def check_third_life(config, clock, ledger: Ledger, scenario: str) -> None:
    try:
        with recovered(config, clock) as repo:
            check_every_event_once(repo, ledger)
    except AssertionError as error:
        raise AssertionError(f"{scenario}: {error}") from error


def crash_again(
    state: tuple[Path, Ledger], root: Path, shard_bytes: int, clock, crash: SimulatedCrash, scenario: str
) -> None:
    """On a copy of the first life's files and ledger: the second life, then the check."""
    source, ledger = state
    shutil.copytree(source, root)
    config, ledger = config_at(root, shard_bytes), copy.deepcopy(ledger)
    second_life(config, clock, ledger, crash)
    check_third_life(config, clock, ledger, scenario)
    # A closed repository's index readers may still touch a lock file: no error here,
    # and every scenario has a directory of its own.
    shutil.rmtree(root, ignore_errors=True)


def first_life_calls(root: Path, shard_bytes: int, clock, seam: str) -> int:
    """How many times the first life reaches `seam` once armed."""
    counting = SimulatedCrash(armed=False)
    first_life(config_at(root, shard_bytes), clock, Ledger(start_ms=int(clock() * 1000)), counting)
    return counting.calls[seam]


@pytest.mark.parametrize("shard_bytes", SHARD_SIZES)
@pytest.mark.parametrize("first_seam", seams.SEAMS)
def test_two_crashes_at_any_two_seams_lose_and_double_no_event(crash_root, clock, first_seam, shard_bytes):
    firsts = first_life_calls(crash_root / "count", shard_bytes, clock, first_seam) if LONG else 1
    for first_at in range(1, firsts + 1):
        root = crash_root / f"first-{first_at}"
        ledger = Ledger(start_ms=int(clock() * 1000))
        first = SimulatedCrash(first_seam, first_at, armed=False)
        first_life(config_at(root, shard_bytes), clock, ledger, first)
        assert first.crashed is not None and first.crashed[0] == first_seam, f"never reached {first_seam}"
        state = (root, ledger)

        alone = f"crash at {first_seam} #{first_at} alone"
        counting = SimulatedCrash()
        crash_again(state, crash_root / f"first-{first_at}-alone", shard_bytes, clock, counting, alone)
        # The second life reaches every seam, so every ordered pair is crashed below.
        assert set(counting.calls) == set(seams.SEAMS), f"{alone}: the second life reached only {counting.calls}"

        for second_seam in seams.SEAMS:
            for second_at in range(1, counting.calls[second_seam] + 1):
                scenario = f"crash at {first_seam} #{first_at}, then at {second_seam} #{second_at}"
                second = SimulatedCrash(second_seam, second_at)
                crash_again(
                    state,
                    crash_root / f"first-{first_at}-{second_seam}-{second_at}",
                    shard_bytes,
                    clock,
                    second,
                    scenario,
                )
                assert second.crashed is not None, f"{scenario}: the second crash never happened"
        shutil.rmtree(root, ignore_errors=True)
