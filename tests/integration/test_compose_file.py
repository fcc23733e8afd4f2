"""docker-compose.yml is valid for the real Compose v2 and keeps every port on loopback."""

import json
from pathlib import Path

from cluster.services.docker_engine import BASE_IMAGE, docker

ROOT = Path(__file__).resolve().parents[2]


def test_compose_file_is_valid_and_binds_loopback_only(docker_engine):
    services = compose_config()["services"]
    assert {
        "zk1",
        "zk2",
        "zk3",
        "namenode",
        "datanode1",
        "datanode2",
        "datanode3",
        "spark-master",
        "spark-worker",
    } <= set(services)
    for name, service in services.items():
        for port in service.get("ports", []):
            assert port.get("host_ip") == "127.0.0.1", f"{name} publishes {port} beyond loopback"


def test_custody_nodes_join_zookeeper_and_hdfs(docker_engine):
    services = compose_config()["services"]
    nodes = {name: services.get(name) for name in ("custody1", "custody2", "custody3")}
    assert all(nodes.values()), f"custody services missing: {sorted(n for n, s in nodes.items() if not s)}"
    names, data, outputs, admin_ports = set(), set(), set(), set()
    for name, service in nodes.items():
        assert service["image"] == services["admin-token"]["image"], name
        assert {"zk1", "zk2", "zk3", "namenode"} <= set(service.get("depends_on", {})), name
        assert [port["target"] for port in service["ports"]] == [8080], f"{name} publishes {service['ports']}"
        admin_ports.add(service["ports"][0]["published"])
        assert "--events" in service["command"], f"{name}: the drills read the events from `docker logs`"
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
    assert len(admin_ports) == 3, f"each node's admin API needs a host port of its own: {admin_ports}"


def test_each_image_is_built_once(docker_engine):
    """Services that share an image share its build: one service builds it (Compose would
    build it again for each service that has `build`, leaving copies untagged)."""
    services = compose_config()["services"]
    builders = {name: service["image"] for name, service in services.items() if "build" in service}
    assert sorted(builders.values()) == sorted({service["image"] for service in services.values()}), builders
    assert services["admin-token"]["build"]["dockerfile"] == "cluster/docker/custody.Dockerfile"


def test_every_service_is_health_checked_and_started_after_what_it_needs(docker_engine):
    services = compose_config()["services"]
    one_shots = {"admin-token", "hdfs-init"}  # the nodes wait until each has completed
    for name, service in services.items():
        if name in one_shots:
            continue
        assert service.get("healthcheck", {}).get("test"), f"{name} has no healthcheck"
        for needed, dependency in service.get("depends_on", {}).items():
            wanted = "service_completed_successfully" if needed in one_shots else "service_healthy"
            assert dependency["condition"] == wanted, f"{name} starts before {needed} is {wanted}"


def test_hdfs_runs_the_harness_jars_and_builds_trust_the_hosts_ca_bundle_by_default(docker_engine):
    config = compose_config(env={"CUSTODY_CACHE": "/cache", "CUSTODY_CA_BUNDLE": ""})
    for name in ("namenode", "datanode1", "datanode2", "datanode3"):
        jars = next(volume for volume in config["services"][name]["volumes"] if volume["target"] == "/opt/hadoop/jars")
        assert (jars["type"], jars["source"], jars["read_only"]) == ("bind", "/cache/hadoop-jars", True), name
    assert config["secrets"]["ca_bundle"]["file"] == "/etc/ssl/certs/ca-certificates.crt"
    assert "mvn" not in (ROOT / "cluster" / "docker" / "hadoop.Dockerfile").read_text()


def compose_config(env: dict[str, str] | None = None) -> dict:
    result = docker("compose", "-f", str(ROOT / "docker-compose.yml"), "config", "--format", "json", env=env)
    return json.loads(result.stdout)


def test_custody_node_template_is_a_valid_node_toml(tmp_path):
    import tomllib

    from cluster.node.config import parse_node_config

    template = ROOT / "cluster" / "docker" / "custody-node.toml"
    with open(template, "rb") as file:
        body = tomllib.load(file)
    # The credentials file is in the container (made by admin-token); here, one like it.
    assert body["zookeeper"]["credentials_file"] == "/etc/custody/zookeeper/credentials"
    credentials = tmp_path / "credentials"
    credentials.write_text("custody:0123abcd\n")
    credentials.chmod(0o600)
    body["zookeeper"]["credentials_file"] = str(credentials)
    config = parse_node_config(body, str(template))
    assert config.zk_credentials == "custody:0123abcd" and config.hdfs_identity.user == "custody"
    assert config.zk_hosts == "zk1:2181,zk2:2181,zk3:2181"
    assert config.hdfs_url == "hdfs://namenode:8020"
    assert (config.directory, config.parameters["out"]) == ("/var/lib/custody", "/data/out")
    assert config.flow == "/usr/share/custody/examples/cluster.yaml"
    assert config.spark_master == "spark://spark-master:7077"
    assert (config.admin_bind, config.admin_port, config.admin_tokens) == ("0.0.0.0", 8080, "/etc/custody/admin/tokens")
    assert (ROOT / "examples" / "cluster.yaml").exists()


def test_every_dockerfile_builds_from_the_local_base_image():
    dockerfiles = sorted((ROOT / "cluster" / "docker").glob("*.Dockerfile"))
    assert "custody.Dockerfile" in {dockerfile.name for dockerfile in dockerfiles}
    for dockerfile in dockerfiles:
        stages = [line.split()[1] for line in dockerfile.read_text().splitlines() if line.startswith("FROM ")]
        assert stages and all(stage == BASE_IMAGE for stage in stages), dockerfile.name


def test_every_image_shares_its_first_layer_the_jre():
    """A cold build installs the JRE once for the three images, not three times."""
    first_steps = set()
    for dockerfile in (ROOT / "cluster" / "docker").glob("*.Dockerfile"):
        last_stage = dockerfile.read_text().rpartition("\nFROM ")[2].replace("\\\n", " ")
        first_steps.add(next(line for line in last_stage.splitlines() if line.startswith("RUN ")))
    assert len(first_steps) == 1, first_steps
    assert "openjdk-17-jre-headless" in first_steps.pop()
