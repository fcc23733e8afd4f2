"""A ZooKeeper ensemble on loopback, from Debian's `zookeeper` package.

Each member is one JVM (`QuorumPeerMain`) with its own data directory, `myid` and
`zoo.cfg` under the work directory, on ports the harness picked. tickTime is 200 ms:
ZooKeeper checks for expired sessions once a tick, so a dead client's session ends
at most a tick after its timeout (a dead node is detected that much sooner than
with the usual 2 s tick). Session timeouts from 1 s to 20 s are accepted, and
followers get 10 s to join and 5 s to stay in sync, whatever the tick.

Faults for the drills: `kill_member`, `pause_member` and `restart_member` act on one
JVM; `expire_session` expires a kazoo client's session the way ZooKeeper itself
would, by attaching a second connection to the same session and closing it.

The harness uses kazoo itself, for that: it is not the product (whose kazoo stays in
`cluster.zk`), and like all of `cluster.services` it imports nothing of the product.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .install import ensure_service_prerequisites, java_binary
from .jit import jit_options
from .network import HOST, four_letter_word, free_ports
from .process import ManagedProcess, ServiceError, wait_until

if TYPE_CHECKING:
    from kazoo.client import KazooClient

ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
# ZooKeeper logs through SLF4J, whose Debian jars (a dependency of the zookeeper package)
# include the simple binding: without a binding every line, fsync warnings among them, is
# dropped. It writes to stderr, which the member's server.log captures.
SLF4J_BINDING = "/usr/share/java/slf4j-simple.jar"
_SLF4J_SETTINGS = (
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
    "-Dorg.slf4j.simpleLogger.showShortLogName=true",
)
TICK_MS = 200


@dataclass
class ZooKeeperMember:
    index: int  # 1-based, the member's myid
    client_port: int
    peer_port: int
    election_port: int
    process: ManagedProcess

    def mode(self) -> str | None:
        """'leader', 'follower' or 'standalone' when the member serves; None otherwise."""
        try:
            reply = four_letter_word(self.client_port, "srvr", timeout=1.0)
        except OSError:
            return None
        for line in reply.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None


class ZooKeeperEnsemble:
    name = "zookeeper"

    def __init__(self, workdir: Path, size: int = 3, heap: str = "128m", peak: bool = False):
        """`peak`: the JIT's C2 compiler as well as C1 (`jit`)."""
        self.workdir = Path(workdir) / "zookeeper"
        self.peak = peak
        self.size = size
        self.heap = heap
        self.members: list[ZooKeeperMember] = []
        state = self._load_state()
        if state:
            self._adopt(state)

    # -- lifecycle -----------------------------------------------------------
    def start(self, timeout: float = 60.0) -> None:
        ensure_service_prerequisites("zookeeper")
        if not Path(ZOOKEEPER_JAR).exists():
            raise ServiceError(f"ZooKeeper is still missing after installing Debian's zookeeper ({ZOOKEEPER_JAR})")
        if not self.members:
            self._configure()
        for member in self.members:
            member.process.start()
        self._save_state()
        self.wait_healthy(timeout)

    def wait_healthy(self, timeout: float = 60.0) -> None:
        try:
            wait_until(self.healthy, timeout, "a ZooKeeper quorum with one leader")
        except ServiceError as error:
            raise ServiceError(f"{error}; member logs are under {self.workdir}") from None

    def healthy(self) -> bool:
        modes = [member.mode() for member in self.members]
        return modes.count("leader") == 1 and modes.count("follower") == self.size - 1

    def stop(self) -> None:
        for member in self.members:
            member.process.stop()

    @property
    def hosts(self) -> str:
        """The kazoo connection string, without chroot."""
        return ",".join(f"{HOST}:{member.client_port}" for member in self.members)

    def connection_string(self, chroot: str = "") -> str:
        return self.hosts + chroot

    def status(self) -> dict:
        return {
            "hosts": self.hosts,
            "members": [
                {"myid": member.index, "port": member.client_port, "pid": member.process.pid, "mode": member.mode()}
                for member in self.members
            ],
            "healthy": self.healthy(),
        }

    # -- faults --------------------------------------------------------------
    def member(self, index: int) -> ZooKeeperMember:
        return self.members[index - 1]

    def leader(self) -> ZooKeeperMember:
        for member in self.members:
            if member.mode() == "leader":
                return member
        raise ServiceError("the ZooKeeper ensemble has no leader right now")

    def followers(self) -> list[ZooKeeperMember]:
        return [member for member in self.members if member.mode() == "follower"]

    def kill_member(self, index: int) -> None:
        self.member(index).process.kill()

    def pause_member(self, index: int) -> None:
        self.member(index).process.pause()

    def resume_member(self, index: int) -> None:
        self.member(index).process.resume()

    def restart_member(self, index: int, timeout: float = 60.0) -> None:
        member = self.member(index)
        member.process.stop()
        member.process.start()
        self._save_state()
        wait_until(lambda: member.mode() in ("leader", "follower"), timeout, f"ZooKeeper member {index} to rejoin")

    @staticmethod
    def expire_session(client: KazooClient, timeout: float = 30.0) -> None:
        """Expire `client`'s session on the server, as a real expiry would.

        A second client attaches to the same session id and password, then closes it;
        closing a session ends it for every connection, so the first client is told its
        session expired when it next talks to the server. Waits until it has noticed.
        """
        from kazoo.client import KazooClient
        from kazoo.protocol.states import KazooState

        lost = threading.Event()

        def watch(state):
            if state == KazooState.LOST:
                lost.set()
                return True
            return False

        client.add_listener(watch)
        hosts = ",".join(f"{host}:{port}" for host, port in client.hosts)
        session = client.client_id
        deadline = time.monotonic() + timeout
        while True:
            # The intruder's attach moves the session to its server; the client, cut off
            # by that, reconnects and may move it back before the intruder's close, which
            # ZooKeeper then refuses as coming from a connection that no longer owns the
            # session (it was seen: the session lived on). So the intruder comes again
            # until the session is over.
            intruder = KazooClient(hosts=hosts, client_id=session, timeout=timeout)
            try:
                intruder.start(timeout=timeout)
                intruder.stop()
            except Exception:  # noqa: BLE001 - the session is already over: the client hears it
                pass
            finally:
                intruder.close()
            left = deadline - time.monotonic()
            if lost.wait(min(3.0, max(left, 0.0))):
                return
            if time.monotonic() >= deadline:
                raise ServiceError(
                    f"client with session 0x{session[0]:x} did not see its session expire within {timeout:.0f}s"
                )

    # -- internals -------------------------------------------------------------
    def _configure(self) -> None:
        ports = free_ports(3 * self.size)
        self.members = []
        for index in range(1, self.size + 1):
            client_port, peer_port, election_port = ports[3 * (index - 1) : 3 * index]
            self.members.append(ZooKeeperMember(index, client_port, peer_port, election_port, None))  # type: ignore[arg-type]
        servers = "\n".join(f"server.{m.index}={HOST}:{m.peer_port}:{m.election_port}" for m in self.members)
        for member in self.members:
            home = self.workdir / f"member-{member.index}"
            data = home / "data"
            data.mkdir(parents=True, exist_ok=True)
            (data / "myid").write_text(f"{member.index}\n")
            config = home / "zoo.cfg"
            config.write_text(
                f"tickTime={TICK_MS}\ninitLimit={10_000 // TICK_MS}\nsyncLimit={5_000 // TICK_MS}\n"
                f"dataDir={data}\nclientPort={member.client_port}\nclientPortAddress={HOST}\n"
                "admin.enableServer=false\n4lw.commands.whitelist=srvr,mntr,ruok\nmaxClientCnxns=200\n"
                "minSessionTimeout=1000\nmaxSessionTimeout=20000\n"
                f"{servers}\n"
            )
            member.process = self._process(member.index, home, config, pid=None)

    def _process(self, index: int, home: Path, config: Path, pid: int | None) -> ManagedProcess:
        argv = [
            java_binary(),
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            *jit_options(self.peak),
            f"-Dzookeeper.log.dir={home}",
            *_SLF4J_SETTINGS,
            "-cp",
            f"{home}:{ZOOKEEPER_JAR}:{SLF4J_BINDING}",
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            str(config),
        ]
        return ManagedProcess.attach(f"zookeeper-{index}", argv, str(home / "server.log"), pid)

    def _state_path(self) -> Path:
        return self.workdir / "state.json"

    def _save_state(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        state = [
            {
                "index": m.index,
                "client_port": m.client_port,
                "peer_port": m.peer_port,
                "election_port": m.election_port,
                "pid": m.process.pid,
            }
            for m in self.members
        ]
        self._state_path().write_text(json.dumps(state))

    def _load_state(self) -> list[dict] | None:
        try:
            return json.loads(self._state_path().read_text())
        except (OSError, ValueError):
            return None

    def _adopt(self, state: list[dict]) -> None:
        self.members = []
        for entry in state:
            home = self.workdir / f"member-{entry['index']}"
            process = self._process(entry["index"], home, home / "zoo.cfg", entry["pid"])
            self.members.append(
                ZooKeeperMember(
                    entry["index"], entry["client_port"], entry["peer_port"], entry["election_port"], process
                )
            )
