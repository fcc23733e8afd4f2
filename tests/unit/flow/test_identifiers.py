"""FlowFile ids: canonical version-4 UUID text, never repeated in a process, and a
new random half after a fork."""

from __future__ import annotations

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


def test_after_a_fork_the_random_half_is_drawn_again(monkeypatch):
    # What the child of a fork runs (registered with os.register_at_fork); called here
    # directly, since forking the test process, whose other threads may hold locks,
    # can leave the child hung.
    monkeypatch.setattr(identifiers, "_HIGH", identifiers._HIGH)
    monkeypatch.setattr(identifiers, "_COUNTER", identifiers._COUNTER)
    before = new_uuid()
    identifiers._reseed_after_fork()
    after = new_uuid()
    assert after[:19] != before[:19]
    assert uuid.UUID(after).version == 4 and uuid.UUID(after).variant == uuid.RFC_4122
