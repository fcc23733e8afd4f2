"""One exception root for the provenance repository, each error carrying its context.

Messages say what happened and what the operator can do about it.
"""

from __future__ import annotations


class ProvenanceError(Exception):
    """Root of every error raised by `repositories.provenance`."""


class InvalidEventError(ProvenanceError, ValueError):
    """An event does not satisfy the rules of its type (see `event`)."""


class CorruptBlockError(ProvenanceError):
    """One compressed block of an event file cannot be read.

    Only the events of this block are affected: every other block of the file is
    framed and checksummed on its own and still reads.
    """

    def __init__(
        self,
        path: str,
        block_index: int,
        offset: int,
        reason: str,
        first_event_id: int | None = None,
        event_count: int | None = None,
    ):
        self.path = path
        self.block_index = block_index
        self.offset = offset
        self.reason = reason
        self.first_event_id = first_event_id
        self.event_count = event_count
        if first_event_id is not None and event_count:
            ids = f"events {first_event_id}..{first_event_id + event_count - 1}"
        else:
            ids = "its events"
        super().__init__(
            f"block {block_index} at offset {offset} of event file {path} is damaged "
            f"({reason}); {ids} cannot be read, every other block still reads. "
            "Restore the file from a replica or let age-off remove it"
        )


class CorruptFileError(ProvenanceError):
    """A whole provenance file (header, table of contents, journal header, a file of an
    index shard, layout.json) is unreadable."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path} is damaged: {reason}")


class EventNotFoundError(ProvenanceError, KeyError):
    """No event with this id: never written, not rolled over yet, or aged off."""

    def __init__(self, event_id: int, reason: str):
        self.event_id = event_id
        self.reason = reason
        super().__init__(f"provenance event {event_id} not found: {reason}")

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class RepositoryClosedError(ProvenanceError):
    """The repository was closed (or failed) and refuses new events."""
