"""docker-compose.yml is valid for the real Compose v2 and keeps every port on loopback."""

import json
from pathlib import Path

from cluster.services.docker_engine import BASE_IMAGE, docker

ROOT = Path(__file__).resolve().parents[2]


def test_compose_file_is_valid_and_binds_loopback_only(docker_engine):
    result = docker("compose", "-f", str(ROOT / "docker-compose.yml"), "config", "--format", "json")
    config = json.loads(result.stdout)
    services = config["services"]
    assert {"zk1", "zk2", "zk3", "namenode", "datanode1", "datanode2"} <= set(services)
    for name, service in services.items():
        for port in service.get("ports", []):
            assert port.get("host_ip") == "127.0.0.1", f"{name} publishes {port} beyond loopback"


def test_every_dockerfile_builds_from_the_local_base_image():
    for dockerfile in (ROOT / "cluster" / "docker").glob("*.Dockerfile"):
        stages = [line.split()[1] for line in dockerfile.read_text().splitlines() if line.startswith("FROM ")]
        assert stages and all(stage == BASE_IMAGE for stage in stages), dockerfile.name
