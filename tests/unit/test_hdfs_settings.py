"""The compose cluster's HDFS runs with the harness's settings: one file of server
settings (cluster/services/hadoop/hdfs-site.properties) that both read, and the same
client settings in both clusters' NODE.toml. Static: no Docker, no daemon (the script
the compose daemons run to write their hdfs-site.xml is run here with `sh`)."""

from __future__ import annotations

import re
import subprocess
import tomllib
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
import yaml

from cluster.drills.flow_cluster import IO_TIMEOUT
from cluster.drills.harness import HDFS_CLIENT
from cluster.services.hdfs import DAEMONS, SETTINGS_FILE, HdfsCluster, shared_settings
from cluster.services.install import PLACEMENT_SOURCE
from replication.hdfs_storage import FAIL_FAST_CONFIG

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "cluster" / "docker"


def site(text: str) -> dict[str, str]:
    return {prop.findtext("name"): prop.findtext("value") for prop in ElementTree.fromstring(text).iter("property")}


def compose_site(daemon: str, *extra: str, settings: Path = SETTINGS_FILE) -> dict[str, str]:
    """The hdfs-site.xml the compose file's daemons write (cluster/docker/hdfs-site.sh)."""
    result = subprocess.run(
        ["sh", str(DOCKER / "hdfs-site.sh"), daemon, str(settings), *extra], capture_output=True, text=True, check=True
    )
    return site(result.stdout)


def placement_policy_class() -> str:
    """The class `FreshTargetsBlockPlacementPolicy.java` declares, by its full name."""
    source = (SETTINGS_FILE.parent / PLACEMENT_SOURCE).read_text()
    package = re.search(r"^package ([\w.]+);", source, re.MULTILINE)
    declared = re.search(r"^public class (\w+) extends BlockPlacementPolicyDefault", source, re.MULTILINE)
    assert package and declared, "the placement policy's source declares no package or class"
    return f"{package.group(1)}.{declared.group(1)}"


def test_the_settings_that_bound_a_datanodes_death_are_in_the_shared_file():
    namenode = shared_settings("namenode")
    assert namenode["dfs.namenode.stale.datanode.interval"] == "1000"
    assert namenode["dfs.namenode.stale.datanode.minimum.interval"] == "1"  # else 3 x 1 s, whatever is asked
    assert namenode["dfs.namenode.avoid.write.stale.datanode"] == "true"
    assert namenode["dfs.namenode.redundancy.considerLoad"] == "false"
    assert namenode["dfs.block.replicator.classname"] == placement_policy_class()
    assert namenode["dfs.heartbeat.interval"] == "1"  # whole seconds: block recovery's timeout counts them
    assert shared_settings("datanode")["dfs.heartbeat.interval"] == "100ms"
    assert "dfs.heartbeat.interval" not in shared_settings("client")


@pytest.mark.parametrize("daemon", DAEMONS)
def test_compose_daemons_write_the_shared_settings_then_their_own(daemon):
    written = compose_site(daemon, "dfs.replication=2", "dfs.datanode.data.dir=/data/blocks")
    assert written == {**shared_settings(daemon), "dfs.replication": "2", "dfs.datanode.data.dir": "/data/blocks"}


@pytest.mark.parametrize("daemon", DAEMONS)
def test_the_harness_writes_the_shared_settings(tmp_path, daemon):
    cluster = HdfsCluster(tmp_path)
    cluster._choose_ports()
    cluster._write_confs()
    conf = {"namenode": "namenode/conf", "datanode": "datanode-1/conf", "client": "client-conf"}[daemon]
    written = site((cluster.workdir / conf / "hdfs-site.xml").read_text())
    assert shared_settings(daemon).items() <= written.items()


def test_the_compose_image_writes_its_hdfs_site_from_the_same_file():
    dockerfile = (DOCKER / "hadoop.Dockerfile").read_text()
    assert "COPY cluster/services/hadoop/hdfs-site.properties /opt/hadoop/hdfs-site.properties" in dockerfile
    assert "COPY cluster/docker/hdfs-site.sh /usr/local/bin/custody-hdfs-site" in dockerfile
    entrypoint = (DOCKER / "hadoop-entrypoint.sh").read_text()
    assert 'custody-hdfs-site "$daemon" /opt/hadoop/hdfs-site.properties' in entrypoint
    own = set(re.findall(r"^\s*(dfs\.[\w.-]+)=", entrypoint, re.MULTILINE))
    assert own and not own & {name for daemon in DAEMONS for name in shared_settings(daemon)}, own


def test_compose_runs_the_harness_replication_and_datanodes():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    datanodes = [name for name, service in services.items() if service.get("command") == ["datanode"]]
    replication = services["namenode"]["environment"]["REPLICATION"]
    assert (len(datanodes), int(replication)) == (3, HdfsCluster(Path("/nonexistent")).replication)


def test_compose_nodes_run_the_harness_client_settings():
    """The drills' nodes (cluster/drills/flow_cluster.py, harness.py) and the compose
    nodes (cluster/docker/custody-node.toml) give up on a write pipeline after the same
    deadline, with the same hdfs-native settings."""
    with open(DOCKER / "custody-node.toml", "rb") as file:
        hdfs = tomllib.load(file)["hdfs"]
    assert hdfs["io_timeout"] == IO_TIMEOUT
    assert {**FAIL_FAST_CONFIG, **hdfs.get("config", {})} == {**FAIL_FAST_CONFIG, **HDFS_CLIENT}


@pytest.mark.parametrize(
    "line",
    [
        "dfs.replication = 2",
        "dfs.replication",
        "spark:dfs.replication=2",
        "dfs.replication=",
        "dfs.replication=2\ndfs.replication=3",
        "dfs.x=1\ndatanode:dfs.x=2",
    ],
)
def test_a_settings_line_both_readers_might_read_apart_is_refused(tmp_path, line):
    path = tmp_path / "hdfs-site.properties"
    path.write_text(f"# a comment\n{line}\n")
    with pytest.raises(ValueError, match=r"hdfs-site.properties:\d: "):
        shared_settings("namenode", path)


def test_comments_and_daemon_lines_read_the_same_in_both(tmp_path):
    path = tmp_path / "hdfs-site.properties"
    path.write_text("# heading\n\ndfs.a=1  # why\nnamenode:dfs.b=2\ndatanode:dfs.b=3\n")
    for daemon in DAEMONS:
        assert compose_site(daemon, settings=path) == shared_settings(daemon, path)
    assert shared_settings("datanode", path) == {"dfs.a": "1", "dfs.b": "3"}
