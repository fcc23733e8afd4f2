"""A real Kafka broker on loopback: one KRaft node, broker and controller in one JVM,
from Apache Kafka's jars.

The JVM runs `kafka.Kafka` from the jars that `install.kafka_jars()` fetched, with a
server.properties of its own under the work directory: the settings every broker of
the project shares (`SETTINGS_FILE`, cluster/services/kafka/server-settings.properties,
which docker-compose.yml's broker reads too), then this broker's own: a client listener
and a controller listener on 127.0.0.1, on ports the harness picked, and its log
directory. The first start formats that directory with Kafka's storage tool
(`format --standalone`: a quorum of this one controller); later starts reuse it, so a
killed broker comes back with every record it had acknowledged.

Ready means what a client needs: the client port answers a metadata request, through
confluent-kafka, that names this broker. Kafka opens its client listener only once
the broker has caught up with the controller's metadata, so a broker that answers is
one that serves.

`KafkaBroker(workdir, security=True)` also authenticates clients, with SASL over TLS
and in clear, on listeners of their own (`kafka_security`); its PLAINTEXT listener
stays, for the harness and for the tests' own admin clients.

The harness uses confluent-kafka itself for that: it is not the product, and like all
of `cluster.services` it imports nothing of the product.
"""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import uuid
from collections.abc import Mapping
from pathlib import Path

from . import kafka_security
from .install import ensure_service_prerequisites, java_binary, kafka_jars
from .jit import jit_options
from .jvm_dump import hang_report
from .network import HOST, free_ports, port_open
from .process import ManagedProcess, ServiceError, wait_until

SETTINGS_FILE = Path(__file__).parent / "kafka" / "server-settings.properties"
LOG4J_FILE = Path(__file__).parent / "kafka" / "log4j2.properties"
NODE_ID = 1  # SETTINGS_FILE's node.id
SERVER_MAIN = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"  # Kafka 4.x keeps its storage tool in the core jar

log = logging.getLogger(__name__)


def setting_names(text: str) -> list[str]:
    """The names a Java properties text sets, in order (comments and blank lines skipped)."""
    names = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "!")):
            names.append(stripped.split("=", 1)[0].strip())
    return names


def server_properties(own: Mapping[str, object], settings: Path = SETTINGS_FILE) -> str:
    """A broker's server.properties: the shared settings, then `own`. Java's Properties
    keeps the last of two lines with the same name, so a broker that set a shared name
    again would quietly run apart from the others: that is refused."""
    shared = settings.read_text()
    clash = sorted(set(own) & set(setting_names(shared)))
    if clash:
        raise ValueError(f"{settings} already sets {', '.join(clash)}; a broker sets only its own settings")
    lines = "".join(f"{name}={value}\n" for name, value in own.items())
    return f"{shared.rstrip()}\n\n# This broker's own.\n{lines}"


def listener_settings(addresses: Mapping[str, str]) -> dict[str, str]:
    """`listeners`, `advertised.listeners` and their protocol map for listeners named
    for their security protocol (`addresses`: name -> host:port), the controller's
    (`CONTROLLER`) speaking PLAINTEXT."""
    listeners = ",".join(f"{name}://{address}" for name, address in addresses.items())
    protocols = ",".join(f"{name}:{'PLAINTEXT' if name == 'CONTROLLER' else name}" for name in addresses)
    return {"listeners": listeners, "advertised.listeners": listeners, "listener.security.protocol.map": protocols}


def java_command(java: str, jars: Path, heap: str, main: str, *args: str, peak: bool = False) -> list[str]:
    """A Kafka JVM's command line: small heap, serial GC (one broker on 2 cores), the
    project's Log4j 2 configuration, every fetched jar on the classpath.

    Unless `peak`, the JIT compiles with C1 alone (`jit`): with C2 as well, a broker
    just started spends a fifth to a quarter of a core compiling for its first minute
    and a half, and again after every restart, on the cores the nodes' takeovers need. A
    benchmark of the broker's throughput asks for `peak`."""
    return [
        java,
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",
        *jit_options(peak),
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={LOG4J_FILE}",
        "-cp",
        f"{jars}/*",
        main,
        *args,
    ]


