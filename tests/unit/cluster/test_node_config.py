"""NODE.toml: what a valid file gives, and that every mistake is refused by name."""

import copy
import os
import textwrap

import pytest

from cluster.node.config import NodeConfig, NodeConfigError, load_node_config, parse_node_config

MINIMAL = {
    "name": "n1",
    "flow": "flow.yaml",
    "zookeeper": {"hosts": "127.0.0.1:2181", "cluster": "main", "insecure": True},  # open: no credentials file here
    "hdfs": {"url": "hdfs://127.0.0.1:8020"},
}

FULL_TOML = """
    name = "n1"
    flow = "flows/flow.yaml"
    directory = "/var/lib/custody"

    [flow_parameters]
    out = "/data/out"
    count = 5

    [zookeeper]
    hosts = "127.0.0.1:2181,127.0.0.1:2182"
    chroot = "/prod/"
    cluster = "main"
    session_timeout = 6
    insecure = true

    [hdfs]
    url = "hdfs://namenode:8020"
    root = "/data/custody"
    [hdfs.config]
    "dfs.client.socket-timeout" = 5000

    [node]
    threads = 8
    capacity_weight = 2.5
    policy = "divvy"
    lead = false
    admin = "10.0.0.1:8080"
    wal_partitions = 4
    checkpoint_interval = 30.0
"""


def body(**changes):
    """MINIMAL with changes; a key "section.key" changes inside a section, None deletes."""
    out = copy.deepcopy(MINIMAL)
    for key, value in changes.items():
        section, _, name = key.rpartition(".")
        table = out.setdefault(section, {}) if section else out
        if value is None:
            table.pop(name, None)
        else:
            table[name] = value
    return out


def refused(config, *words, path="/etc/custody/n1.toml"):
    with pytest.raises(NodeConfigError) as raised:
        parse_node_config(config, path)
    message = str(raised.value)
    assert message.startswith(f"{path}: "), message
    for word in words:
        assert word in message, message
    return message


def write(tmp_path, text, name="n1.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


# -- valid files ------------------------------------------------------------------------------
def test_a_full_file_sets_every_setting(tmp_path):
    path = write(tmp_path, FULL_TOML)
    config = load_node_config(path)
    assert config == NodeConfig(
        name="n1",
        flow=str(tmp_path / "flows" / "flow.yaml"),
        directory="/var/lib/custody",
        zk_hosts="127.0.0.1:2181,127.0.0.1:2182/prod",
        cluster="main",
        hdfs_url="hdfs://namenode:8020",
        session_timeout=6.0,
        hdfs_root="/data/custody",
        hdfs_config={"dfs.client.socket-timeout": "5000"},
        flow_parameters={"out": "/data/out", "count": "5"},
        threads=8,
        capacity_weight=2.5,
        policy="divvy",
        lead=False,
        admin="10.0.0.1:8080",
        wal_partitions=4,
        checkpoint_interval=30.0,
        path=path,
    )
    assert isinstance(config.session_timeout, float)
    assert config.content_directory == "/var/lib/custody/content"
    assert config.provenance_directory == "/var/lib/custody/provenance"
    assert config.parameters == {"node": "n1", "data_dir": "/var/lib/custody", "out": "/data/out", "count": "5"}


def test_defaults_fill_in_everything_optional():
    config = parse_node_config(body(), "/etc/custody/n1.toml")
    assert (config.flow, config.directory) == ("/etc/custody/flow.yaml", "/etc/custody/n1-data")
    assert (config.zk_hosts, config.cluster, config.hdfs_url) == ("127.0.0.1:2181", "main", "hdfs://127.0.0.1:8020")
    assert (config.session_timeout, config.hdfs_root, config.hdfs_config, config.flow_parameters) == (
        4.0,
        "/custody",
        {},
        {},
    )
    assert (config.threads, config.capacity_weight, config.policy, config.lead) == (4, 1.0, "whole", True)
    assert (config.admin, config.wal_partitions, config.checkpoint_interval) == ("", 4, 60.0)
    assert config.path == "/etc/custody/n1.toml"


def test_the_admin_table_defaults_to_loopback_8080_without_tokens():
    config = parse_node_config(body(), "/etc/custody/n1.toml")
    assert (config.admin_enabled, config.admin_bind, config.admin_port, config.admin_tokens) == (
        True,
        "127.0.0.1",
        8080,
        "",
    )


def test_admin_files_are_relative_to_the_node_file():
    config = parse_node_config(
        body(
            admin={
                "bind": "0.0.0.0",
                "port": 0,
                "tokens": "tokens",
                "tls_cert": "/pki/n1.pem",
                "tls_key": "n1.key",
                "enabled": False,
            }
        ),
        "/etc/custody/n1.toml",
    )
    assert (config.admin_bind, config.admin_port, config.admin_enabled) == ("0.0.0.0", 0, False)
    assert (config.admin_tokens, config.admin_tls_cert, config.admin_tls_key) == (
        "/etc/custody/tokens",
        "/pki/n1.pem",
        "/etc/custody/n1.key",
    )


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"admin.port": 70000}, ["[admin] port", "70000"]),
        ({"admin.port": -1}, ["[admin] port", "at least 0"]),
        ({"admin.bind": ""}, ["[admin] bind"]),
        ({"admin.tokens": 5}, ["[admin] tokens", "file name"]),
        ({"admin.enabeld": True}, ["['enabeld']", "[admin]"]),
    ],
)
def test_bad_admin_settings_are_refused_by_name(changes, words):
    refused(body(**changes), *words)


