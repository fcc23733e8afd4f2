"""FlowFile ids: canonical version-4 UUID text, never repeated in a process, and a
new random half after a fork."""

from __future__ import annotations

import os
import uuid

from flow import identifiers
from flow.identifiers import new_uuid


def test_ids_are_canonical_version_4_uuids_and_distinct():
    ids = [new_uuid() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    for text in ids[:100] + ids[-100:]:
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # lower-case, dashed, 36 characters
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_the_counter_wraps_inside_its_62_bits_without_touching_the_variant(monkeypatch):
    import itertools

    monkeypatch.setattr(identifiers, "_COUNTER", itertools.count((1 << 62) - 1))
    last, wrapped = new_uuid(), new_uuid()
    assert uuid.UUID(last).variant == uuid.RFC_4122 and uuid.UUID(wrapped).variant == uuid.RFC_4122
    assert last.endswith("bfff-ffffffffffff") and wrapped.endswith("8000-000000000000")


def test_a_forked_child_draws_a_new_random_half():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.write(write, new_uuid().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 100).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert child[:19] != new_uuid()[:19]