def new_cluster_id() -> str:
    """A KRaft cluster id as Kafka's `Uuid.randomUuid()` makes one: 16 random bytes in
    URL-safe base64 without padding, never starting with '-' (which the storage tool's
    command line would read as an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def leaderless(metadata) -> list[str]:
    """The partitions (`topic[partition]`) a metadata answer lists without a leader."""
    return [
        f"{name}[{number}]"
        for name, topic in sorted(metadata.topics.items())
        for number, partition in sorted(topic.partitions.items())
        if partition.leader < 0
    ]


class KafkaBroker:
    name = "kafka"

    def __init__(self, workdir: Path, heap: str = "256m", security: bool = False, peak: bool = False):
        """`peak`: the JIT's C2 compiler as well as C1 (`java_command`)."""
        self.security = security
        self.peak = peak
        self.workdir = Path(workdir) / ("kafka-secure" if security else "kafka")
        self.heap = heap
        self.ports: dict[str, int] = {}
        self.process: ManagedProcess | None = None
        state = self._load_state()
        if state:
            self.ports = state["ports"]
            self.process = self._server(state["pid"])

    # -- addresses ---------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """confluent-kafka's `bootstrap.servers` for this broker."""
        return f"{HOST}:{self.ports['broker']}"

    @property
    def sasl_ssl_bootstrap_servers(self) -> str:
        """The SASL over TLS listener (a broker started with `security`)."""
        return f"{HOST}:{self.ports['SASL_SSL']}"

    @property
    def sasl_plaintext_bootstrap_servers(self) -> str:
        """The SASL in clear listener (a broker started with `security`)."""
        return f"{HOST}:{self.ports['SASL_PLAINTEXT']}"

    @property
    def ca_location(self) -> Path:
        """The PEM certificate of the CA that signed the broker's (librdkafka's `ssl.ca.location`)."""
        return self.workdir / "tls" / "ca.pem"

    @property
    def username(self) -> str:
        return self._credentials().username

    @property
    def password(self) -> str:
        return self._credentials().password

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def config_path(self) -> Path:
        return self.workdir / "server.properties"

    # -- lifecycle ---------------------------------------------------------------
    def start(self, timeout: float = 90.0) -> None:
        ensure_service_prerequisites("kafka")
        kafka_jars()
        if not self.ports:
            self._configure()
        if not (self.data_dir / "meta.properties").exists():
            self._format()
        self.process.start()
        self._save_state()
        self.wait_healthy(timeout)

    def wait_healthy(self, timeout: float = 90.0) -> None:
        """Until the broker serves; fails at once, with its log, if the JVM exits."""
        try:
            wait_until(
                lambda: not self.process.alive() or self.healthy(),
                timeout,
                f"the Kafka broker at {self.bootstrap_servers} to answer a metadata request and lead every partition",
                interval=0.25,
            )
        except ServiceError as error:
            # Still running but not answering: what it is doing (stuck where, heap full?).
            raise ServiceError(
                f"{error}. Broker log ({self.process.log_path}):\n{self._log_tail()}\n{hang_report(self.process)}"
            ) from None
        if not self.process.alive():
            raise ServiceError(
                f"the Kafka broker exited while starting. Broker log ({self.process.log_path}):\n{self._log_tail()}"
            )

    def _log_tail(self) -> str:
        """The broker log's end, from its last error or exception on (above its stack)."""
        return self.process.log_tail(15, from_last=r"\bERROR\b|Exception|Error\b")

    def healthy(self) -> bool:
        """The broker answers a metadata request, and leads every partition it lists: one
        started again answers its metadata before it leads its partitions again, and a
        client that reads or writes meanwhile is told NOT_LEADER_FOR_PARTITION."""
        if not self.ports or not port_open(self.ports["broker"]):
            return False
        from confluent_kafka.admin import AdminClient

        # librdkafka's own complaints (a refused connection while the broker restarts)
        # go to this module's logger, not to the test runner's stderr.
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "logger": log})
        try:
            metadata = admin.list_topics(timeout=2)
        except Exception:  # noqa: BLE001 - no answer yet
            return False
        return NODE_ID in metadata.brokers and not leaderless(metadata)

    def serving_or_restarted(self, patience: float = 30.0, timeout: float = 90.0) -> bool:
        """Make sure the broker serves: one that runs is given `patience` seconds to
        answer; one that is dead, or still silent then, is started again (`restart`).
        True if it was. What a session's shared broker needs before each test, so that
        one test leaving it dead or hung fails alone."""
        if self.process and self.process.alive():
            try:
                wait_until(self.healthy, patience, f"the Kafka broker at {self.bootstrap_servers} to answer")
                return False
            except ServiceError as error:
                log.warning("%s; restarting it", error)
        else:
            log.warning("the Kafka broker at %s is not running; starting it again", self.bootstrap_servers)
        self.restart(timeout)
        return True

    def stop(self) -> None:
        if self.process:
            self.process.stop()

    def kill(self) -> None:
        """SIGKILL: the broker dies with whatever it had not yet written out."""
        self.process.kill()

    def restart(self, timeout: float = 90.0) -> None:
        """Stop (a killed broker is already down) and start again on the same log directory."""
        self.process.stop()
        self.process.start()
        self._save_state()
        self.wait_healthy(timeout)

    def status(self) -> dict:
        return {
            "bootstrap_servers": self.bootstrap_servers,
            "pid": self.process.pid if self.process else None,
            "healthy": self.healthy(),
        }

    # -- internals -----------------------------------------------------------------
    def _configure(self) -> None:
        names = ("broker", "controller") + (kafka_security.SASL_LISTENERS if self.security else ())
        self.ports = dict(zip(names, free_ports(len(names)), strict=True))
        addresses = {"PLAINTEXT": f"{HOST}:{self.ports['broker']}", "CONTROLLER": f"{HOST}:{self.ports['controller']}"}
        addresses.update({name: f"{HOST}:{self.ports[name]}" for name in names[2:]})
        own: dict[str, object] = {
            **listener_settings(addresses),
            "controller.quorum.bootstrap.servers": addresses["CONTROLLER"],
            "log.dirs": self.data_dir,
        }
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.security:
            own.update(self._secure())
        self.config_path.write_text(server_properties(own))
        self.process = self._server(None)

    def _secure(self) -> dict[str, object]:
        """New credentials, a CA and the broker's keystore: the settings that use them."""
        credentials = kafka_security.Credentials.new()
        credentials.save(self._credentials_path())
        tls = self.ca_location.parent
        tls.mkdir(exist_ok=True)
        keytool = kafka_security.keytool_binary(java_binary())
        ca_keystore, ca_pem = kafka_security.certificate_authority(keytool, tls, "ca", credentials.store_password)
        keystore = kafka_security.broker_keystore(keytool, tls, ca_keystore, ca_pem, credentials.store_password)
        return {
            **kafka_security.sasl_settings(credentials),
            **kafka_security.tls_settings(keystore, credentials.store_password),
        }

    def _credentials_path(self) -> Path:
        return self.workdir / "credentials.json"

    def _credentials(self) -> kafka_security.Credentials:
        return kafka_security.Credentials.load(self._credentials_path())

    def _server(self, pid: int | None) -> ManagedProcess:
        argv = java_command(java_binary(), kafka_jars(), self.heap, SERVER_MAIN, str(self.config_path), peak=self.peak)
        return ManagedProcess.attach("kafka", argv, str(self.workdir / "server.log"), pid)

    def _format(self) -> None:
        argv = java_command(
            java_binary(),
            kafka_jars(),
            self.heap,
            STORAGE_TOOL,
            "format",
            "--standalone",
            "--cluster-id",
            new_cluster_id(),
            "--config",
            str(self.config_path),
            *(kafka_security.scram_arguments(self._credentials()) if self.security else ()),
        )
        result = subprocess.run(argv, capture_output=True, timeout=180)
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).decode(errors="replace").splitlines()[-15:])
            raise ServiceError(
                f"formatting the Kafka broker's log directory failed (exit {result.returncode}):\n{tail}"
            )

    def _state_path(self) -> Path:
        return self.workdir / "state.json"

    def _save_state(self) -> None:
        self._state_path().write_text(json.dumps({"ports": self.ports, "pid": self.process.pid}))

    def _load_state(self) -> dict | None:
        try:
            return json.loads(self._state_path().read_text())
        except (OSError, ValueError):
            return None