def test_a_relative_directory_is_beside_the_file():
    assert parse_node_config(body(directory="data"), "/etc/custody/n1.toml").directory == "/etc/custody/data"


def test_the_chroot_is_appended_to_the_hosts():
    config = parse_node_config(body(**{"zookeeper.hosts": "a:2181,b:2181", "zookeeper.chroot": "/prod/"}))
    assert config.zk_hosts == "a:2181,b:2181/prod"


def test_a_chroot_must_be_absolute():
    refused(body(**{"zookeeper.chroot": "prod"}), "[zookeeper] chroot", "'prod'")


# -- refused: unknown, missing, wrong ------------------------------------------------------------
def test_unknown_top_level_keys_are_refused_by_name():
    refused(body(nmae="n1"), "unknown setting(s) ['nmae']", "the top level")


@pytest.mark.parametrize("section", ["zookeeper", "hdfs", "node"])
def test_unknown_keys_in_a_section_are_refused_by_name(section):
    refused(body(**{f"{section}.treads": 4}), "['treads']", f"[{section}]")


@pytest.mark.parametrize(
    "key, words",
    [
        ("name", ["name is required"]),
        ("flow", ["flow is required"]),
        ("zookeeper.hosts", ["[zookeeper] hosts is required"]),
        ("zookeeper.cluster", ["[zookeeper] cluster is required"]),
        ("hdfs.url", ["[hdfs] url is required"]),
    ],
)
def test_missing_required_keys_are_named(key, words):
    refused(body(**{key: None}), *words)


def test_a_blank_required_string_counts_as_missing():
    refused(body(name="  "), "name is required")


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("node.threads", "4", ["[node] threads must be an integer", "'4'"]),
        ("node.threads", 1.5, ["[node] threads must be an integer"]),
        ("node.threads", 0, ["[node] threads must be at least 1"]),
        ("node.wal_partitions", True, ["[node] wal_partitions must be an integer"]),
        ("node.capacity_weight", "big", ["[node] capacity_weight must be a number"]),
        ("node.checkpoint_interval", 0.5, ["[node] checkpoint_interval must be at least 1.0"]),
        ("zookeeper.session_timeout", True, ["[zookeeper] session_timeout must be a number"]),
        ("zookeeper.session_timeout", 0.5, ["[zookeeper] session_timeout must be at least 1.0"]),
        ("node.lead", "yes", ["[node] lead must be true or false"]),
        ("name", 7, ["name is required (a non-empty string)"]),
        ("zookeeper", "127.0.0.1:2181", ["[zookeeper] must be a table"]),
        ("flow_parameters", ["a"], ["[flow_parameters] must be a table"]),
        ("hdfs.config", "x", ["[hdfs.config] must be a table"]),
    ],
)
def test_wrong_types_are_refused_by_name(key, value, words):
    refused(body(**{key: value}), *words)


