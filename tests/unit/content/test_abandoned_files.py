"""A claim that reads short is read again once, after the resource IO has had the
chance to finish a file its dead writer left open (on local disk, with an IO that
plays an HDFS file still under construction; the real HDFS case is in
tests/integration/test_content_hdfs.py)."""

import pytest

from repositories.content import ContentRepository, ContentTruncated, ContentUnavailable
from repositories.content.resource_io import LocalResourceIO
from repositories.storage.leases import LeaseRecoveryTimeout


class UnderConstruction(LocalResourceIO):
    """Reports `readable` bytes of every file until `finish_abandoned` closes it."""

    def __init__(self, readable=0, finishes=True, fails=False):
        super().__init__()
        self.readable, self.finishes, self.fails = readable, finishes, fails
        self.finished = []

    def open_read(self, root, resource, archived):
        handle, size = super().open_read(root, resource, archived)
        return handle, (size if resource in self.finished else min(size, self.readable))

    def finish_abandoned(self, root, resource):
        if self.fails:
            raise LeaseRecoveryTimeout(f"{root}/{resource.relative_path}", 60.0, 1)
        if self.finishes:
            self.finished.append(resource)
        return self.finishes


def repository_over(tmp_path, resource_io):
    return ContentRepository({"c": str(tmp_path / "c")}, resource_io)


def test_a_short_file_is_finished_once_and_read_in_full(tmp_path):
    resource_io = UnderConstruction(readable=3)
    repository = repository_over(tmp_path, resource_io)
    claim = repository.write_bytes(b"0123456789")
    assert repository.read(claim) == b"0123456789"
    assert resource_io.finished == [claim.resource]
    assert repository.read(claim) == b"0123456789"  # long enough now: not finished again
    assert resource_io.finished == [claim.resource]
    repository.close()


def test_a_claim_inside_the_readable_bytes_does_not_touch_the_lease(tmp_path):
    resource_io = UnderConstruction(readable=4)
    repository = repository_over(tmp_path, resource_io)
    first = repository.write_bytes(b"abcd", sync=False)
    second = repository.write_bytes(b"efgh", sync=False)
    assert second.resource == first.resource and second.offset == 4  # one file, read short
    assert repository.read(first) == b"abcd"
    assert resource_io.finished == []
    assert repository.read(second) == b"efgh"
    assert resource_io.finished == [first.resource]
    repository.close()


def test_a_file_that_cannot_be_finished_reads_as_truncated_naming_the_readable_bytes(tmp_path):
    repository = repository_over(tmp_path, UnderConstruction(readable=2, finishes=False))
    claim = repository.write_bytes(b"0123456789")
    with pytest.raises(ContentTruncated, match="holds 2 readable bytes but the claim ends at 10"):
        repository.read(claim)
    repository.close()


def test_a_lease_that_is_not_recovered_in_time_is_unavailable_content_naming_the_file(tmp_path):
    repository = repository_over(tmp_path, UnderConstruction(readable=0, fails=True))
    claim = repository.write_bytes(b"0123456789")
    with pytest.raises(ContentUnavailable, match=f"the lease on .*{claim.resource.id}.* was not recovered"):
        repository.read(claim)
    repository.close()
