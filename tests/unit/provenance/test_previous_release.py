"""A repository the previous release wrote (tantivy shards that index uuids and filenames
too, tests/data/provenance-v1) answers as that release did, before and after the
current code adds a shard of its own kind beside them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from repositories.provenance import ProvenanceConfig, ProvenanceQuery, ProvenanceRepository

from .conftest import event

DATA = Path(__file__).resolve().parents[2] / "data" / "provenance-v1"
ANSWERS = json.loads((DATA / "answers.json").read_text())


@pytest.fixture
def old_repository(tmp_path) -> Path:
    shutil.copytree(DATA, tmp_path / "provenance-v1")
    return tmp_path / "provenance-v1"


def config_of(root: Path) -> ProvenanceConfig:
    return ProvenanceConfig(
        containers=(str(root / "c0"), str(root / "c1")),
        journals_per_container=1,
        rollover_check_interval_s=None,
        age_off_interval_s=None,
        max_age_s=None,
        max_bytes=None,
        index_heap_bytes=15_000_000,
        index_threads=1,
        compression_threads=1,
    )


def answers_of(repository: ProvenanceRepository) -> list[dict]:
    answers = []
    for asked in ANSWERS["queries"]:
        result = repository.query(ProvenanceQuery(**asked["query"]))
        answers.append({"query": asked["query"], "ids": [e.event_id for e in result.events], "total": result.total})
    return answers


def test_a_read_only_opening_answers_as_the_previous_release(old_repository):
    repository = ProvenanceRepository.open(str(old_repository / "c0"), read_only=True)
    try:
        assert answers_of(repository) == ANSWERS["queries"]
        lineage = repository.lineage("00000001-0000-4000-8000-000000000001")
        assert sorted(lineage.descendants) == ANSWERS["lineage_descendants_of_1"]
    finally:
        repository.close()


def test_new_events_go_to_a_shard_of_runs_and_old_ones_are_still_found(old_repository, clock):
    repository = ProvenanceRepository(config_of(old_repository), clock=clock)
    try:
        assert answers_of(repository) == ANSWERS["queries"]
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
