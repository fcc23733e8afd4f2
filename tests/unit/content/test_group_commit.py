"""Group commit of content: a sync of a resource runs while the writers of the next
commits go on, and one sync covers every commit that waited for it
(`repositories.content.syncing.SyncRound`).

The resource files here are held in their sync by the test (`HeldSyncStorage`), as
an hsync waits for its DataNodes, so that what happens meanwhile is seen step by
step: claims completed in the held resource, commits arriving, a sync that fails.
"""

from __future__ import annotations

import threading

import pytest

from repositories.content import (
    ArchivePolicy,
    ContentRepository,
    ContentRepositoryConfig,
    ContentRepositoryError,
)
from repositories.content.format import CHECKSUM_SUFFIX
from repositories.content.resource_io import StorageResourceIO
from repositories.storage import LocalStorage, StorageUnavailable

# One resource takes every claim of a test (none fills it); one sync per commit.
CONFIG = ContentRepositoryConfig(
    sync_on_close=False,
    close_in_background=True,
    max_appendable_claim_size=1 << 20,
    archive=ArchivePolicy(max_usage=None),
)
WAIT_S = 10.0


class HeldSyncFile:
    """A resource file whose syncs the test can hold, and which counts them: the bytes
    written before each sync began."""

    def __init__(self, inner, storage: HeldSyncStorage):
        self._inner, self._storage = inner, storage
        self.written = 0

    def write(self, data) -> int:
        self.written += len(data)
        return self._inner.write(data)

    def sync_data(self) -> None:
        storage = self._storage
        storage.synced_at.append(self.written)
        if storage.hold.is_set():
            storage.syncing.set()
            assert storage.release.wait(WAIT_S), "the test never let the sync go"
            if storage.fail:
                raise StorageUnavailable(f"cannot hsync {self._inner.path}: the pipeline died (injected)", "")
        self._inner.sync_data()

    def sync(self) -> None:
        self.sync_data()

    def __getattr__(self, name):
        return getattr(self._inner, name)


class HeldSyncStorage(LocalStorage):
    """Local disk whose resource files (not their checksum files) sync through
    `HeldSyncFile`: armed with `hold`, the next sync waits for `release`."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = threading.Event()
        self.syncing = threading.Event()
        self.release = threading.Event()
        self.fail = False
        self.synced_at: list[int] = []

    def create(self, path: str, *, overwrite: bool = False):
        file = super().create(path, overwrite=overwrite)
        return file if path.endswith(CHECKSUM_SUFFIX) else HeldSyncFile(file, self)


def repository(tmp_path) -> tuple[ContentRepository, HeldSyncStorage]:
    storage = HeldSyncStorage()
    return ContentRepository({"c": str(tmp_path / "c")}, StorageResourceIO(storage), CONFIG), storage


def in_thread(action) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = action()
        except BaseException as error:  # noqa: BLE001 - the test reads it
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_claims_are_completed_in_a_resource_while_its_sync_runs_and_one_sync_covers_every_commit_waiting(tmp_path):
    content, storage = repository(tmp_path)
    first = content.write_bytes(b"a" * 1000, sync=False)
    content.sync()  # the resource's file and directory exist and are synced
    syncs_before = len(storage.synced_at)
    second = content.write_bytes(b"b" * 1000, sync=False)
    storage.hold.set()
    held, held_outcome = in_thread(content.sync)
    assert storage.syncing.wait(WAIT_S)

    # The sync holds the resource's file: claims still complete in that very resource.
    writes, written = in_thread(lambda: [content.write_bytes(bytes([n]) * 500, sync=False) for n in range(3)])
    writes.join(WAIT_S)
    assert not writes.is_alive(), "a writer waited for a sync of its resource"
    later = written["result"]
    assert {claim.resource for claim in later} == {first.resource}
    assert later[0].offset == second.offset + second.length

    # Two more commits arrive while the sync is held: they wait for it, then share one.
    waiting = [in_thread(content.sync) for _ in range(2)]
    for thread, _ in waiting:
        thread.join(0.2)
        assert thread.is_alive(), "a commit returned before the bytes it needs were synced"
    storage.hold.clear()
    storage.release.set()
    for thread, outcome in [(held, held_outcome), *waiting]:
        thread.join(WAIT_S)
        assert not thread.is_alive() and "error" not in outcome, outcome
    synced_at = storage.synced_at[syncs_before:]
    end = later[-1].offset + later[-1].length
    # The held sync covered the second claim; one more covered the three after it, for both commits.
    assert synced_at == [second.offset + second.length, end]
    content.check_durable([first, second, *later])
    assert [content.read(claim) for claim in later] == [bytes([n]) * 500 for n in range(3)]
    content.close()


def test_a_sync_that_fails_leaves_no_claim_it_held_or_that_waited_for_it_looking_durable(tmp_path):
    content, storage = repository(tmp_path)
    content.write_bytes(b"a" * 1000, sync=False)
    content.sync()
    claim = content.write_bytes(b"b" * 1000, sync=False)
    storage.hold.set()
    storage.fail = True
    held, held_outcome = in_thread(content.sync)
    assert storage.syncing.wait(WAIT_S)
    during = content.write_bytes(b"c" * 1000, sync=False)  # completed while the failing sync runs
    waiting, waiting_outcome = in_thread(content.sync)
    waiting.join(0.2)
    assert waiting.is_alive()
    storage.release.set()
    for thread in (held, waiting):
        thread.join(WAIT_S)
        assert not thread.is_alive()
    # The lost ranges are told to one sync (whichever asks first); the other commit
    # learns of them from `check_durable`, which every commit asks before its commit point.
    outcomes = (held_outcome, waiting_outcome)
    assert all("result" in outcome or isinstance(outcome.get("error"), ContentRepositoryError) for outcome in outcomes)
    assert any("error" in outcome for outcome in outcomes), outcomes
    for lost in (claim, during):
        with pytest.raises(ContentRepositoryError):
            content.check_durable([lost])
    # The failed resource was retired: the next claim and its commit go to a new one.
    storage.hold.clear()
    storage.fail = False
    after = content.write_bytes(b"d" * 10, sync=False)
    content.sync()
    assert after.resource != claim.resource
    content.check_durable([after])
    content.close()
