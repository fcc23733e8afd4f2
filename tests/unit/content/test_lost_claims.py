"""A failed sync is reported once, to whichever session syncs first; the claims it
lost must still be refused to every session that holds them (local disk, a sync
made to fail)."""

import pytest

from repositories.content import ContentRepositoryConfig, ContentWriteFailed
from repositories.content.filesystem import open_filesystem_content_repository
from repositories.storage import StorageError


@pytest.fixture
def repository(tmp_path):
    repository = open_filesystem_content_repository(
        {"c": str(tmp_path / "c")}, ContentRepositoryConfig(sync_on_close=False)
    )
    yield repository
    repository.close()


def break_sync_of(repository, claim):
    resource = repository._open[claim.resource]

    def broken():
        raise StorageError("the device went away", path=resource.claim.relative_path)

    resource.file.sync_data = resource.file.sync = broken


def test_bytes_another_sessions_sync_found_lost_are_refused_to_their_own_session(repository):
    mine = repository.write_bytes(b"x" * 76)  # completed, not yet synced
    break_sync_of(repository, mine)
    with pytest.raises(ContentWriteFailed) as told:  # another session's commit syncs first
        repository.sync()
    report = told.value.__cause__ if told.value.__cause__ is not None else told.value  # the storage error leads
    assert [(resource, start, end) for resource, start, end in report.lost] == [(mine.resource, 0, 76)]
    repository.sync()  # this session's own sync: the loss was already reported
    with pytest.raises(ContentWriteFailed, match="lost"):
        repository.check_durable([mine])
    fresh = repository.write_bytes(b"y" * 10)  # a new resource: nothing lost there
    repository.sync()
    repository.check_durable([fresh])


def test_claims_before_the_last_good_sync_stay_durable(repository):
    synced = repository.write_bytes(b"a" * 10)
    repository.sync()
    repository.check_durable([synced])


@pytest.mark.parametrize("size", [76, 200_000], ids=["buffered", "appended"])
def test_a_claim_finished_after_its_resource_failed_is_refused_not_completed(repository, size):
    """A writer that waited for the resource while a sync of it failed (and so retired
    it, counting the loss up to the claims completed then) must not complete its claim
    on it: the bytes would be in no file, yet no loss would ever be reported for them."""
    earlier = repository.write_bytes(b"e" * 10)
    writer = repository.write()
    assert writer.resource == earlier.resource  # the same resource, appended to
    writer.write(b"x" * size)
    resource = repository._open[earlier.resource]
    repository._table.fail(resource, StorageError("hsync timed out", path=resource.claim.relative_path))
    with pytest.raises(ContentWriteFailed, match="failed while this claim was written"):
        writer.close()
    with pytest.raises(ContentWriteFailed, match="bytes 0..10"):
        repository.sync()  # the loss counted at the failure: the earlier claim only
    with pytest.raises(ContentWriteFailed):
        repository.check_durable([earlier])
    assert repository.claimant_count(earlier) == 1  # the refused claim counted no claimant
