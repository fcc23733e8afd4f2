"""Resource files closed in the background (`close_in_background`, as the HDFS replica
of a clustered node does it): a read of such a resource waits for the close, the
collector leaves it alone until then, and closing the repository waits for it."""

import threading

from repositories.content import ContentRepository, ContentRepositoryConfig
from repositories.content.archive import ArchivePolicy
from repositories.content.resource_io import LocalResourceIO


class HeldClose:
    """A writable file whose close waits until the test lets it go."""

    def __init__(self, file, gate):
        self._file, self._gate = file, gate

    def close(self):
        self._gate.closing.set()
        assert self._gate.release.wait(30), "the test never released the close"
        self._file.close()

    def __getattr__(self, name):
        return getattr(self._file, name)


class Gate:
    def __init__(self):
        self.closing = threading.Event()
        self.release = threading.Event()


class HeldCloseIO(LocalResourceIO):
    def __init__(self):
        super().__init__()
        self.gate = Gate()

    def create(self, root, resource):
        return HeldClose(super().create(root, resource), self.gate)


def repository(tmp_path, resource_io):
    # Every claim fills its resource, so its release retires it and its files close.
    config = ContentRepositoryConfig(
        max_appendable_claim_size=1, close_in_background=True, archive=ArchivePolicy(enabled=False, max_usage=None)
    )
    return ContentRepository({"c": str(tmp_path / "c")}, resource_io, config)


def written_and_closing(tmp_path, data: bytes):
    """A repository whose one claim's resource is being closed, held there by the test."""
    resource_io = HeldCloseIO()
    content = repository(tmp_path, resource_io)
    claim = content.write_bytes(data)  # synced on close, retired, closed in the background
    assert resource_io.gate.closing.wait(10)
    assert claim.resource in content.open_resources()
    return resource_io, content, claim


def test_a_read_of_a_resource_being_closed_waits_for_the_close(tmp_path):
    resource_io, content, claim = written_and_closing(tmp_path, b"payload")

    result = {}
    reader = threading.Thread(target=lambda: result.setdefault("bytes", content.read(claim)))
    reader.start()
    reader.join(0.3)
    assert reader.is_alive() and not result, "the read went ahead of the close"
    resource_io.gate.release.set()
    reader.join(10)
    assert result == {"bytes": b"payload"}
    assert claim.resource not in content.open_resources()
    content.close()


def test_the_collector_leaves_a_resource_alone_until_its_close_is_done(tmp_path):
    resource_io, content, claim = written_and_closing(tmp_path, b"gone soon")
    content.decrement(claim)
    assert content.collect().destroyed == []
    resource_io.gate.release.set()
    assert content.wait_closed(claim.resource, 10)
    assert content.collect().destroyed == [claim.resource]
    content.close()


def test_closing_the_repository_waits_for_the_closes_under_way(tmp_path):
    resource_io, content, claim = written_and_closing(tmp_path, b"x")
    closer = threading.Thread(target=content.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive(), "the repository closed before its resource files did"
    resource_io.gate.release.set()
    closer.join(10)
    assert not closer.is_alive()
    assert claim.resource not in content.open_resources()
