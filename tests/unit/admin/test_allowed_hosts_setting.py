"""The names an admin API answers to, as an operator sets them: `[admin] allowed_hosts`
in NODE.toml, `--admin-allowed-host` of `custody run`, and the announced `[node] admin`."""

import copy

import pytest

from cluster.admin.settings import AdminSettings, AdminSettingsRefused, from_node_config, parse_address
from cluster.cli import build_parser
from cluster.node.config import NodeConfigError, parse_node_config
from tests.unit.cluster.test_node_config import MINIMAL  # the smallest valid NODE.toml, kept with its tests


def node_file(admin=None, node=None) -> dict:
    body = copy.deepcopy(MINIMAL)
    body["admin"] = admin or {}
    body["node"] = node or {}
    return body


def test_node_toml_names_and_the_announced_address_are_answered_to():
    config = parse_node_config(
        node_file(
            {"bind": "0.0.0.0", "tokens": "t", "allowed_hosts": ["custody.example"]}, {"admin": "http://custody1:8080"}
        ),
        "/etc/custody/n1.toml",
    )
    assert config.admin_allowed_hosts == ("custody.example",)
    hosts = from_node_config(config).hosts()
    assert hosts.allows("custody.example:8080") and hosts.allows("custody1:8080")
    assert not hosts.allows("attacker.example")


@pytest.mark.parametrize("value", ["custody.example", [""], [5], {"a": 1}])
def test_node_toml_allowed_hosts_must_be_a_list_of_names(value):
    with pytest.raises(NodeConfigError, match=r"\[admin\] allowed_hosts must be a list of host names"):
        parse_node_config(node_file({"allowed_hosts": value}), "/etc/custody/n1.toml")


def test_a_name_that_is_not_bare_is_refused_with_what_to_write():
    with pytest.raises(AdminSettingsRefused, match=r"\[admin\] allowed_hosts: 'http://custody.example'.*bare"):
        AdminSettings(allowed_hosts=("http://custody.example",)).check()


def test_custody_run_takes_allowed_hosts_on_its_command_line():
    args = build_parser().parse_args(
        [
            "run",
            "--flow",
            "f.yaml",
            "--data-dir",
            "d",
            "--admin",
            "127.0.0.1:0",
            "--admin-allowed-host",
            "custody.example",
            "--admin-allowed-host",
            "n1.lan",
        ]
    )
    settings = parse_address(args.admin, allowed_hosts=args.admin_allowed_host)
    assert settings.allowed_hosts == ("custody.example", "n1.lan")
    assert settings.hosts().allows("n1.lan:8080") and settings.hosts().allows("localhost:8080")
