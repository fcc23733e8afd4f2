"""A repository the previous release wrote (tantivy shards that index uuids and filenames
too, tests/data/provenance-v1) answers as that release did, before and after the
current code adds a shard of its own kind beside them."""

from __future__ import annotations

from pathlib import Path

import pytest

from repositories.provenance import ProvenanceQuery, ProvenanceRepository

from .conftest import event
from .samples import answers, answers_of, config_of, copied

ANSWERS = answers("provenance-v1")


@pytest.fixture
def old_repository(tmp_path) -> Path:
    return copied("provenance-v1", tmp_path)


def test_a_read_only_opening_answers_as_the_previous_release(old_repository):
    repository = ProvenanceRepository.open(str(old_repository / "c0"), read_only=True)
    try:
        assert answers_of(repository, ANSWERS) == ANSWERS["queries"]
        lineage = repository.lineage("00000001-0000-4000-8000-000000000001")
        assert sorted(lineage.descendants) == ANSWERS["lineage_descendants_of_1"]
    finally:
        repository.close()


def test_new_events_go_to_a_shard_of_runs_and_old_ones_are_still_found(old_repository, clock):
    repository = ProvenanceRepository(config_of(old_repository), clock=clock)
    try:
        assert answers_of(repository, ANSWERS) == ANSWERS["queries"]
        uuid = "00000000-0000-4000-8000-000000000000"  # the FlowFile of ids 1-6
        repository.register_events([event("ATTRIBUTES_MODIFIED", uuid, attributes_after={"filename": "file-7.txt"})])
        repository.sync()
        shards = repository.index.shards
        assert [s.manifest.uuid_index for s in shards] == ["tantivy"] * 3 + ["runs"]
        assert [run.field for run in shards[-1].manifest.runs] == ["uuid", "filename", "fields"]
        changed = repository.query(ProvenanceQuery(event_type="ATTRIBUTES_MODIFIED"))
        assert [e.event_id for e in changed.events] == [19, 14, 8, 2] and changed.total == 4
        both = repository.query(ProvenanceQuery(flowfile_uuid=uuid))
        assert [e.event_id for e in both.events] == [19, 6, 5, 4, 3, 2, 1] and both.total == 7
        named = repository.query(ProvenanceQuery(filename="file-7.txt"))
        assert [e.event_id for e in named.events] == [19, 8]
    finally:
        repository.close()
    reopened = ProvenanceRepository(config_of(old_repository), clock=clock)
    try:
        assert [e.event_id for e in reopened.query(ProvenanceQuery(filename="file-7.txt")).events] == [19, 8]
    finally:
        reopened.close()
