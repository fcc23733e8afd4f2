"""A recovery's forced checkpoint run beside its caller (`recover(checkpoint_beside=True)`):
the records come back at once, nothing is written before the checkpoint ends, and its
failure is the caller's to see, as the recovery's own was."""

from __future__ import annotations

import threading

import pytest

from repositories.flowfile import CheckpointError, Put, WalHooks
from repositories.storage import LocalStorage

from .helpers import make_record, open_wal

DEADLINE_S = 30.0


class HeldCheckpoint(WalHooks):
    """Holds the first checkpoint at its start until `release` is set; records the
    order of checkpoint steps and journal writes."""

    def __init__(self, fail: bool = False):
        self.started = threading.Event()
        self.release = threading.Event()
        self.fail = fail
        self.order: list[str] = []

    def checkpoint_started(self, path):
        self.order.append("checkpoint started")
        if not self.started.is_set():
            self.started.set()
            assert self.release.wait(DEADLINE_S), "the test never released the checkpoint"
            if self.fail:
                raise OSError("the disk went away")

    def checkpoint_journal_reset(self, path):
        self.order.append("journal reset")

    def before_journal_write(self, path):
        self.order.append("journal write")


def an_owners_wal(directory: str) -> None:
    """A WAL of epoch 0 with three FlowFiles: one of epoch 1 must checkpoint before it writes."""
    wal = open_wal(LocalStorage(), directory)
    wal.recover()
    wal.update([Put(make_record(n)) for n in (1, 2, 3)])
    wal.close()


def test_the_records_come_back_before_the_checkpoint_and_updates_wait_for_it(tmp_path):
    directory = str(tmp_path / "wal")
    an_owners_wal(directory)
    hooks = HeldCheckpoint()
    adopter = open_wal(LocalStorage(), directory, epoch=1, hooks=hooks)
    assert set(adopter.recover(checkpoint_beside=True)) == {"ff-1", "ff-2", "ff-3"}
    assert hooks.started.wait(DEADLINE_S)  # returned while its checkpoint is held
    written = threading.Event()

    def update() -> None:
        adopter.update([Put(make_record(4))])
        written.set()

    writer = threading.Thread(target=update)
    writer.start()
    hooks.release.set()
    adopter.writable()
    writer.join(DEADLINE_S)
    assert written.is_set()
    # Every journal was reset before the update wrote a byte.
    assert hooks.order.index("journal write") > max(i for i, step in enumerate(hooks.order) if step == "journal reset")
    adopter.close()
    assert set(open_wal(LocalStorage(), directory, epoch=1).recover()) == {"ff-1", "ff-2", "ff-3", "ff-4"}


def test_a_failed_checkpoint_beside_is_raised_by_writable_and_the_next_update_rolls_first(tmp_path):
    directory = str(tmp_path / "wal")
    an_owners_wal(directory)
    hooks = HeldCheckpoint(fail=True)
    adopter = open_wal(LocalStorage(), directory, epoch=1, hooks=hooks)
    adopter.recover(checkpoint_beside=True)
    hooks.release.set()
    with pytest.raises(CheckpointError, match="the forced checkpoint failed: .*the disk went away"):
        adopter.writable()
    adopter.update([Put(make_record(4))])  # the roll it takes first succeeds
    assert hooks.order.count("checkpoint started") == 2
    adopter.close()
    again = open_wal(LocalStorage(), directory, epoch=1)
    assert set(again.recover()) == {"ff-1", "ff-2", "ff-3", "ff-4"}
    assert not again.last_recovery.checkpoint_reasons  # the roll wrote epoch 1's snapshot


def test_an_abandon_does_not_wait_for_the_checkpoint_beside(tmp_path):
    directory = str(tmp_path / "wal")
    an_owners_wal(directory)
    hooks = HeldCheckpoint()
    adopter = open_wal(LocalStorage(), directory, epoch=1, hooks=hooks)
    adopter.recover(checkpoint_beside=True)
    assert hooks.started.wait(DEADLINE_S)
    adopter.abandon("a newer owner fenced it")
    hooks.release.set()
    with pytest.raises(CheckpointError, match="a newer owner fenced it"):
        adopter.writable()
    # Abandoned at the checkpoint's first step: the owner's files are as it left them.
    assert set(open_wal(LocalStorage(), directory, epoch=2).recover()) == {"ff-1", "ff-2", "ff-3"}


def test_without_a_checkpoint_to_take_writable_returns_at_once(tmp_path):
    directory = str(tmp_path / "wal")
    an_owners_wal(directory)
    owner = open_wal(LocalStorage(), directory)
    assert set(owner.recover(checkpoint_beside=True)) == {"ff-1", "ff-2", "ff-3"}
    assert not owner.last_recovery.checkpoint_reasons
    owner.writable()
    owner.update([Put(make_record(4))])
    owner.close()
