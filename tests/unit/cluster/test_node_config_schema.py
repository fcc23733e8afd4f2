"""NODE.toml read by its schema (`cluster.node.config_schema`): every key reaches its
setting, the files the release before the schema read give the same settings, and
the schema language refuses what it should, by name."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import textwrap
import tomllib

import pytest

from cluster.hdfs_identity import HdfsIdentity, KerberosSettings
from cluster.node.config import NodeConfig, NodeConfigError, load_node_config, parse_node_config
from cluster.node.config_schema import NODE_TOML
from cluster.node.toml_schema import Flag, Integer, Invalid, Key, Schema, Section, Text

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PREVIOUS_RELEASE = os.path.join(REPO, "tests", "data", "node-toml-v0")

# Every key at a value that is not its default. [hdfs] user and [hdfs.kerberos]
# exclude each other: the user is read in a second file (`with_hdfs_user`).
EVERY_KEY = textwrap.dedent("""\
    name = "edge1"
    flow = "flows/f.yaml"
    directory = "state"

    [flow_parameters]
    out = "/srv/out"

    [zookeeper]
    hosts = "zk1:2181,zk2:2181"
    chroot = "/prod/"
    cluster = "east"
    session_timeout = 9.5
    credentials_file = "secrets/zookeeper"
    insecure = true

    [hdfs]
    url = "hdfs://nn:9000"
    root = "/data/custody"
    io_timeout = 7.5
    [hdfs.config]
    "dfs.replication" = 2
    [hdfs.kerberos]
    principal = "custody/edge1@EXAMPLE.TEST"
    keytab = "secrets/custody.keytab"
    ticket_cache = "FILE:/run/custody/cc"
    renew_interval = 600.0

    [node]
    threads = 16
    capacity_weight = 3.0
    policy = "divvy"
    lead = false
    crash_detection = false
    admin = "http://edge1.example:9090"
    wal_partitions = 8
    checkpoint_interval = 120.0
    fence_first_wait = 0.25
    shutdown_timeout = 45.0
    absent_node_retention = 86400.0

    [content]
    archive = false
    archive_retention = 600.0
    archive_max_usage = 0.75

    [provenance]
    max_age = 3600.0
    max_bytes = 1073741824
    rollover_age = 2.5
    rollover_bytes = 8388608

    [spark]
    master = "spark://spark:7077"
    [spark.conf]
    "spark.cores.max" = 2

    [python]
    extensions = ["processors", "/opt/nifi-python"]
    index_url = "https://index.example/simple"
    find_links = ["wheels", "https://index.example/links"]
    no_index = true

    [admin]
    enabled = false
    bind = "10.0.0.5"
    port = 9090
    tokens = "secrets/tokens"
    tls_cert = "pki/edge1.pem"
    tls_key = "pki/edge1.key"
    tls_ca = "pki/ca.pem"
    allowed_hosts = ["edge1.example"]
    """)


def private_file(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o600)


@pytest.fixture
def node_dir(tmp_path):
    """A directory with the private files EVERY_KEY names."""
    private_file(tmp_path / "secrets" / "zookeeper", "custody:pa55word\n")
    private_file(tmp_path / "secrets" / "custody.keytab", "keytab")
    return tmp_path


def with_hdfs_user(body: dict) -> dict:
    body["hdfs"].pop("kerberos")
    body["hdfs"]["user"] = "custody"
    return body


def test_every_key_set_is_read_back_into_its_setting(node_dir):
    path = node_dir / "n1.toml"
    path.write_text(EVERY_KEY)
    config = load_node_config(str(path))
    here = str(node_dir)
    assert config == NodeConfig(
        name="edge1",
        flow=f"{here}/flows/f.yaml",
        directory=f"{here}/state",
        zk_hosts="zk1:2181,zk2:2181/prod",
        cluster="east",
        hdfs_url="hdfs://nn:9000",
        session_timeout=9.5,
        zk_credentials="custody:pa55word",
        hdfs_root="/data/custody",
        hdfs_config={"dfs.replication": "2"},
        hdfs_io_timeout=7.5,
        hdfs_identity=HdfsIdentity(
            kerberos=KerberosSettings(
                principal="custody/edge1@EXAMPLE.TEST",
                keytab=f"{here}/secrets/custody.keytab",
                ticket_cache="FILE:/run/custody/cc",
                renew_interval=600.0,
            )
        ),
        flow_parameters={"out": "/srv/out"},
        threads=16,
        capacity_weight=3.0,
        policy="divvy",
        lead=False,
        crash_detection=False,
        admin="http://edge1.example:9090",
        wal_partitions=8,
        checkpoint_interval=120.0,
        fence_first_wait=0.25,
        shutdown_timeout=45.0,
        absent_node_retention=86400.0,
        archive=False,
        archive_retention=600.0,
        archive_max_usage=0.75,
        provenance_max_age=3600.0,
        provenance_max_bytes=1 << 30,
        provenance_rollover_age=2.5,
        provenance_rollover_bytes=8 << 20,
        admin_enabled=False,
        admin_bind="10.0.0.5",
        admin_port=9090,
        admin_tokens=f"{here}/secrets/tokens",
        admin_tls_cert=f"{here}/pki/edge1.pem",
        admin_tls_key=f"{here}/pki/edge1.key",
        admin_tls_ca=f"{here}/pki/ca.pem",
        admin_allowed_hosts=("edge1.example",),
        spark_master="spark://spark:7077",
        spark_conf={"spark.cores.max": "2"},
        python_extensions=(f"{here}/processors", "/opt/nifi-python"),
        python_index_url="https://index.example/simple",
        python_find_links=(f"{here}/wheels", "https://index.example/links"),
        python_no_index=True,
        path=str(path),
    )
    user = parse_node_config(with_hdfs_user(tomllib.loads(EVERY_KEY)), str(path))
    assert user.hdfs_identity == HdfsIdentity(user="custody")
    # Every setting moved off its default: no key is read into the wrong one, or dropped.
    with open(os.path.join(PREVIOUS_RELEASE, "minimal.toml"), "rb") as file:
        defaults = parse_node_config(tomllib.load(file))
    same = [f.name for f in dataclasses.fields(NodeConfig) if getattr(config, f.name) == getattr(defaults, f.name)]
    assert same == [] and user.hdfs_identity != defaults.hdfs_identity


def test_the_round_trip_sets_every_key_of_the_schema():
    def keys_of(table: dict, prefix: str = "") -> set[str]:
        found = set()
        for name, value in table.items():
            dotted = f"{prefix}{name}"
            inside = isinstance(value, dict) and any(s.name == dotted for s in NODE_TOML.sections)
            found |= keys_of(value, f"{dotted}.") if inside else {dotted}
        return found

    declared = {f"{section.name}.{key.name}".lstrip(".") for section, key in NODE_TOML.keys()}
    assert keys_of(tomllib.loads(EVERY_KEY)) | keys_of(with_hdfs_user(tomllib.loads(EVERY_KEY))) == declared


@pytest.mark.parametrize("sample", ["documented", "minimal"])
def test_a_file_of_the_previous_release_gives_the_same_settings(tmp_path, sample):
    shutil.copy(os.path.join(PREVIOUS_RELEASE, f"{sample}.toml"), tmp_path)
    private_file(tmp_path / "zookeeper", "custody:pa55word\n")
    config = load_node_config(str(tmp_path / f"{sample}.toml"))
    with open(os.path.join(PREVIOUS_RELEASE, f"{sample}.json")) as file:
        before = json.load(file)
    # What that release hard-coded where there is a key now: a clustered node's
    # provenance rolled over every 10 s or 100 MiB (RolloverPolicy's size).
    before.update(provenance_rollover_age=10.0, provenance_rollover_bytes=100 * 1024 * 1024)
    # What it did not have, and a file of it gets by default: crash detection.
    before.update(crash_detection=True)
    # Nor NiFi Python processors.
    before.update(python_extensions=[], python_index_url="", python_find_links=[], python_no_index=False)
    # Nor the authorities trusted when asking the other members (the system's).
    before.update(admin_tls_ca="")
    # A default changed since: a fence polls the leases every 0.05 s (was 0.1 s); the
    # minimal file leaves it to the default.
    if sample == "minimal":
        before.update(fence_first_wait=0.05)
    now = json.loads(json.dumps(dataclasses.asdict(config)).replace(str(tmp_path), "<here>"))
    # As text, so that 4 and 4.0 differ.
    assert json.dumps(now, indent=2, sort_keys=True) == json.dumps(before, indent=2, sort_keys=True)


def test_every_field_of_node_config_is_a_keys_or_derived_from_keys():
    filled = [key.field for _, key in NODE_TOML.keys() if key.field]
    derived = {"directory", "zk_hosts", "zk_credentials", "hdfs_identity", "path"}
    assert len(filled) == len(set(filled)) and not derived & set(filled)
    assert {f.name for f in dataclasses.fields(NodeConfig)} == set(filled) | derived


def test_node_config_takes_its_defaults_from_the_schema():
    defaults = NODE_TOML.defaults()
    for found in dataclasses.fields(NodeConfig):
        if found.name in defaults and found.default is not dataclasses.MISSING:
            assert found.default == defaults[found.name], found.name
    assert (
        NodeConfig(
            name="n", flow="f", directory="d", zk_hosts="h", cluster="c", hdfs_url="hdfs://nn:8020"
        ).provenance_rollover_age
        == defaults["provenance_rollover_age"]
        == 10.0
    )


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("rollover_age", 0.01, "[provenance] rollover_age must be at least 0.1, not 0.01"),
        ("rollover_age", "10 s", "[provenance] rollover_age must be a number, not '10 s'"),
        ("rollover_bytes", 1000, "[provenance] rollover_bytes must be at least 1048576, not 1000"),
        ("rollover_bytes", 1.5e6, "[provenance] rollover_bytes must be an integer, not 1500000.0"),
    ],
)
def test_a_rollover_that_cannot_be_meant_is_refused_by_name(key, value, words):
    from tests.unit.cluster.test_node_config import body, refused

    refused(body(**{f"provenance.{key}": value}), words)


@pytest.mark.parametrize(
    "kerberos, words",
    [
        ("custody@EXAMPLE.TEST", "[hdfs.kerberos] must be a table"),
        ({"ticket_cache": 5}, "[hdfs.kerberos] ticket_cache must be a string, not 5"),
        ({"keytab": 5}, "[hdfs.kerberos] keytab must be a file name (a string), not 5"),
    ],
)
def test_the_kerberos_table_is_checked_as_any_other(kerberos, words):
    from tests.unit.cluster.test_node_config import body, refused

    refused(body(**{"hdfs.kerberos": kerberos}), words)


# -- the schema language ------------------------------------------------------------------------
TINY = Schema(
    (
        Section("", (Key("name", Text(), "a name"),)),
        Section("limits", (Key("count", Integer(1, 9), "how many", default=3), Key("on", Flag(), "on", default=True))),
        Section("limits.extra", (Key("note", Text(), "a note", default=""),), optional=True),
    )
)


def test_the_walk_fills_defaults_and_reads_an_absent_optional_section_as_none():
    assert TINY.read({"name": " a "}, "/") == {
        "": {"name": "a"},
        "limits": {"count": 3, "on": True},
        "limits.extra": None,
    }
    assert TINY.read({"name": "a", "limits": {"extra": {}}}, "/")["limits.extra"] == {"note": ""}


@pytest.mark.parametrize(
    "body, message",
    [
        (
            {"name": "a", "limits": {"cuont": 2}},
            "unknown setting(s) ['cuont'] in [limits]; known: ['count', 'extra', 'on']",
        ),
        ({"name": "a", "limits": {"extra": {"note": 1}}}, "[limits.extra] note must be a string, not 1"),
        ({"name": "a", "limits": 4}, "[limits] must be a table"),
        ({"limits": {"count": 2}}, "name is required (a non-empty string)"),
        ({"name": "a", "limits": {"count": 10}}, "[limits] count must be at most 9, not 10"),
    ],
)
def test_the_walk_names_the_setting_it_refuses(body, message):
    with pytest.raises(Invalid) as raised:
        TINY.read(body, "/")
    assert str(raised.value) == message


def test_a_misspelt_key_is_reported_before_the_required_one_it_was_meant_to_be():
    with pytest.raises(Invalid, match=r"unknown setting\(s\) \['nmae'\]"):
        TINY.read({"nmae": "a"}, "/")


def test_a_section_declared_before_the_one_it_is_in_is_a_slip_found_at_once():
    with pytest.raises(ValueError, match=r"\[a.b\] is declared twice or before its parent"):
        Schema((Section("", ()), Section("a.b", ()), Section("a", ())))


def test_a_default_its_own_range_refuses_fails_on_the_first_read():
    slipped = Schema((Section("", (Key("count", Integer(1, 9), "how many", default=0),)),))
    with pytest.raises(Invalid, match="count must be at least 1, not 0"):
        slipped.read({}, "/")


def test_a_refused_setting_is_a_node_config_error_naming_the_file(tmp_path):
    path = tmp_path / "n1.toml"
    path.write_text(EVERY_KEY.replace("rollover_age = 2.5", "rollover_age = -1"))
    with pytest.raises(NodeConfigError) as raised:
        load_node_config(str(path))
    assert str(raised.value) == f"{path}: [provenance] rollover_age must be at least 0.1, not -1"
