import json

import pytest

from cluster.cli import main
from repositories.provenance import ProvenanceRepository
from repositories.provenance import event_file_format as eff
from repositories.provenance.query import parse_time

from .conftest import event, make_config


@pytest.fixture
def repo_path(tmp_path, clock):
    repo = ProvenanceRepository(make_config(tmp_path), clock=clock)
    t = int(clock() * 1000)
    repo.register_events(
        [
            event("RECEIVE", "p", component_id="get", attributes_after={"filename": "in.csv"}, event_time_ms=t),
            event("FORK", "p", parent_uuids=("p",), child_uuids=("k1", "k2"), event_time_ms=t + 1),
            event("SEND", "k1", event_time_ms=t + 2),
        ]
    )
    repo.close()
    return str(tmp_path / "c0")


def test_parse_time_forms():
    assert parse_time("15m", now=1000.0) == (1000 - 900) * 1000
    assert parse_time("1700000000000") == 1700000000000
    assert parse_time("2024-01-01T00:00:00Z") == 1704067200000
    with pytest.raises(ValueError):
        parse_time("yesterday")


def test_query_json_by_uuid_type_and_since(repo_path, capsys):
    assert main(["provenance", "query", repo_path, "--uuid", "k1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [e["event_type"] for e in out["events"]] == ["SEND", "FORK"]
    assert main(["provenance", "query", repo_path, "--type", "receive", "--since", "1700000000000", "--json"]) == 0
    assert [e["flowfile_uuid"] for e in json.loads(capsys.readouterr().out)["events"]] == ["p"]
    assert main(["provenance", "query", repo_path, "--filename", "in.csv"]) == 0
    assert "RECEIVE" in capsys.readouterr().out


def test_lineage_and_inspect(repo_path, capsys, tmp_path):
    assert main(["provenance", "lineage", repo_path, "k2", "--json"]) == 0
    graph = json.loads(capsys.readouterr().out)
    assert graph["ancestors"] == ["p"]
    assert main(["provenance", "inspect", repo_path, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["events"] == 3 and summary["damaged_files"] == 0 and len(summary["shards"]) == 1
    path = summary["files"][0]["path"]
    with open(path, "r+b") as f:  # damage the only block
        f.seek(eff.FILE_HEADER.size + eff.BLOCK_HEADER.size + 3)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 1]))
    assert main(["provenance", "inspect", path]) == 1
    assert "DAMAGED" in capsys.readouterr().out
    assert main(["provenance", "query", repo_path, "--uuid", "p"]) == 1
    assert "damaged" in capsys.readouterr().out
