"""A Kafka broker's client authentication, for the tests of the Kafka processors'
security settings: SASL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, over TLS
(`SASL_SSL`) and in clear (`SASL_PLAINTEXT`), each on a listener of its own beside
the PLAINTEXT one every other test uses. The broker still talks to itself over
PLAINTEXT, so it needs no credentials of its own.

Each listener's SASL users are configured as Kafka's security guide does it, in the
broker's server.properties: PLAIN's users in the listener's JAAS configuration
(`listener.name.<listener>.plain.sasl.jaas.config`, a `user_<name>="<password>"` entry
each), SCRAM's credentials in the cluster metadata, written when the storage tool
formats the log directory (`--add-scram`, KRaft's way, KIP-900).

TLS: a CA of the broker's own and a certificate it signed for 127.0.0.1 and localhost,
made with the JDK's keytool beside the broker's java. The broker reads its key and
certificate chain from a PKCS12 keystore; a client trusts the CA's certificate, a PEM
file (librdkafka's `ssl.ca.location`). Nothing asks a client for a certificate, so the
broker keeps no truststore.

The password (one user, `USERNAME`, for every mechanism) and the keystores' password
are random per broker and kept in its work directory (`Credentials`).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from .process import ServiceError

USERNAME = "custody"
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_MECHANISMS = MECHANISMS[1:]
# Each listener is named for its security protocol (Kafka's default map reads them so too).
SASL_LISTENERS = ("SASL_SSL", "SASL_PLAINTEXT")
TLS_LISTENER = "SASL_SSL"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
CERTIFICATE_NAMES = "ip:127.0.0.1,dns:localhost"  # what a client may dial the broker by
CERTIFICATE_DAYS = "30"


@dataclass(frozen=True)
class Credentials:
    """The SASL user's name and password, and the password of the keystores. Drawn as
    hex, so that no character needs quoting in a JAAS value or in `--add-scram`'s
    `[name=...,password=...]`."""

    username: str
    password: str
    store_password: str

    @classmethod
    def new(cls) -> Credentials:
        return cls(USERNAME, secrets.token_hex(16), secrets.token_hex(16))

    def save(self, path: Path) -> None:
        """Readable by its owner only: it holds the password."""
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            json.dump(asdict(self), handle)

    @classmethod
    def load(cls, path: Path) -> Credentials:
        return cls(**json.loads(path.read_text()))


def sasl_settings(credentials: Credentials) -> dict[str, str]:
    """The broker settings for SASL on each of `SASL_LISTENERS`: the mechanisms it
    accepts, and one JAAS configuration per listener and mechanism (Kafka takes one
    login module per `listener.name.<listener>.<mechanism>.sasl.jaas.config`)."""
    settings = {"sasl.enabled.mechanisms": ",".join(MECHANISMS)}
    plain = f'{PLAIN_LOGIN_MODULE} required user_{credentials.username}="{credentials.password}";'
    for listener in SASL_LISTENERS:
        prefix = f"listener.name.{listener.lower()}"
        settings[f"{prefix}.plain.sasl.jaas.config"] = plain
        for mechanism in SCRAM_MECHANISMS:
            # The SCRAM credentials are in the cluster metadata: the module takes no options.
            settings[f"{prefix}.{mechanism.lower()}.sasl.jaas.config"] = f"{SCRAM_LOGIN_MODULE} required;"
    return settings


def tls_settings(keystore: Path, store_password: str) -> dict[str, object]:
    """The TLS listener's keystore (its key's password is the keystore's, as PKCS12 has it)."""
    prefix = f"listener.name.{TLS_LISTENER.lower()}"
    return {
        f"{prefix}.ssl.keystore.type": "PKCS12",
        f"{prefix}.ssl.keystore.location": keystore,
        f"{prefix}.ssl.keystore.password": store_password,
    }


def scram_arguments(credentials: Credentials) -> list[str]:
    """The storage tool's `--add-scram` options: the user's credentials for each SCRAM mechanism."""
    arguments = []
    for mechanism in SCRAM_MECHANISMS:
        arguments += ["--add-scram", f"{mechanism}=[name={credentials.username},password={credentials.password}]"]
    return arguments


def keytool_binary(java: str) -> str:
    """The JDK's keytool, beside `java` (which may be a link, as /usr/bin/java is)."""
    return str(Path(java).resolve().parent / "keytool")


def certificate_authority(keytool: str, directory: Path, name: str, store_password: str) -> tuple[Path, Path]:
    """A self-signed CA called `name`: its PKCS12 keystore (to sign with) and its
    certificate as PEM (for a client to trust)."""
    keystore, pem = directory / f"{name}.p12", directory / f"{name}.pem"
    store = ["-keystore", str(keystore), "-storetype", "PKCS12", "-storepass", store_password]
    _keytool(keytool, "-genkeypair", "-alias", "ca", *_new_key(f"CN={name}"), "-ext", "bc:c", *store)
    _keytool(keytool, "-exportcert", "-alias", "ca", "-rfc", "-file", str(pem), *store)
    return keystore, pem


def broker_keystore(keytool: str, directory: Path, ca_keystore: Path, ca_pem: Path, store_password: str) -> Path:
    """A PKCS12 keystore with the broker's key and its certificate for
    `CERTIFICATE_NAMES`, signed by the CA, with the CA's certificate after it in the
    chain the broker presents."""
    keystore, request, certificate = directory / "broker.p12", directory / "broker.csr", directory / "broker.pem"
    store = ["-keystore", str(keystore), "-storetype", "PKCS12", "-storepass", store_password]
    _keytool(keytool, "-genkeypair", "-alias", "broker", *_new_key("CN=localhost"), *store)
    _keytool(keytool, "-certreq", "-alias", "broker", "-file", str(request), *store)
    _keytool(
        keytool,
        "-gencert",
        "-alias",
        "ca",
        "-keystore",
        str(ca_keystore),
        "-storepass",
        store_password,
        "-infile",
        str(request),
        "-outfile",
        str(certificate),
        "-rfc",
        "-validity",
        CERTIFICATE_DAYS,
        "-ext",
        f"SAN={CERTIFICATE_NAMES}",
    )
    # keytool installs a signed certificate only over a chain it can build: the CA first.
    _keytool(keytool, "-importcert", "-alias", "ca", "-file", str(ca_pem), "-noprompt", *store)
    _keytool(keytool, "-importcert", "-alias", "broker", "-file", str(certificate), *store)
    return keystore


def _new_key(subject: str) -> list[str]:
    return ["-keyalg", "RSA", "-keysize", "2048", "-dname", subject, "-validity", CERTIFICATE_DAYS]


def _keytool(keytool: str, *arguments: str) -> None:
    result = subprocess.run([keytool, *arguments], capture_output=True, timeout=120)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).decode(errors="replace").strip()
        raise ServiceError(f"keytool {arguments[0]} failed (exit {result.returncode}): {output}")
