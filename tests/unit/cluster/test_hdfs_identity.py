"""The HDFS identity from NODE.toml: the simple-authentication user, or a Kerberos
login from a keytab (here with a stand-in `kinit` on PATH that records how it was
called: no KDC runs in unit tests), put in the process's environment before the
first client is made."""

from __future__ import annotations

import os
import textwrap

import pytest

from cluster import hdfs_identity
from cluster.hdfs_identity import HdfsIdentity, HdfsIdentityError, KerberosSettings, apply_identity
from cluster.node.config import NodeConfigError, parse_node_config


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    """Each test is a process that has no HDFS identity yet."""
    monkeypatch.setattr(hdfs_identity, "_applied", None)
    monkeypatch.setattr(hdfs_identity, "_renewal", None)
    for variable in ("HADOOP_USER_NAME", "KRB5CCNAME"):
        # Set first, so that monkeypatch records the variable and takes back what the
        # test's apply_identity puts there: an absent variable deleted is not recorded,
        # and the identity would stay in this process for every later test.
        monkeypatch.setenv(variable, "")
        monkeypatch.delenv(variable)
    yield
    hdfs_identity.stop_renewal()


def node_toml(tmp_path, hdfs: dict) -> dict:
    return {
        "name": "n1",
        "flow": "flow.yaml",
        "directory": str(tmp_path / "data"),
        "zookeeper": {"hosts": "127.0.0.1:2181", "cluster": "c", "insecure": True},
        "hdfs": {"url": "hdfs://127.0.0.1:8020", **hdfs},
    }


def keytab(tmp_path, mode: int = 0o600) -> str:
    path = tmp_path / "custody.keytab"
    path.write_bytes(b"\x05\x02")
    path.chmod(mode)
    return str(path)


def fake_kinit(tmp_path, monkeypatch, *, exit_code: int = 0) -> str:
    """A `kinit` first on PATH that writes its arguments to a file."""
    record = tmp_path / "kinit-calls"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "kinit"
    script.write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        echo "$@" >> {record}
        [ {exit_code} -eq 0 ] || echo "kinit: Keytab contains no suitable keys for $7" >&2
        exit {exit_code}
        """)
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return str(record)


def test_the_user_of_simple_authentication_is_set_for_every_client(tmp_path):
    config = parse_node_config(node_toml(tmp_path, {"user": "custody"}))
    assert config.hdfs_identity == HdfsIdentity(user="custody")
    apply_identity(config.hdfs_identity)
    assert os.environ["HADOOP_USER_NAME"] == "custody"
    apply_identity(config.hdfs_identity)  # the same again: nothing to do
    with pytest.raises(HdfsIdentityError, match="already HDFS identity"):
        apply_identity(HdfsIdentity(user="mallory"))
    assert os.environ["HADOOP_USER_NAME"] == "custody"


def test_without_settings_the_environment_is_left_alone(tmp_path):
    config = parse_node_config(node_toml(tmp_path, {}))
    apply_identity(config.hdfs_identity)
    assert "HADOOP_USER_NAME" not in os.environ and "KRB5CCNAME" not in os.environ


def test_a_keytab_logs_in_into_a_cache_in_the_node_directory(tmp_path, monkeypatch):
    calls = fake_kinit(tmp_path, monkeypatch)
    config = parse_node_config(
        node_toml(tmp_path, {"kerberos": {"principal": "custody/node1@EXAMPLE.TEST", "keytab": keytab(tmp_path)}})
    )
    cache = f"FILE:{tmp_path / 'data' / 'krb5cc'}"
    assert config.hdfs_identity.kerberos.ticket_cache == cache
    apply_identity(config.hdfs_identity)
    assert os.environ["KRB5CCNAME"] == cache and "HADOOP_USER_NAME" not in os.environ
    with open(calls) as file:
        assert file.read().split() == ["-k", "-t", keytab(tmp_path), "-c", cache, "custody/node1@EXAMPLE.TEST"]


def test_a_refused_login_names_the_principal_and_what_kinit_said(tmp_path, monkeypatch):
    fake_kinit(tmp_path, monkeypatch, exit_code=1)
    identity = HdfsIdentity(kerberos=KerberosSettings("custody@EXAMPLE.TEST", keytab(tmp_path), "FILE:/tmp/cc"))
    with pytest.raises(HdfsIdentityError, match="kinit as custody@EXAMPLE.TEST failed: kinit: Keytab contains"):
        apply_identity(identity)


def test_without_kinit_the_error_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    identity = HdfsIdentity(kerberos=KerberosSettings("custody@EXAMPLE.TEST", keytab(tmp_path), "FILE:/tmp/cc"))
    with pytest.raises(HdfsIdentityError, match="krb5-user"):
        apply_identity(identity)


def test_a_ticket_cache_alone_is_only_named(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no kinit, and none needed
    config = parse_node_config(node_toml(tmp_path, {"kerberos": {"ticket_cache": "FILE:/run/custody/krb5cc"}}))
    apply_identity(config.hdfs_identity)
    assert os.environ["KRB5CCNAME"] == "FILE:/run/custody/krb5cc"


@pytest.mark.parametrize(
    "hdfs, message",
    [
        ({"user": "cust ody"}, "user must be a user name"),
        ({"user": 7}, "user must be a user name"),
        ({"user": "custody", "kerberos": {"ticket_cache": "FILE:/tmp/cc"}}, "exclude each other"),
        ({"kerberos": {"principal": "custody@EXAMPLE.TEST"}}, "principal and keytab go together"),
        ({"kerberos": {}}, "needs ticket_cache"),
        ({"kerberos": {"ticket_cache": "FILE:/tmp/cc", "realm": "X"}}, r"unknown setting\(s\) \['realm'\]"),
        ({"kerberos": {"ticket_cache": "FILE:/tmp/cc", "renew_interval": 5}}, "at least 60 seconds"),
        ({"kerberos": "custody@EXAMPLE.TEST"}, r"\[hdfs.kerberos\] must be a table"),
    ],
)
def test_wrong_settings_are_refused_by_name(tmp_path, hdfs, message):
    with pytest.raises(NodeConfigError, match=message):
        parse_node_config(node_toml(tmp_path, hdfs))


def test_a_keytab_others_can_read_is_refused(tmp_path):
    path = keytab(tmp_path, 0o644)
    with pytest.raises(NodeConfigError, match=f"readable by others .*chmod 600 {path}"):
        parse_node_config(node_toml(tmp_path, {"kerberos": {"principal": "custody@EXAMPLE.TEST", "keytab": path}}))
