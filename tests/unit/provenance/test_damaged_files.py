"""Damaged and forged files the provenance fuzz test (`test_provenance_fuzz`) found
answered with something else than a `ProvenanceError`, each fixed, as plain cases:

* a tantivy segment file of an index shard with a damaged byte: tantivy read it
  unchecked and raised ValueError, panicked (PanicException, not even an Exception),
  or aborted the process on an allocation the damaged offset asked for;
* a damaged `meta.json`, `shard.json` or `layout.json`: ValueError, JSONDecodeError,
  UnicodeDecodeError from a JSON parser;
* a journal frame or an event-file block whose Arrow message is forged behind valid
  checksums: an EOFError from Arrow; a merge that failed (and stopped the repository,
  at every restart) or a crash of the process (SIGSEGV) on offsets that point past
  their buffer;
* a block whose zstd frame states a larger size than its header: decompressed to that
  size, whatever the header said.
"""

from __future__ import annotations

import os
import struct
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pytest
import zstandard

from repositories.provenance import (
    CorruptBlockError,
    CorruptFileError,
    EventBatch,
    EventType,
    ProvenanceEvent,
    ProvenanceRepository,
)
from repositories.provenance import event_file_format as eff
from repositories.provenance import journal_format as jf
from repositories.provenance.event_batch import SCHEMA
from repositories.provenance.index import check_segment_files
from repositories.provenance.journal import JournalWriter

from .conftest import event, make_config
from .forging import forged_event_file


@pytest.fixture
def repository_files(tmp_path, clock):
    """A closed repository with one event file and one index shard; its config."""
    config = make_config(tmp_path, block_bytes=2048)
    repository = ProvenanceRepository(config, clock=clock)
    repository.register_events([event("CREATE", f"u{n % 3}", details="d" * 40) for n in range(30)])
    repository.close()
    return config


def shard_file(config, suffix: str) -> Path:
    (path,) = Path(config.containers[0], "index").glob(f"shard-*/*{suffix}")
    return path


def opening_refuses(config, clock, path: Path) -> None:
    for opening in (
        lambda: ProvenanceRepository(config, clock=clock),
        lambda: ProvenanceRepository.open(config.containers[0]),
    ):
        with pytest.raises(CorruptFileError) as error:
            opening()
        assert error.value.path == str(path) and "index is built from the event files" in str(error.value)


# The byte before the tantivy footer of a doc store (`.store`) file, counted back from
# the footer: the doc store's own footer sits there (its skip index offset, version, compressor).
@pytest.mark.parametrize(
    "back, value, before",
    [
        (24, 0x7F, "the process aborted: memory allocation of 576 PB failed"),
        (16, 0xFF, "PanicException: unknown compressor id 255"),
        (28, 0xFF, "ValueError: Invalid doc store version 255"),
    ],
)
def test_a_damaged_segment_file_is_refused_before_tantivy_reads_it(repository_files, clock, back, value, before):
    path = shard_file(repository_files, ".store")
    data = bytearray(path.read_bytes())
    footer_length, _magic = struct.unpack("<II", data[-8:])
    data[len(data) - 8 - footer_length - back] = value
    path.write_bytes(data)
    opening_refuses(repository_files, clock, path)


def test_a_damaged_meta_json_is_refused(repository_files, clock):
    path = shard_file(repository_files, "meta.json")
    path.write_bytes(path.read_bytes()[:-40])  # before: ValueError from tantivy ("EOF while parsing")
    opening_refuses(repository_files, clock, path)


@pytest.mark.parametrize(
    "content", [b'{"created_ms": 1, "closed": fa', b"\xff", b"[]", b'{"created_ms": 1, "closed": "no", "files": {}}']
)
def test_a_damaged_shard_manifest_is_refused(repository_files, clock, content):
    path = shard_file(repository_files, "shard.json")
    path.write_bytes(content)  # before: JSONDecodeError, UnicodeDecodeError, TypeError; or a manifest of strings
    opening_refuses(repository_files, clock, path)


@pytest.mark.parametrize(
    "content",
    [
        b'{"format": 1, "containers": ["/tmp/c0"',
        b'{"format": 1}',
        b"\xc3(",
        b'{"format": 1, "containers": "/tmp/c0"}',
        b'{"format": 1, "containers": []}',
    ],
)
def test_a_damaged_layout_is_refused_by_a_read_only_opening(repository_files, content):
    path = Path(repository_files.containers[0], "layout.json")
    path.write_bytes(content)  # before: JSONDecodeError, KeyError, UnicodeDecodeError; one container per letter
    with pytest.raises(CorruptFileError) as error:
        ProvenanceRepository.open(repository_files.containers[0])
    assert error.value.path == str(path)


def test_a_layout_naming_a_relative_or_missing_container_is_refused_by_a_read_only_opening(repository_files):
    path = Path(repository_files.containers[0], "layout.json")
    written = path.read_bytes()
    first = repository_files.containers[0].encode()
    # The fuzz test's find: one bit flipped turned "/dev/shm/..." into ".dev/shm/...".
    for damaged in (written.replace(first, b"." + first[1:]), written.replace(first, first + b"-gone")):
        path.write_bytes(damaged)
        with pytest.raises(CorruptFileError, match="not existing absolute directories") as error:
            ProvenanceRepository.open(repository_files.containers[0])
        assert error.value.path == str(path)
    path.write_bytes(written)
    ProvenanceRepository.open(repository_files.containers[0]).close()