def test_an_unknown_policy_is_refused_with_the_choices():
    refused(body(**{"node.policy": "half"}), "[node] policy", "'half'", "whole", "divvy")


@pytest.mark.parametrize("url", ["http://namenode:8020", "namenode:8020", "file:///tmp"])
def test_an_hdfs_url_must_be_hdfs(url):
    refused(body(**{"hdfs.url": url}), "[hdfs] url must be hdfs://", repr(url))


@pytest.mark.parametrize("name", ["n-1", "node-07", "a/b"])
def test_a_node_name_that_looks_like_an_incarnation_is_refused(name):
    refused(body(name=name), f"name {name!r}", "-<digits>")


def test_a_name_with_a_dash_but_no_trailing_digits_is_fine():
    assert parse_node_config(body(name="edge-n1")).name == "edge-n1"


# -- the file --------------------------------------------------------------------------------------
def test_invalid_toml_names_the_file(tmp_path):
    path = write(tmp_path, 'name = "n1\nflow = ')
    with pytest.raises(NodeConfigError) as raised:
        load_node_config(path)
    assert str(raised.value).startswith(f"{path}: not valid TOML")


def test_a_missing_file_names_the_file(tmp_path):
    path = os.path.join(str(tmp_path), "absent.toml")
    with pytest.raises(NodeConfigError, match="absent.toml: no such node configuration file"):
        load_node_config(path)


def test_errors_from_a_file_name_the_file(tmp_path):
    path = write(tmp_path, FULL_TOML.replace('policy = "divvy"', 'policy = "half"'))
    with pytest.raises(NodeConfigError) as raised:
        load_node_config(path)
    assert str(raised.value).startswith(f"{path}: [node] policy")


def test_the_spark_table_names_the_master_and_passes_its_conf_as_strings():
    assert parse_node_config(body()).spark_master == "local[*]"
    config = parse_node_config(
        body(spark={"master": "spark://10.0.0.5:7077", "conf": {"spark.executor.memory": "1g", "spark.cores.max": 2}})
    )
    assert config.spark_master == "spark://10.0.0.5:7077"
    assert config.spark_conf == {"spark.executor.memory": "1g", "spark.cores.max": "2"}


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"spark.master": ""}, ["[spark] master"]),
        ({"spark.conf": "spark.x=1"}, ["[spark.conf]", "table"]),
        ({"spark.mastr": "local[2]"}, ["['mastr']", "[spark]"]),
    ],
)
def test_bad_spark_settings_are_refused_by_name(changes, words):
    refused(body(**changes), *words)


def test_zookeeper_credentials_come_from_a_private_file_and_never_show(tmp_path):
    secret = tmp_path / "zookeeper"
    secret.write_text("custody:pa55word\n")
    secret.chmod(0o600)
    config = parse_node_config(
        body(zookeeper={**MINIMAL["zookeeper"], "credentials_file": "zookeeper"}), str(tmp_path / "n1.toml")
    )
    assert config.zk_credentials == "custody:pa55word"
    assert "pa55word" not in repr(config)
    from cluster.clients import ClientFactory

    assert "pa55word" not in repr(ClientFactory.from_node_config(config))
    assert parse_node_config(body(), str(tmp_path / "n1.toml")).zk_credentials == ""


@pytest.mark.parametrize(
    "text, mode, says",
    [
        ("custody:pw\n", 0o644, "readable by others"),
        ("no-colon\n", 0o600, "user:password"),
        (":pw\n", 0o600, "user:password"),
        ("custody:\n", 0o600, "user:password"),
        (None, None, "cannot read"),
    ],
)
def test_a_bad_credentials_file_is_refused_by_name(tmp_path, text, mode, says):
    secret = tmp_path / "zookeeper"
    if text is not None:
        secret.write_text(text)
        secret.chmod(mode)
    with pytest.raises(NodeConfigError, match=f"credentials_file.*{says}"):
        parse_node_config(
            body(zookeeper={**MINIMAL["zookeeper"], "credentials_file": "zookeeper"}), str(tmp_path / "n1.toml")
        )


