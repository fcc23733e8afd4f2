"""A drill whose settle times out names each node's last warning or error: the one
message a failed CI run keeps says why a queue did not drain."""

from __future__ import annotations

from types import SimpleNamespace

from cluster.drills.flow_cluster import FlowCluster


def node_logging(path, lines: list[str]) -> SimpleNamespace:
    path.write_text("".join(f"{line}\n" for line in lines))
    return SimpleNamespace(log=SimpleNamespace(name=str(path)))


def test_each_nodes_last_warning_or_error_is_named_and_a_quiet_node_is_not(tmp_path):
    cluster = SimpleNamespace(
        nodes={
            "n1": node_logging(
                tmp_path / "n1.log",
                [
                    "2026-12-03 03:41:01,000 WARNING flow.processor.publish: publish: an outage",
                    "2026-12-03 03:41:02,000 ERROR flow.processor.publish: publish: reading the progress topic "
                    + "x" * 400,
                    "2026-12-03 03:41:03,000 INFO flow.shard: recovered",
                ],
            ),
            "n2": node_logging(tmp_path / "n2.log", ["2026-12-03 03:41:03,000 INFO flow.shard: all well"]),
        }
    )
    found = FlowCluster.last_warnings(cluster)  # type: ignore[arg-type]
    assert list(found) == ["n1"]
    assert found["n1"].startswith("2026-12-03 03:41:02,000 ERROR") and len(found["n1"]) == 300


def test_only_the_logs_tail_is_read(tmp_path):
    early = "2026-12-03 03:41:01,000 WARNING cluster: long ago"
    cluster = SimpleNamespace(
        nodes={"n1": node_logging(tmp_path / "n1.log", [early] + ["2026-12-03 03:41:02,000 INFO x: fine"] * 100)}
    )
    assert FlowCluster.last_warnings(cluster, window=500) == {}  # type: ignore[arg-type]
    assert FlowCluster.last_warnings(cluster)["n1"] == early  # type: ignore[arg-type]
