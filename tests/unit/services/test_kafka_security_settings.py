"""The secure broker's settings and the storage tool's SCRAM options, without a JVM:
SASL with every mechanism on both SASL listeners, TLS on the SASL_SSL one, and
credentials that need no quoting and stay readable by their owner only."""

from __future__ import annotations

import re
import stat
from pathlib import Path

from cluster.services.kafka import listener_settings, server_properties, setting_names
from cluster.services.kafka_security import (
    MECHANISMS,
    Credentials,
    keytool_binary,
    sasl_settings,
    scram_arguments,
    tls_settings,
)

CREDENTIALS = Credentials("custody", "0123abcd", "store-secret")


def test_the_default_listeners_are_plaintext_and_the_controllers():
    settings = listener_settings({"PLAINTEXT": "127.0.0.1:1", "CONTROLLER": "127.0.0.1:2"})
    assert settings == {
        "listeners": "PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:2",
        "advertised.listeners": "PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:2",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    }


def test_a_sasl_listener_speaks_the_protocol_it_is_named_for():
    settings = listener_settings({"PLAINTEXT": "h:1", "CONTROLLER": "h:2", "SASL_SSL": "h:3", "SASL_PLAINTEXT": "h:4"})
    assert settings["listener.security.protocol.map"] == (
        "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
    )
    assert settings["listeners"].endswith(",SASL_SSL://h:3,SASL_PLAINTEXT://h:4")


def test_each_sasl_listener_has_one_login_module_per_mechanism():
    settings = sasl_settings(CREDENTIALS)
    assert settings["sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    for listener in ("sasl_ssl", "sasl_plaintext"):
        plain = settings[f"listener.name.{listener}.plain.sasl.jaas.config"]
        assert plain == ('org.apache.kafka.common.security.plain.PlainLoginModule required user_custody="0123abcd";')
        for mechanism in ("scram-sha-256", "scram-sha-512"):
            scram = settings[f"listener.name.{listener}.{mechanism}.sasl.jaas.config"]
            assert scram == "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    assert len(settings) == 1 + 2 * len(MECHANISMS)


def test_the_tls_listener_reads_a_pkcs12_keystore():
    assert tls_settings(Path("/w/tls/broker.p12"), "store-secret") == {
        "listener.name.sasl_ssl.ssl.keystore.type": "PKCS12",
        "listener.name.sasl_ssl.ssl.keystore.location": Path("/w/tls/broker.p12"),
        "listener.name.sasl_ssl.ssl.keystore.password": "store-secret",
    }


def test_the_secure_settings_add_to_the_shared_ones_without_setting_any_again():
    own = {**sasl_settings(CREDENTIALS), **tls_settings(Path("/k.p12"), "s"), "log.dirs": "/data"}
    names = setting_names(server_properties(own))
    assert len(names) == len(set(names)) and set(own) <= set(names)


def test_the_storage_tool_adds_the_users_credentials_for_each_scram_mechanism():
    assert scram_arguments(CREDENTIALS) == [
        "--add-scram",
        "SCRAM-SHA-256=[name=custody,password=0123abcd]",
        "--add-scram",
        "SCRAM-SHA-512=[name=custody,password=0123abcd]",
    ]


def test_new_credentials_are_random_hex_kept_for_the_owner_only(tmp_path):
    first, second = Credentials.new(), Credentials.new()
    assert first.password != second.password and first.password != first.store_password
    for secret in (first.password, first.store_password):
        assert re.fullmatch(r"[0-9a-f]{32}", secret)  # nothing to quote in JAAS or in --add-scram
    path = tmp_path / "credentials.json"
    first.save(path)
    assert Credentials.load(path) == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_keytool_is_found_beside_the_real_java_behind_a_link(tmp_path):
    bin_dir = tmp_path / "jvm" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "java").touch()
    (tmp_path / "java").symlink_to(bin_dir / "java")
    assert keytool_binary(str(tmp_path / "java")) == str(bin_dir / "keytool")
