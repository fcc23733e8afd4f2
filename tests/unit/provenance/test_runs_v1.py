"""A repository whose shard holds sorted runs of version 1 (tests/data/provenance-runs-v1:
uuid and filename runs with a time column) answers as the code that wrote it did, read
only, and after the current code indexes new events and merges runs beside them."""

from __future__ import annotations

from pathlib import Path

import pytest

from repositories.provenance import ProvenanceQuery, ProvenanceRepository
from repositories.provenance.sorted_runs import FAN_IN

from .conftest import event
from .samples import answers, answers_of, config_of, copied

ANSWERS = answers("provenance-runs-v1")
T0_MS = 1_700_000_000_000


@pytest.fixture
def old_repository(tmp_path) -> Path:
    return copied("provenance-runs-v1", tmp_path)


def test_a_read_only_opening_answers_as_the_code_of_version_1_runs(old_repository):
    repository = ProvenanceRepository.open(str(old_repository / "c0"), read_only=True)
    try:
        assert answers_of(repository, ANSWERS) == ANSWERS["queries"]
        lineage = repository.lineage("00000001-0000-4000-8000-000000000001")
        assert sorted(lineage.descendants) == ANSWERS["lineage_descendants_of_1"]
    finally:
        repository.close()


def test_runs_of_new_events_merge_with_version_1_runs_and_every_event_is_found(old_repository):
    now = [T0_MS / 1000 + 9 * 600]
    repository = ProvenanceRepository(config_of(old_repository), clock=lambda: now[0])
    uuid = "00000000-0000-4000-8000-000000000000"  # the FlowFile of generations 0, 3 and 6
    try:
        assert answers_of(repository, ANSWERS) == ANSWERS["queries"]
        # Seven more files: with the ninth file's runs, eight of level 0 merge into one.
        for n in range(FAN_IN - 1):
            named = {"filename": f"new-{n}.txt"}
            changed = event("ATTRIBUTES_MODIFIED", uuid, event_time_ms=T0_MS + 10**7 + n, attributes_after=named)
            repository.register_events([changed])
            repository.rollover()
            repository.sync()
        runs = repository.index.shards[-1].manifest.runs
        assert sorted((run.field, run.level) for run in runs) == sorted(
            [(f, 1) for f in ("fields", "filename", "uuid")] * 2
        )
        shard = repository.index.shards[-1]
        columns = {run.files[0]: shard.run_rows(run).schema.names for run in runs if run.field == "uuid"}
        assert columns == {1: ["key", "id", "time_ms"], 33: ["key", "id"]}  # a merge writes this version
        found = repository.query(ProvenanceQuery(flowfile_uuid=uuid, limit=100))
        assert [e.event_id for e in found.events] == [*range(43, 36, -1), 28, 27, 26, 25, 16, 15, 14, 13, 4, 3, 2, 1]
        late = repository.query(ProvenanceQuery(flowfile_uuid=uuid, start_ms=T0_MS + 1801 * 1000, limit=100))
        assert [e.event_id for e in late.events] == [*range(43, 36, -1), 28, 27, 26, 25]
        assert [e.event_id for e in repository.query(ProvenanceQuery(filename="new-3.txt")).events] == [40]
        assert [e.event_id for e in repository.query(ProvenanceQuery(filename="file-13.txt")).events] == [14]
        assert [e.event_id for e in repository.query(ProvenanceQuery(flowfile_uuid="flowfile-4")).events] == [
            20,
            19,
            18,
            17,
        ]
    finally:
        repository.close()
