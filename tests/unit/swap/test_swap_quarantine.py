"""The swap store's places: a moved directory's records rebased, nothing deleted outside
its own directories, and quarantine (a rename, with the summary saved beside the file)."""

from __future__ import annotations

import os

import pytest

from repositories.swap import CorruptSwapFileError, ForeignSwapFileError, SwapFileMissingError, SwapStore
from repositories.swap import format as fmt
from tests.unit.swap.test_swap_store import records


@pytest.fixture
def store(local_store):
    made = SwapStore(local_store.storage, f"{local_store.root}/shard/swap")
    made.prepare()
    return made


def test_a_location_recorded_in_a_moved_or_copied_directory_is_rebased_by_name(store):
    base = store.directory.rsplit("/", 1)[0]
    assert store.rebase("/old/data/shards/local/swap/q.0.abc.swap") == f"{base}/swap/q.0.abc.swap"
    assert store.rebase("/old/shards/local/swap-quarantine/q.0.abc.swap") == f"{base}/swap-quarantine/q.0.abc.swap"
    here = f"{base}/swap/q.1.abc.swap"
    assert store.rebase(here) == here
    for foreign in ("/old/other/q.0.abc.swap", "/old/swap/notes.txt", "swap/1"):
        assert store.rebase(foreign) == foreign


def test_nothing_outside_the_stores_own_directories_is_ever_deleted(store, tmp_path):
    elsewhere = tmp_path / "original" / "swap"
    elsewhere.mkdir(parents=True)
    victim = elsewhere / "q.0.abc.swap"
    victim.write_bytes(b"the original's swap file")
    with pytest.raises(ForeignSwapFileError, match="left in place"):
        store.delete(str(victim))
    assert victim.read_bytes() == b"the original's swap file"
    summary = store.write("q", records(2))
    assert store.delete(summary.location) and store.locations() == []


def test_a_quarantined_file_keeps_its_bytes_and_its_summary_beside_it(store):
    summary = store.write("q", records(5))
    original = store.storage.read(summary.location)
    moved = store.quarantine(summary.location, summary)
    assert moved == f"{store.quarantine_directory}/{os.path.basename(summary.location)}"
    assert store.locations() == [] and store.quarantined() == [moved] and store.is_quarantined(moved)
    assert store.storage.read(moved) == original
    # Its own summary damaged: the saved one answers, with the claims it had.
    with open(moved, "r+b") as handle:
        handle.write(b"\0" * 16)
    read = store.read_summary(moved)
    assert (read.location, read.count, read.resources) == (moved, 5, summary.resources)
    with pytest.raises(CorruptSwapFileError):
        store.read(moved)
    assert store.delete(moved) and not os.path.exists(moved + ".summary")


def test_a_file_in_the_swap_directory_has_no_saved_summary_to_fall_back_on(store):
    summary = store.write("q", records(2))
    with open(summary.location, "r+b") as handle:
        handle.truncate(10)
    with pytest.raises(CorruptSwapFileError):
        store.read_summary(summary.location)
    with pytest.raises(SwapFileMissingError, match="put the file back at this path"):
        store.quarantine(f"{store.directory}/gone.swap")


def test_a_quarantine_the_wal_refused_is_undone(store):
    summary = store.write("q", records(2))
    moved = store.quarantine(summary.location, summary)
    assert store.unquarantine(moved) == summary.location
    assert store.locations() == [summary.location] and store.quarantined() == []
    assert not os.path.exists(moved + ".summary")


def test_a_saved_summary_is_exactly_one_summary():
    summary = fmt.summarize("x", "q", records(3))
    saved = fmt.pack_saved_summary(summary)
    assert fmt.unpack_saved_summary(saved, "/q/x.swap").resources == summary.resources
    with pytest.raises(CorruptSwapFileError, match="after the summary"):
        fmt.unpack_saved_summary(saved + b"\0", "/q/x.swap")
    for cut in range(len(saved)):
        with pytest.raises(CorruptSwapFileError):
            fmt.unpack_saved_summary(saved[:cut], "/q/x.swap")