# -- ZooKeeper credentials are required, and numbers must be finite and sensible --------------
def test_a_node_without_zookeeper_credentials_is_refused_unless_it_says_insecure(tmp_path):
    open_cluster = body(zookeeper={"hosts": "127.0.0.1:2181", "cluster": "main"})
    message = refused(
        open_cluster,
        "[zookeeper] credentials_file is required",
        "world-writable",
        "custody cluster credentials FILE",
        "insecure = true",
    )
    assert "\n" not in message
    refused(body(**{"zookeeper.insecure": "yes"}), "[zookeeper] insecure must be true or false")
    assert parse_node_config(body(), "/etc/custody/n1.toml").zk_credentials == ""  # insecure = true: allowed
    secret = tmp_path / "zookeeper"
    secret.write_text("custody:pa55word\n")
    secret.chmod(0o600)
    secured = body(zookeeper={"hosts": "127.0.0.1:2181", "cluster": "main", "credentials_file": "zookeeper"})
    assert parse_node_config(secured, str(tmp_path / "n1.toml")).zk_credentials == "custody:pa55word"


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("zookeeper.session_timeout", float("nan"), ["[zookeeper] session_timeout must be a finite number, not nan"]),
        ("node.checkpoint_interval", float("inf"), ["[node] checkpoint_interval must be a finite number, not inf"]),
        ("node.shutdown_timeout", float("nan"), ["[node] shutdown_timeout must be a finite number"]),
        ("content.archive_retention", float("inf"), ["[content] archive_retention must be a finite number"]),
        ("hdfs.io_timeout", float("nan"), ["[hdfs] io_timeout must be a finite number"]),
        ("node.threads", 100_000, ["[node] threads must be at most 1024, not 100000"]),
    ],
)
def test_numbers_that_cannot_be_meant_are_refused_by_name(key, value, words):
    refused(body(**{key: value}), *words)


def test_custody_cluster_credentials_makes_a_private_file_once(tmp_path):
    from cluster.clients import make_credentials_file, read_credentials_file
    from cluster.errors import ZooKeeperAccessRefused

    path = str(tmp_path / "etc" / "zookeeper")
    make_credentials_file(path, "custody-main")
    assert os.stat(path).st_mode & 0o777 == 0o600
    user, _, password = read_credentials_file(path).partition(":")
    assert user == "custody-main" and len(password) == 48
    with pytest.raises(ZooKeeperAccessRefused, match="exists already: keep it"):
        make_credentials_file(path)  # another identity would lock the cluster's other nodes out
    with pytest.raises(ZooKeeperAccessRefused, match="without ':'"):
        make_credentials_file(str(tmp_path / "other"), "a:b")


def test_the_retention_of_what_is_kept_for_an_absent_node_is_a_week_unless_set():
    assert parse_node_config(body(), "/etc/custody/n1.toml").absent_node_retention == 7 * 86400.0
    assert parse_node_config(body(**{"node.absent_node_retention": 86400}), "/x.toml").absent_node_retention == 86400.0


@pytest.mark.parametrize(
    "value, words",
    [
        (60, "[node] absent_node_retention must be at least 3600.0, not 60"),
        (float("inf"), "[node] absent_node_retention must be a finite number"),
        ("7 days", "[node] absent_node_retention must be a number"),
        (1e12, "[node] absent_node_retention must be at most"),
    ],
)
def test_a_retention_that_would_collect_a_restarting_nodes_state_or_never_is_refused(value, words):
    refused(body(**{"node.absent_node_retention": value}), words)


# -- [hdfs.config] settings Custody reads itself --------------------------------------------------
@pytest.mark.parametrize("size", ["lots", "16q", "-1m", "1000"])
def test_a_block_size_hdfs_would_not_take_is_refused_at_load(size):
    refused(body(**{"hdfs.config": {"dfs.blocksize": size}}), "[hdfs.config]", "dfs.blocksize", repr(size))


def test_a_block_size_in_hadoop_notation_is_taken():
    config = parse_node_config(body(**{"hdfs.config": {"dfs.blocksize": "64m"}}))
    assert config.hdfs_config["dfs.blocksize"] == "64m"
