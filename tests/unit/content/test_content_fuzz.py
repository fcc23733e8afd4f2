"""Fuzzing the content repository's reads on damaged files: a resource of claims
written by the real repository (checksum blocks of 16 bytes, so that a claim has up
to 19) has its resource file or its checksum file damaged (bits flipped, bytes
overwritten, zeroed, inserted or written twice, the file cut short). It lies where it
was written, or archived, or archived with its checksum file left behind by a crash.
Then its claims are read, one is streamed in small reads, the resource is checked as
fsck does, and the claims are read again after a restart's `recover`. The checksum
file is read whole (as every file under 64 KB is), or in windows of 3 records (as a
larger one is: the limits are lowered for the run, so that 34 records take that path).

Each read answers within 2 s and 256 MB with exactly the bytes written, or raises a
`ContentRepositoryError`; a stream that fails has returned only the claim's own bytes
before it failed. fsck's check answers with a `ResourceCheck`: when it finds the
resource verified, every claim its records cover reads back.

About 120 examples; CUSTODY_LONG=1 runs twenty times as many.
"""

from __future__ import annotations

import os
import random
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repositories.content import (
    ArchivePolicy,
    ContentRepositoryConfig,
    ContentRepositoryError,
    checksums,
    open_filesystem_content_repository,
)
from repositories.content.checksum_format import HEADER_SIZE, RECORD_SIZE
from repositories.content.format import CHECKSUM_SUFFIX, archive_directory
from repositories.content.verification import VERIFIED
from tests.damaged_files import damaged_bytes, fuzz_settings, scratch_directory, within_bounds

BLOCK = 16
CONFIG = ContentRepositoryConfig(
    sync_on_close=False,
    checksum_block_size=BLOCK,
    max_appendable_claim_size=1 << 20,
    archive=ArchivePolicy(max_usage=None),
)
_random = random.Random(7)
CONTENTS = [bytes(_random.randrange(256) for _ in range(size)) for size in (13, 0, 16, 1, 17, 100, 300, 40)]
READINGS = {
    "whole": {"WHOLE_FILE_BYTES": checksums.WHOLE_FILE_BYTES, "WINDOW_RECORDS": checksums.WINDOW_RECORDS},
    "in windows": {"WHOLE_FILE_BYTES": 0, "WINDOW_RECORDS": 3},
}  # the limits of `checksums`
PLACES = ("live", "archived", "archived, checksums left live")


class Resource:
    """The written resource: its claims, the pristine bytes of its two files, and where
    they go in each place."""

    def __init__(self, root: str):
        writer = open_filesystem_content_repository({"c": root}, CONFIG)
        self.claims = [writer.write_bytes(content) for content in CONTENTS]
        writer.sync()
        writer.close()
        (self.resource,) = {claim.resource for claim in self.claims}
        self.root = root
        live = os.path.join(root, str(self.resource.section))
        archived = archive_directory(root, self.resource.section)
        os.makedirs(archived, exist_ok=True)
        name = self.resource.id
        self.paths = {
            "data": {"live": os.path.join(live, name), "archived": os.path.join(archived, name)},
            "checksums": {
                "live": os.path.join(live, name + CHECKSUM_SUFFIX),
                "archived": os.path.join(archived, name + CHECKSUM_SUFFIX),
            },
        }
        self.pristine = {kind: open(paths["live"], "rb").read() for kind, paths in self.paths.items()}
        first_records = [
            HEADER_SIZE + RECORD_SIZE * sum(-(-len(c) // BLOCK) for c in CONTENTS[:i]) for i in range(len(CONTENTS))
        ]
        self.landmarks = {
            "data": tuple(claim.offset for claim in self.claims),
            "checksums": (8, 10, 14, HEADER_SIZE, *first_records, len(self.pristine["checksums"]) - RECORD_SIZE),
        }

    def place(self, place: str, files: dict) -> None:
        """Remove the resource's files from everywhere; write `files` where `place` says."""
        for paths in self.paths.values():
            for path in paths.values():
                if os.path.exists(path):
                    os.unlink(path)
        where = {
            "data": "live" if place == "live" else "archived",
            "checksums": "archived" if place == "archived" else "live",
        }
        for kind, content in files.items():
            with open(self.paths[kind][where[kind]], "wb") as handle:
                handle.write(content)


@pytest.fixture(scope="module")
def written():
    with scratch_directory() as root:
        resource = Resource(os.path.join(root, "c"))
        assert len(resource.pristine["checksums"]) == HEADER_SIZE + 34 * RECORD_SIZE  # searched, and many windows
        yield resource


def read_exactly_or_refuse(repository, claim, expected: bytes) -> bool:
    outcome, value = within_bounds(lambda: repository.read(claim), (ContentRepositoryError,))
    assert outcome == "refused" or value == expected, f"wrong bytes read for {claim}"
    return outcome == "returned"


def stream(repository, claim, offset: int, length: int, chunk: int) -> list:
    """The chunks a reader of claim[offset:offset+length] got, in reads of `chunk`
    bytes, until the end or the error that stopped it (returned last)."""
    chunks = []
    try:
        with repository.open_read(claim, offset, length) as reader:
            while piece := reader.read(chunk):
                chunks.append(piece)
    except ContentRepositoryError as error:
        chunks.append(error)
    return chunks


@pytest.mark.parametrize("reading", sorted(READINGS))
@fuzz_settings(60)
@given(data=st.data(), place=st.sampled_from(PLACES), kind=st.sampled_from(["data", "checksums"]))
def test_damaged_content_reads_exactly_or_is_refused(written, reading, data, place, kind):
    damaged = data.draw(damaged_bytes(written.pristine[kind], written.landmarks[kind]), label="damage")
    written.place(place, {**written.pristine, kind: damaged.content})
    with mock.patch.multiple(checksums, **READINGS[reading]):
        read_and_restart(written, data)


def read_and_restart(written, data) -> None:
    repository = open_filesystem_content_repository({"c": written.root}, CONFIG)
    try:
        readable = [
            read_exactly_or_refuse(repository, claim, content)
            for claim, content in zip(written.claims, CONTENTS, strict=False)
        ]

        index = data.draw(st.integers(0, len(CONTENTS) - 1), label="claim streamed")
        claim, content = written.claims[index], CONTENTS[index]
        chunk = data.draw(st.sampled_from([1, 7, BLOCK, 3 * BLOCK + 1, 1 << 20]), label="chunk")
        offset = data.draw(st.integers(0, claim.length), label="from")
        length = data.draw(st.integers(0, min(claim.length - offset, 64 * chunk)), label="length")
        _, chunks = within_bounds(lambda: stream(repository, claim, offset, length, chunk), ())
        got = b"".join(piece for piece in chunks if isinstance(piece, bytes))
        assert got == content[offset : offset + len(got)], "a stream returned bytes that were not written"
        assert chunks and isinstance(chunks[-1], ContentRepositoryError) or len(got) == length

        _, check = within_bounds(lambda: repository.check_resource(written.resource), (ContentRepositoryError,))
        if not isinstance(check, ContentRepositoryError) and check.status == VERIFIED:
            for claim, was_read in zip(written.claims, readable, strict=False):
                assert was_read or claim.offset + claim.length > check.covered, f"{claim} verified, yet unreadable"
    finally:
        repository.close()

    restarted = open_filesystem_content_repository({"c": written.root}, CONFIG)
    try:
        within_bounds(lambda: restarted.recover(written.claims), (ContentRepositoryError,))
        for claim, content in zip(written.claims, CONTENTS, strict=False):
            read_exactly_or_refuse(restarted, claim, content)
    finally:
        restarted.close()
