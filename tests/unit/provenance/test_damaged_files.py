"""Damaged and forged files the provenance fuzz test (`test_provenance_fuzz`) found
answered with something else than a `ProvenanceError`, each fixed, as plain cases:

* a tantivy segment file of an index shard with a damaged byte: tantivy read it
  unchecked and raised ValueError, panicked (PanicException, not even an Exception),
  or aborted the process on an allocation the damaged offset asked for (and a reader
  reloading itself from a tantivy thread whenever meta.json changed read it again);
* a damaged `meta.json` or `shard.json`: ValueError, JSONDecodeError,
  UnicodeDecodeError, TypeError from a JSON parser, or a manifest of strings;
* a damaged `layout.json`: JSONDecodeError, KeyError, UnicodeDecodeError, a
  ValueError from the configuration, or one container per letter of a string;
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from repositories.provenance import CorruptFileError, ProvenanceRepository

from .conftest import event, make_config


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
    for open_ in (lambda: ProvenanceRepository(config, clock=clock), lambda: ProvenanceRepository.open(config.containers[0])):
        with pytest.raises(CorruptFileError) as error:
            open_()
        assert error.value.path == str(path) and "index is built from the event files" in str(error.value)


# The byte before the tantivy footer of a doc store (`.store`) file, counted back from
# the footer: the doc store's own footer sits there (its skip index offset, version, compressor).
@pytest.mark.parametrize("back, value, before", [
    (24, 0x7F, "the process aborted: memory allocation of 576460752303423496 bytes failed"),
    (16, 0xFF, "PanicException: unknown compressor id 255"),
    (28, 0xFF, "ValueError: Invalid doc store version 255"),
])
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


@pytest.mark.parametrize("content", [b'{"created_ms": 1, "closed": fa', b'{"created_ms": 1, "closed": "no", "files": {}}',
                                     b"\xff", b"[]"])
def test_a_damaged_shard_manifest_is_refused(repository_files, clock, content):
    path = shard_file(repository_files, "shard.json")
    path.write_bytes(content)  # before: JSONDecodeError, UnicodeDecodeError, TypeError; or a manifest of strings
    opening_refuses(repository_files, clock, path)


@pytest.mark.parametrize("content", [b'{"format": 1, "containers": ["/tmp/c0"', b'{"format": 1}', b'\xc3(',
                                     b'{"format": 1, "containers": "/tmp/c0"}', b'{"format": 1, "containers": []}'])
def test_a_damaged_layout_is_refused_by_a_read_only_opening(repository_files, content):
    path = Path(repository_files.containers[0], "layout.json")
    path.write_bytes(content)  # before: JSONDecodeError, KeyError, UnicodeDecodeError; one container per letter
    with pytest.raises(CorruptFileError) as error:
        ProvenanceRepository.open(repository_files.containers[0])
    assert error.value.path == str(path)
