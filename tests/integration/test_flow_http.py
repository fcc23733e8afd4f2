"""ListenHTTP: answers 200 only once the data is durable in the node, binds 127.0.0.1."""

from __future__ import annotations

import urllib.error
import urllib.request

from cluster.drills.checker import ids_in_directory
from cluster.node.standalone import StandaloneNode
from flow.loading import parse_flow


def test_posted_data_is_durable_before_the_200_and_reaches_the_sink(tmp_path):
    out = tmp_path / "out"
    definition = parse_flow({
        "processors": [
            {"id": "listen", "type": "ListenHTTP", "properties": {"port": 0, "base_path": "ingest"}},
            {"id": "put", "type": "PutFile", "properties": {"directory": str(out)},
             "auto_terminate": ["success", "failure"]}],
        "connections": [{"id": "received", "source": "listen", "destination": "put"}]})
    node = StandaloneNode(definition, str(tmp_path / "node"))
    node.start()
    try:
        listener = node.graph.processors["listen"]
        assert listener._server.server_address[0] == "127.0.0.1"
        url = f"http://127.0.0.1:{listener.port}/ingest"
        for index in range(5):
            request = urllib.request.Request(url, data=f"record {index}".encode(), method="POST",
                                             headers={"X-Attr-source": "test", "filename": f"r{index}"})
            with urllib.request.urlopen(request, timeout=30) as response:
                assert response.status == 200
            # The 200 came after the commit: the FlowFile is in the WAL now (or already delivered).
            in_wal = any(r.attributes.get("filename") == f"r{index}" for r in list(node.shard.wal.records.values()))
            delivered = f"record {index}" in {p.read_text() for p in out.glob("[!.]*")}
            assert in_wal or delivered
        try:
            urllib.request.urlopen(urllib.request.Request(url + "/other", data=b"x", method="POST"), timeout=10)
            raise AssertionError("a wrong path was accepted")
        except urllib.error.HTTPError as error:
            assert error.code == 404
        assert node.wait_until(lambda: len(ids_in_directory(str(out))) == 5, 30)
    finally:
        node.stop()
    assert sorted(p.read_text() for p in out.glob("*")) == [f"record {i}" for i in range(5)]
