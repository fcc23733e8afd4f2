"""`custody node --name/--directory/--admin-url`: one NODE.toml for several nodes (no services)."""

import os
import textwrap

import pytest

from cluster.cli import build_parser
from cluster.commands.node import load_config
from cluster.node.config import NodeConfigError

BODY = """
    name = "n1"
    flow = "flow.yaml"
    {directory}
    [zookeeper]
    hosts = "zk1:2181"
    cluster = "main"
    insecure = true
    [hdfs]
    url = "hdfs://namenode:8020"
"""


def node_toml(tmp_path, directory_line: str = "") -> str:
    path = tmp_path / "node.toml"
    path.write_text(textwrap.dedent(BODY.format(directory=directory_line)))
    return str(path)


def parse(*argv: str):
    args = build_parser().parse_args(["node", *argv])
    assert args.command == "node"
    return args


def test_without_flags_the_file_decides(tmp_path):
    config = load_config(parse("--config", node_toml(tmp_path)))
    assert config.name == "n1"
    assert config.directory == str(tmp_path / "n1-data")


def test_name_overrides_and_the_default_directory_follows_it(tmp_path):
    config = load_config(parse("--config", node_toml(tmp_path), "--name", "n2"))
    assert config.name == "n2"
    assert config.directory == str(tmp_path / "n2-data")
    assert config.parameters["node"] == "n2"
    assert config.parameters["out"] == str(tmp_path / "n2-data" / "out")


def test_name_override_keeps_a_directory_the_file_sets(tmp_path):
    config = load_config(parse("--config", node_toml(tmp_path, 'directory = "/var/lib/custody"'), "--name", "n3"))
    assert (config.name, config.directory) == ("n3", "/var/lib/custody")


def test_directory_overrides_relative_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config(
        parse(
            "--config", node_toml(tmp_path, 'directory = "/var/lib/custody"'), "--name", "n2", "--directory", "data/n2"
        )
    )
    assert (config.name, config.directory) == ("n2", os.path.join(str(tmp_path), "data", "n2"))
    assert config.content_directory == os.path.join(str(tmp_path), "data", "n2", "content")


def test_admin_url_overrides_the_address_the_node_announces(tmp_path):
    config = load_config(parse("--config", node_toml(tmp_path), "--name", "n2", "--admin-url", "http://custody2:8080/"))
    assert config.admin == "http://custody2:8080"
    assert load_config(parse("--config", node_toml(tmp_path))).admin == ""


@pytest.mark.parametrize("name", ["", "a/b", "n-1"])
def test_a_bad_name_is_refused(tmp_path, name):
    with pytest.raises(NodeConfigError, match="name"):
        load_config(parse("--config", node_toml(tmp_path), "--name", name))


def test_a_thread_stuck_in_storage_does_not_hold_the_exit(caplog):
    import logging
    import threading

    from cluster.commands.node import exit_past_stuck_threads

    release = threading.Event()
    stuck = threading.Thread(target=release.wait, name="flow-task_0", daemon=False)
    stuck.start()
    exits = []
    try:
        with caplog.at_level(logging.WARNING):
            exit_past_stuck_threads(logging.getLogger("custody.node"), 0, exit=exits.append)
    finally:
        release.set()
        stuck.join()
    assert exits == [0]
    assert "flow-task_0" in caplog.text


@pytest.mark.parametrize(
    "argv, says",
    [
        (["decommission"], "the node's NAME is required"),
        (["decommission", "n3"], "give --config NODE.toml (any node's of the cluster) or --url"),
        (["connect", "n3"], "give --config NODE.toml (any node's of the cluster) or --url"),
        (["offload", "n3"], "custody node offload: takes no NAME (decommission and connect do)"),
    ],
)
def test_decommission_and_connect_need_a_name_and_a_way_to_the_cluster(argv, says, capsys):
    from cluster.cli import main

    assert main(["node", *argv]) == 2
    assert says in capsys.readouterr().err


def test_decommission_through_a_node_that_does_not_answer_says_so(capsys):
    from cluster.cli import main

    assert main(["node", "decommission", "n3", "--url", "http://127.0.0.1:9"]) == 1
    assert "the admin API at http://127.0.0.1:9 did not answer" in capsys.readouterr().err
