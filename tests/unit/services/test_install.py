"""Every command that starts a service installs what the service needs, the same way."""

from __future__ import annotations

import pytest

from cluster.services import install, zookeeper
from cluster.services.docker_engine import DockerEngine
from cluster.services.process import ServiceError


def test_a_service_needs_only_its_own_packages():
    nothing = install.packages_missing_for("zookeeper", exists=lambda path: False, which=lambda name: None)
    assert nothing == {"zookeeper": "/usr/share/java/zookeeper.jar", "openjdk-17-jre-headless": "/usr/bin/java"}
    assert set(install.packages_missing_for("docker", exists=lambda path: False, which=lambda name: None)) == {
        "docker.io",
        "debootstrap",
    }
    assert install.packages_missing_for("spark", exists=lambda path: True, which=lambda name: None) == {}


def test_a_program_on_path_counts_as_installed():
    # A JDK installed another way (not Debian's package: its java and javac on PATH) is
    # not installed again.
    missing = install.packages_missing_for(
        "hdfs", exists=lambda path: False, which=lambda name: f"/opt/{name}" if name in ("java", "javac") else None
    )
    assert missing == {"maven": "/usr/bin/mvn"}


def test_hdfs_needs_javac_for_the_namenodes_placement_policy():
    # A Java runtime alone is not enough: `custody services install` compiles the
    # NameNode's block placement policy (`placement_jar`).
    missing = install.packages_missing_for(
        "hdfs", exists=lambda path: False, which=lambda name: "/opt/java" if name == "java" else None
    )
    assert missing == {"openjdk-17-jdk-headless": "/usr/bin/javac", "maven": "/usr/bin/mvn"}


def test_without_root_every_service_says_the_same_thing(monkeypatch, tmp_path):
    monkeypatch.setattr(install, "_installed", lambda marker, *args: False)
    monkeypatch.setattr(install.os, "geteuid", lambda: 1000)
    messages = []
    for service in (zookeeper.ZooKeeperEnsemble(tmp_path / "zk"), DockerEngine(tmp_path / "docker")):
        with pytest.raises(ServiceError) as refused:
            service.start(timeout=1)
        messages.append(str(refused.value))
    assert messages[0].startswith("Debian packages zookeeper, openjdk-17-jre-headless are missing")
    assert "run: sudo apt-get install -y zookeeper openjdk-17-jre-headless" in messages[0]
    assert "run: sudo apt-get install -y docker.io debootstrap" in messages[1]
    assert all("custody services install" not in message for message in messages)


def test_a_missing_service_is_installed_when_it_starts(monkeypatch, tmp_path):
    installed: list[list[str]] = []
    monkeypatch.setattr(install, "_installed", lambda marker, *args: False)
    monkeypatch.setattr(install.os, "geteuid", lambda: 0)
    monkeypatch.setattr(install, "run_checked", lambda argv, what, env=None: installed.append(argv))
    monkeypatch.setattr(zookeeper, "ZOOKEEPER_JAR", str(tmp_path / "zookeeper.jar"))
    # apt-get "ran", but the stand-in installed nothing: the start then stops on that.
    with pytest.raises(ServiceError, match="still missing after installing Debian's zookeeper"):
        zookeeper.ZooKeeperEnsemble(tmp_path / "zk").start(timeout=1)
    assert installed[0][:2] == ["apt-get", "update"]
    assert installed[1][-2:] == ["zookeeper", "openjdk-17-jre-headless"]


def test_kafka_jars_are_fetched_once_and_again_for_another_pom(monkeypatch, tmp_path):
    monkeypatch.setenv("CUSTODY_CACHE", str(tmp_path))
    monkeypatch.setattr(install.shutil, "which", lambda name: f"/usr/bin/{name}")
    fetches: list[list[str]] = []

    def maven(argv, what, env=None):
        fetches.append(argv)
        output = next(arg for arg in argv if arg.startswith("-DoutputDirectory="))
        (install.Path(output.split("=", 1)[1]) / "kafka_2.13.jar").write_bytes(b"jar")

    monkeypatch.setattr(install, "run_checked", maven)
    jars = install.kafka_jars()
    assert jars == tmp_path / "kafka-jars" and (jars / "kafka_2.13.jar").exists()
    assert fetches[0][fetches[0].index("-f") + 1].endswith("kafka/pom.xml")
    assert install.kafka_jars() == jars and len(fetches) == 1  # the stamp matches the pom: nothing to do
    (jars / ".complete").write_text("<project>an older pom</project>")
    (jars / "stale.jar").write_bytes(b"old")
    install.kafka_jars()
    assert len(fetches) == 2 and not (jars / "stale.jar").exists()
