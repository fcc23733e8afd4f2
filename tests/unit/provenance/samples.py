"""The checked-in repositories of earlier releases (tests/data/provenance-*): each is
copied into a test's directory, opened with the configuration that wrote it (two
containers, a journal each, nothing aged off), and asked the queries its
answers.json records with the answers that release gave."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from repositories.provenance import ProvenanceConfig, ProvenanceQuery, ProvenanceRepository

DATA = Path(__file__).resolve().parents[2] / "data"


def answers(name: str) -> dict:
    """Sample `name`'s recorded answers."""
    return json.loads((DATA / name / "answers.json").read_text())


def copied(name: str, tmp_path: Path) -> Path:
    """A copy of sample `name` under `tmp_path`, to open writable."""
    shutil.copytree(DATA / name, tmp_path / name)
    return tmp_path / name


def config_of(root: Path) -> ProvenanceConfig:
    """The configuration the samples were written with, on the copy at `root`."""
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


def answers_of(repository: ProvenanceRepository, recorded: dict) -> list[dict]:
    """What `repository` answers to the queries of `recorded` (a sample's answers), in
    the form they were recorded in."""
    found = []
    for asked in recorded["queries"]:
        result = repository.query(ProvenanceQuery(**asked["query"]))
        found.append({"query": asked["query"], "ids": [e.event_id for e in result.events], "total": result.total})
    return found
