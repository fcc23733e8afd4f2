"""The Kafka broker's configuration and command line, without a JVM: the harness and
docker-compose.yml's broker share one file of settings (cluster/services/kafka/
server-settings.properties) and each adds only what is its own."""

from __future__ import annotations

import base64
import re
import uuid
from pathlib import Path

import pytest

from cluster.services import kafka
from cluster.services.kafka import (
    LOG4J_FILE,
    SETTINGS_FILE,
    java_command,
    new_cluster_id,
    server_properties,
    setting_names,
)

ROOT = Path(__file__).resolve().parents[3]
DOCKER = ROOT / "cluster" / "docker"
# What differs from one broker to the next: never in the shared file.
OWN = {
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "controller.quorum.bootstrap.servers",
    "log.dirs",
}


def properties(text: str) -> dict[str, str]:
    names = setting_names(text)
    assert len(names) == len(set(names)), f"a name is set twice: {names}"
    return dict(
        line.strip().split("=", 1) for line in text.splitlines() if line.strip() and not line.strip().startswith("#")
    )


def test_the_shared_settings_run_one_combined_node_with_single_replica_internal_topics():
    shared = properties(SETTINGS_FILE.read_text())
    assert not OWN & set(shared), OWN & set(shared)
    assert shared["process.roles"] == "broker,controller" and shared["node.id"] == str(kafka.NODE_ID)
    for name in (
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
    ):
        assert shared[name] == "1", name
    assert int(shared["broker.heartbeat.interval.ms"]) < int(shared["broker.session.timeout.ms"])


def test_a_broker_properties_file_is_the_shared_settings_then_its_own(tmp_path):
    settings = tmp_path / "settings.properties"
    settings.write_text("# why\nprocess.roles=broker,controller\n\nnode.id=1\n")
    text = server_properties({"listeners": "PLAINTEXT://127.0.0.1:1", "log.dirs": tmp_path / "data"}, settings)
    assert setting_names(text) == ["process.roles", "node.id", "listeners", "log.dirs"]
    assert properties(text)["log.dirs"] == str(tmp_path / "data")


def test_a_broker_that_sets_a_shared_name_again_is_refused(tmp_path):
    settings = tmp_path / "settings.properties"
    settings.write_text("node.id=1\nnum.io.threads=2\n")
    with pytest.raises(ValueError, match="already sets node.id, num.io.threads"):
        server_properties({"num.io.threads": 8, "node.id": 2, "log.dirs": "/data"}, settings)


def test_the_command_line_runs_the_fetched_jars_with_a_small_heap_and_the_log_configuration():
    argv = java_command("/usr/bin/java", Path("/cache/kafka-jars"), "256m", kafka.SERVER_MAIN, "/w/server.properties")
    assert argv[0] == "/usr/bin/java" and "-Xmx256m" in argv
    assert argv[argv.index("-cp") + 1] == "/cache/kafka-jars/*"
    assert f"-Dlog4j2.configurationFile={LOG4J_FILE}" in argv and LOG4J_FILE.exists()
    assert argv[-2:] == ["kafka.Kafka", "/w/server.properties"]


def test_the_jit_compiles_with_c1_alone_unless_the_brokers_peak_is_asked_for():
    def argv(**peak):
        return java_command("/usr/bin/java", Path("/j"), "256m", kafka.SERVER_MAIN, "/w/s.properties", **peak)

    assert "-XX:TieredStopAtLevel=1" in argv()
    assert not any(option.startswith("-XX:TieredStopAtLevel") for option in argv(peak=True))
    assert argv(peak=True)[-2:] == argv()[-2:] == ["kafka.Kafka", "/w/s.properties"]


def test_the_compose_broker_runs_with_the_harness_jvm_options():
    entrypoint = (Path(kafka.__file__).parents[1] / "docker" / "kafka-entrypoint.sh").read_text()
    options = next(line for line in entrypoint.splitlines() if line.startswith("jvm="))
    for option in java_command("java", Path("/j"), "256m", kafka.SERVER_MAIN):
        if option.startswith("-X"):
            assert option in options, option


def test_a_cluster_id_is_kafkas_uuid_form_and_never_reads_as_an_option(monkeypatch):
    # 0xf8 makes the base64 text start with '-', which the storage tool would take for an option.
    drawn = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(kafka.uuid, "uuid4", lambda: next(drawn))
    cluster_id = new_cluster_id()
    assert cluster_id == base64.urlsafe_b64encode(b"\x01" * 16).decode().rstrip("=")
    assert len(cluster_id) == 22 and base64.urlsafe_b64decode(cluster_id + "==") == b"\x01" * 16


def test_the_compose_broker_writes_its_properties_from_the_same_file():
    dockerfile = (DOCKER / "kafka.Dockerfile").read_text()
    assert "COPY cluster/services/kafka/server-settings.properties /opt/kafka/server-settings.properties" in dockerfile
    assert "COPY cluster/services/kafka/log4j2.properties /opt/kafka/log4j2.properties" in dockerfile
    entrypoint = (DOCKER / "kafka-entrypoint.sh").read_text()
    assert "cat /opt/kafka/server-settings.properties" in entrypoint
    own = set(re.findall(r"^\s*echo \"([a-z.]+)=", entrypoint, re.MULTILINE))
    assert own == OWN, own


def test_a_broker_serves_only_once_it_leads_every_partition_its_metadata_lists():
    from types import SimpleNamespace

    def metadata(**leaders):
        topics = {
            name: SimpleNamespace(partitions={n: SimpleNamespace(leader=leader) for n, leader in enumerate(each)})
            for name, each in leaders.items()
        }
        return SimpleNamespace(topics=topics)

    assert kafka.leaderless(metadata(out=[1, 1], __consumer_offsets=[1])) == []
    assert kafka.leaderless(metadata(out=[1, -1], progress=[-1])) == ["out[1]", "progress[0]"]
    assert kafka.leaderless(metadata()) == []
