"""Per-processor statistics over HTTP (a real uvicorn on 127.0.0.1): a standalone
node's `GET /api/v1/node/processors` gives each processor its five minutes, its figures
since start and its last bulletin, and `/metrics` the same figures as counters, all
equal to what the flow did."""

from __future__ import annotations

import json
import urllib.request

import pytest

from cluster.admin.serve import serve
from cluster.admin.settings import AdminSettings
from cluster.node.standalone import StandaloneNode
from flow.loading import parse_flow
from tests.prometheus_text import families, naming_problems, value

FLOWFILES = 6
TEXT = "abcd"  # each FlowFile's content
FLOW = {
    "name": "processor-stats",
    "processors": [
        {
            "id": "generate",
            "type": "GenerateFlowFile",
            "properties": {"batch_size": 3, "max_count": FLOWFILES, "custom_text": TEXT},
        },
        {"id": "tag", "type": "UpdateAttribute", "properties": {"stage": "tagged"}},
        {"id": "done", "type": "UpdateAttribute", "properties": {"stage": "done"}, "auto_terminate": ["success"]},
    ],
    "connections": [{"source": "generate", "destination": "tag"}, {"source": "tag", "destination": "done"}],
}


@pytest.fixture
def standalone(tmp_path):
    node = StandaloneNode(parse_flow(FLOW), str(tmp_path / "node"))
    node.start()
    server = serve(AdminSettings(bind="127.0.0.1", port=0), node.control())
    yield node, server.url
    server.stop()
    node.stop()


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        return response.read()


def test_the_processors_endpoint_and_the_metrics_give_what_the_flow_did(standalone):
    node, url = standalone
    size = FLOWFILES * len(TEXT)

    def done_took_all() -> bool:
        return node.engine.status()["processors"]["done"]["since_start"]["in_count"] == FLOWFILES

    assert node.wait_until(lambda: done_took_all() and node.engine.is_idle(), 30)
    (shard, processors), *others = json.loads(get(f"{url}/api/v1/node/processors")).items()
    assert shard == "local" and not others
    by_id = {p["processor"]: p for p in processors}
    counted = ("in_count", "in_bytes", "read_bytes", "written_bytes", "out_count", "out_bytes", "failures")
    expected = {
        "generate": (0, 0, 0, size, FLOWFILES, size, 0),
        "tag": (FLOWFILES, size, 0, 0, FLOWFILES, size, 0),
        "done": (FLOWFILES, size, 0, 0, 0, 0, 0),  # auto-terminated: dropped, not out
    }
    assert {pid: tuple(by_id[pid]["since_start"][k] for k in counted) for pid in expected} == expected
    for pid, processor in by_id.items():
        assert processor["five_minutes"] == processor["since_start"], pid
        assert processor["since_start"]["tasks"] >= 1 and processor["last_bulletin"] is None, pid

    found = families(get(f"{url}/metrics").decode())
    assert not naming_problems(found), naming_problems(found)
    labels = {"shard": "local", "processor": "tag", "type": "UpdateAttribute"}
    assert value(found, "custody_processor_flowfiles_in", "_total", **labels) == FLOWFILES
    assert value(found, "custody_processor_in_bytes", "_total", **labels) == size
    assert value(found, "custody_processor_flowfiles_out", "_total", **labels) == FLOWFILES
    assert value(found, "custody_processor_written_bytes", "_total", shard="local", processor="generate") == size
    assert value(found, "custody_processor_flowfiles_out", "_total", shard="local", processor="done") == 0
