"""Files whose writer failed or was given up are let go with `discard`: where the storage
can delete a file once it is closed (HDFS: `replication.left_open`), that, else a
delete. Deleted open on HDFS, a file's last block stays counted against its DataNodes'
free space for good, so the WAL's checkpoints and the swap store let go of what they
may have left open that way before they write the same name again."""

from __future__ import annotations

import pytest

from repositories.claims import ResourceClaim
from repositories.content.format import checksum_path, resource_path
from repositories.content.resource_io import StorageResourceIO
from repositories.flowfile import CheckpointError, Put
from repositories.storage import AbandonableStorage, LocalStorage, StorageAbandoned, discard
from repositories.swap.store import SwapStore, SwapWriteError
from tests.storage_faults import Fault, FaultyStorage
from tests.unit.flowfile.helpers import make_record, open_wal


class OnceClosed(FaultyStorage):
    """A storage that, as HDFS's, deletes a file given up open once it is closed: here
    at once, with each path recorded."""

    def __init__(self, inner):
        super().__init__(inner)
        self.let_go: list[str] = []
        self.still_open: set[str] = set()  # what a writer whose close failed left open

    def delete_once_closed(self, path: str) -> None:
        self.let_go.append(path)
        self.inner.delete(path)

    def recover_lease(self, path: str) -> bool:
        return super().recover_lease(path) and path not in self.still_open


def test_discard_deletes_where_the_storage_cannot_wait_for_a_close(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x")
    discard(LocalStorage(), str(path))
    assert not path.exists()
    discard(LocalStorage(), str(path))  # gone already: no error


def test_discard_hands_the_file_to_a_storage_that_deletes_once_closed(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x")
    storage = OnceClosed(LocalStorage())
    discard(storage, str(path))
    assert storage.let_go == [str(path)] and not path.exists()


def test_an_abandoned_storage_refuses_to_let_go_and_a_live_one_passes_it_on(tmp_path):
    inner = OnceClosed(LocalStorage())
    storage = AbandonableStorage(inner, name="n1-7")
    (tmp_path / "a").write_bytes(b"a")
    (tmp_path / "b").write_bytes(b"b")
    discard(storage, str(tmp_path / "a"))
    assert inner.let_go == [str(tmp_path / "a")]
    storage.abandon("incarnation n1-7 is dead")
    with pytest.raises(StorageAbandoned):
        discard(storage, str(tmp_path / "b"))
    assert inner.let_go == [str(tmp_path / "a")] and (tmp_path / "b").exists()


def test_a_swap_file_whose_write_failed_is_let_go(tmp_path):
    storage = OnceClosed(LocalStorage())
    store = SwapStore(storage, str(tmp_path / "swap"))
    store.prepare()
    storage.arm(Fault("sync", "before", path="swap"))
    with pytest.raises(SwapWriteError):
        store.write("q", [make_record(1)])
    [location] = storage.let_go
    assert location.startswith(str(tmp_path / "swap")) and store.locations() == []


def wal_whose_next_close_fails(tmp_path, path: str):
    """A WAL holding one record, whose next close of a file named like `path` fails."""
    storage = OnceClosed(LocalStorage())
    wal = open_wal(storage, str(tmp_path / "wal"))
    wal.recover()
    wal.update([Put(make_record(1))])
    storage.arm(Fault("close", "before", path=path))
    return storage, wal


def test_a_checkpoint_lets_go_of_a_journal_that_would_not_close_before_writing_it_again(tmp_path):
    storage, wal = wal_whose_next_close_fails(tmp_path, "journal")
    wal.checkpoint()
    [journal] = storage.let_go
    assert "journal" in journal
    wal.update([Put(make_record(2))])  # on the journal written again
    assert storage.let_go == [journal]
    wal.close()
    reopened = open_wal(LocalStorage(), str(tmp_path / "wal"))
    assert sorted(reopened.recover()) == sorted([make_record(1).id, make_record(2).id])


def test_a_checkpoint_lets_go_of_its_snapshot_if_it_was_not_written_in_full(tmp_path):
    storage, wal = wal_whose_next_close_fails(tmp_path, "partial")
    with pytest.raises(CheckpointError):
        wal.checkpoint()
    [partial] = storage.let_go
    assert partial.endswith(".partial")
    wal.checkpoint()  # written again in full
    wal.close()
    assert sorted(open_wal(LocalStorage(), str(tmp_path / "wal")).recover()) == [make_record(1).id]


def test_a_resource_collected_while_still_open_is_let_go_and_a_closed_one_deleted(tmp_path):
    """A resource whose close failed (its pipeline broke) is collected like any other."""
    storage = OnceClosed(LocalStorage())
    io = StorageResourceIO(storage)
    root = str(tmp_path / "c1")
    io.prepare_container(root)
    left, closed = ResourceClaim("c1", 3, "r-1"), ResourceClaim("c1", 3, "r-2")
    for resource in (left, closed):
        (tmp_path / "c1" / "3").mkdir(exist_ok=True)
        for path in (resource_path(root, resource), checksum_path(root, resource)):
            with open(path, "wb") as file:
                file.write(b"claims")
    storage.still_open = {resource_path(root, left), checksum_path(root, left)}
    assert io.delete(root, left, False) and io.delete(root, closed, False)
    assert sorted(storage.let_go) == sorted(storage.still_open)
    assert list((tmp_path / "c1" / "3").iterdir()) == []
