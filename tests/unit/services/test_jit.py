"""The harness's JVMs compile with C1 alone unless a stack's `peak` is asked for."""

from pathlib import Path

import pytest

from cluster.services import hdfs, kafka, zookeeper
from cluster.services.jit import C1_ONLY, jit_options
from cluster.services.stack import ServiceStack


@pytest.fixture(autouse=True)
def no_installs(monkeypatch):
    for module in (hdfs, zookeeper, kafka):
        monkeypatch.setattr(module, "java_binary", lambda: "/usr/bin/java")
    monkeypatch.setattr(hdfs, "hadoop_jars", lambda: Path("/jars/hadoop"))
    monkeypatch.setattr(kafka, "kafka_jars", lambda: Path("/jars/kafka"))


def tiering(argv: list[str]) -> list[str]:
    return [option for option in argv if option.startswith("-XX:TieredStopAtLevel")]


def argvs(stack: ServiceStack) -> dict[str, list[str]]:
    """The command line each JVM of `stack` would start with (none is started)."""
    services = stack.services
    ensemble = services["zookeeper"]
    home = stack.workdir / "zookeeper" / "1"
    return {
        "zookeeper": ensemble._process(1, home, home / "zoo.cfg", pid=None).argv,
        "namenode": services["hdfs"]._daemon("namenode", "org.apache.hadoop.hdfs.server.namenode.NameNode", None).argv,
        "datanode": services["hdfs"]
        ._daemon("datanode-0", "org.apache.hadoop.hdfs.server.datanode.DataNode", None)
        .argv,
        "kafka": services["kafka"]._server(None).argv,
    }


def test_every_harness_jvm_compiles_with_c1_alone_by_default(tmp_path):
    for name, argv in argvs(ServiceStack(tmp_path)).items():
        assert tiering(argv) == [C1_ONLY], name


def test_a_peak_stack_keeps_both_compilers_and_changes_nothing_else(tmp_path):
    default = argvs(ServiceStack(tmp_path / "default"))
    peak = argvs(ServiceStack(tmp_path / "peak", peak=True))
    for name, argv in peak.items():
        assert tiering(argv) == [], name
        shape = [option.replace("/peak/", "/default/") for option in argv]
        assert shape == [option for option in default[name] if option != C1_ONLY], name


def test_the_options_say_c1_alone_or_nothing():
    assert jit_options(False) == ("-XX:TieredStopAtLevel=1",) and jit_options(True) == ()


@pytest.mark.parametrize(
    ("entrypoint", "main"),
    [
        ("hadoop-entrypoint.sh", "namenode.NameNode ;;"),
        ("hadoop-entrypoint.sh", "datanode.DataNode ;;"),
        ("zookeeper-entrypoint.sh", "-cp /etc/zookeeper/conf"),
    ],
)
def test_the_compose_clusters_jvms_compile_as_the_harness_does(entrypoint, main):
    text = (Path(hdfs.__file__).parents[1] / "docker" / entrypoint).read_text()
    assert C1_ONLY in next(line for line in text.splitlines() if main in line)