def forged_message(first_id: int = 45, count: int = 3) -> bytes:
    """An Arrow message of `count` events from `first_id` whose event_type offsets end a
    GB past their data."""
    events = [ProvenanceEvent(EventType.CREATE, f"uuid-{n:02d}", "component") for n in range(count)]
    message = EventBatch.from_events(events, now_ms=1).with_ids(first_id).serialize().to_pybytes()
    offsets = struct.pack(f"<{count + 1}i", *range(0, 6 * count + 1, 6))  # "CREATE" `count` times
    assert message.count(offsets) == 1
    return message.replace(offsets, offsets[:-4] + struct.pack("<i", 1 << 30))


def test_the_forged_message_is_read_by_arrow_unchecked():
    batch = pa.ipc.read_record_batch(pa.py_buffer(forged_message()), SCHEMA)  # what the readers did
    with pytest.raises(pa.ArrowInvalid):
        batch.validate(full=True)


@pytest.mark.parametrize(
    "payload, before",
    [
        (forged_message(), "ArrowIndexError in the merge: the repository stopped, and again at every restart"),
        (b"\0\0\0\0" + forged_message()[4:], "EOFError: End of Arrow stream"),
    ],
)
def test_a_forged_journal_frame_is_cut_at_recovery(tmp_path, clock, payload, before):
    config = make_config(tmp_path)
    for container in config.containers:
        os.makedirs(os.path.join(container, "journals"))
    path = os.path.join(config.containers[0], "journals", jf.journal_name(40, 0))
    writer = JournalWriter(path, 40, 0)
    writer.append(EventBatch.from_events([event() for _ in range(5)], now_ms=1).with_ids(40))
    writer.close()
    with open(path, "ab") as handle:
        handle.write(jf.pack_frame_header(45, 3, payload) + payload)
    repository = ProvenanceRepository(config, clock=clock)
    try:
        repository.wait_idle(30)
        assert [e.event_id for e in repository.events(0, 100)] == [40, 41, 42, 43, 44]
    finally:
        repository.close()


def event_file_with_block(tmp_path, clock, forge, layer: str = "arrow") -> ProvenanceRepository:
    """A repository whose one event file's first block has its Arrow message (or its
    zstd frame) replaced by `forge(what it was)`, behind valid checksums."""
    config = make_config(tmp_path, block_bytes=2048, containers=(str(tmp_path / "c0"),))
    repository = ProvenanceRepository(config, clock=clock)
    repository.register_events([event("CREATE", "u", details="d" * 40) for _ in range(30)])
    repository.close()
    (prov,) = Path(config.containers[0], "events").glob("*.prov")
    toc = prov.with_suffix(eff.TOC_SUFFIX)
    data, toc_data = forged_event_file(prov.read_bytes(), toc.read_bytes(), 0, layer, forge)
    prov.write_bytes(data)
    toc.write_bytes(toc_data)
    return ProvenanceRepository(config, clock=clock)


def test_a_forged_block_is_a_corrupt_block(tmp_path, clock):
    def forge(message: bytes) -> bytes:
        block = pa.ipc.read_record_batch(pa.py_buffer(message), SCHEMA)
        return forged_message(block.column("id")[0].as_py(), block.num_rows)

    repository = event_file_with_block(tmp_path, clock, forge)
    try:
        with pytest.raises(CorruptBlockError, match="not an Arrow record batch"):
            repository.events(0, 100)  # before: SIGSEGV
        assert repository.events(0, 100, skip_damaged=True)  # the other blocks still read
    finally:
        repository.close()


def zstd_bomb(size: int) -> bytes:
    """A zstd frame of `size` zero bytes that says so, made without holding them."""
    compressor = zstandard.ZstdCompressor().compressobj(size=size)
    return b"".join(compressor.compress(bytes(1 << 20)) for _ in range(size >> 20)) + compressor.flush()


def test_a_block_whose_zstd_frame_states_another_size_is_refused_before_it_is_decompressed(tmp_path, clock):
    repository = event_file_with_block(tmp_path, clock, lambda _frame: zstd_bomb(300 << 20), layer="zstd")
    try:
        tracemalloc.start()
        with pytest.raises(CorruptBlockError, match="zstd frame holds 314572800 bytes"):
            repository.get(1)  # before: 300 MB allocated, then an EOFError from Arrow
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 16 << 20
    finally:
        repository.close()


def test_a_segment_file_whose_footer_length_is_damaged_is_refused_without_reading_that_much(repository_files, clock):
    path = shard_file(repository_files, ".store")
    path.write_bytes(bytes(8192) + struct.pack("<II", 6000, 1337))  # a footer of 6000 bytes (of a shard: 500 MB)
    opening_refuses(repository_files, clock, path)
    with pytest.raises(CorruptFileError, match="footer is missing or damaged"):
        check_segment_files(str(path.parent))
