"""docker-compose.yml is valid for the real Compose v2 and keeps every port on loopback."""

import json
from pathlib import Path

from cluster.services.docker_engine import BASE_IMAGE, docker

ROOT = Path(__file__).resolve().parents[2]


def test_compose_file_is_valid_and_binds_loopback_only(docker_engine):
    result = docker("compose", "-f", str(ROOT / "docker-compose.yml"), "config", "--format", "json")
    config = json.loads(result.stdout)
    services = config["services"]
    assert {"zk1", "zk2", "zk3", "namenode", "datanode1", "datanode2", "datanode3", "spark-master",
            "spark-worker"} <= set(services)
    for name, service in services.items():
        for port in service.get("ports", []):
            assert port.get("host_ip") == "127.0.0.1", f"{name} publishes {port} beyond loopback"


def test_custody_nodes_join_zookeeper_and_hdfs(docker_engine):
    result = docker("compose", "-f", str(ROOT / "docker-compose.yml"), "config", "--format", "json")
    services = json.loads(result.stdout)["services"]
    nodes = {name: services.get(name) for name in ("custody1", "custody2", "custody3")}
    assert all(nodes.values()), f"custody services missing: {sorted(n for n, s in nodes.items() if not s)}"
    names, data, outputs = set(), set(), set()
    for name, service in nodes.items():
        assert service["build"]["dockerfile"] == "cluster/docker/custody.Dockerfile", name
        assert {"zk1", "zk2", "zk3", "namenode"} <= set(service.get("depends_on", {})), name
        assert not service.get("ports"), f"{name} publishes {service['ports']}"
        command = service["command"]
        names.add(command[command.index("--name") + 1])
        mounts = {volume["target"]: volume for volume in service["volumes"]}
        assert mounts["/var/lib/custody"]["type"] == "volume", name
        assert mounts["/data/out"]["type"] == "volume", name
        data.add(mounts["/var/lib/custody"]["source"])
        outputs.add(mounts["/data/out"]["source"])
    assert len(names) == 3, f"node names must differ: {names}"
    assert len(data) == 3, f"each node needs its own data volume: {data}"
    assert len(outputs) == 1, f"the nodes must share one output volume: {outputs}"


def test_custody_node_template_is_a_valid_node_toml():
    from cluster.node.config import load_node_config

    config = load_node_config(str(ROOT / "cluster" / "docker" / "custody-node.toml"))
    assert config.zk_hosts == "zk1:2181,zk2:2181,zk3:2181"
    assert config.hdfs_url == "hdfs://namenode:8020"
    assert (config.directory, config.parameters["out"]) == ("/var/lib/custody", "/data/out")
    assert config.flow == "/usr/share/custody/examples/cluster.yaml"
    assert config.spark_master == "spark://spark-master:7077"
    assert (ROOT / "examples" / "cluster.yaml").exists()


def test_every_dockerfile_builds_from_the_local_base_image():
    dockerfiles = sorted((ROOT / "cluster" / "docker").glob("*.Dockerfile"))
    assert "custody.Dockerfile" in {dockerfile.name for dockerfile in dockerfiles}
    for dockerfile in dockerfiles:
        stages = [line.split()[1] for line in dockerfile.read_text().splitlines() if line.startswith("FROM ")]
        assert stages and all(stage == BASE_IMAGE for stage in stages), dockerfile.name
