"""Replicated content against a real 2-DataNode HDFS: takeover, DataNode loss, outage."""

from __future__ import annotations

import hashlib
import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest

from cluster.core.incarnation import Incarnation
from cluster.core.layout import ClusterLayout
from cluster.node.content import open_node_content
from cluster.services.process import wait_until
from replication.hdfs_content import open_hdfs_content_reader, open_hdfs_content_repository
from replication.hdfs_storage import HdfsStorage
from replication.replicating_content import ReplicatingContentRepository
from repositories.content import (
    ArchivePolicy,
    ContentRepositoryConfig,
    ContentRepositoryError,
    ContentWriteFailed,
    ReplicaDiverged,
    open_filesystem_content_repository,
)

from .test_content_crash import ROOT, payload, read_ledger, run_writer_until_mid_claim

pytestmark = [pytest.mark.hdfs]

ADOPTER_SCRIPT = r"""
import hashlib, json, sys
from replication.hdfs_content import open_hdfs_content_reader
from replication.hdfs_storage import HdfsStorage
from repositories.claims import ContentClaim, ResourceClaim

url, base, node, ledger = sys.argv[1:5]
repository = open_hdfs_content_reader(HdfsStorage(url), base, node, ["c"])
out = {}
for line in open(ledger):
    try:
        container, section, resource_id, offset, length, seed, size = json.loads(line)
    except ValueError:
        continue
    claim = ContentClaim(ResourceClaim(container, section, resource_id), offset, length)
    digest = hashlib.sha256()
    with repository.open_read(claim) as reader:
        while chunk := reader.read(1 << 16):
            digest.update(chunk)
    out[str(seed)] = digest.hexdigest()
print(json.dumps(out))
"""


def replicated(tmp_path, store, node="node-1", **hdfs_options):
    config = ContentRepositoryConfig(archive=ArchivePolicy(max_usage=None))
    local = open_filesystem_content_repository({"c": str(tmp_path / f"local-{node}")}, config)
    hdfs = open_hdfs_content_repository(store.storage, store.root, node, ["c"], **hdfs_options)
    return ReplicatingContentRepository([local, hdfs]), local, hdfs


@pytest.mark.slow
def test_takeover_process_reads_every_claim_of_a_killed_node_through_hdfs_alone(tmp_path, hdfs_cluster, hdfs_store):
    local_directory = tmp_path / "node-a-local"
    ledger = tmp_path / "ledger"
    torn_path, torn_offset = run_writer_until_mid_claim(
        ["replicating", str(ledger), "9", str(local_directory), hdfs_cluster.url, hdfs_store.root, "node-a"], ledger
    )
    entries = read_ledger(ledger)
    assert len(entries) == 9
    # The adopter is another process that knows nothing of node-a's disk.
    adopter = subprocess.run(
        [sys.executable, "-c", ADOPTER_SCRIPT, hdfs_cluster.url, hdfs_store.root, "node-a", str(ledger)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert adopter.returncode == 0, adopter.stderr
    digests = json.loads(adopter.stdout)
    assert digests == {str(seed): hashlib.sha256(payload(seed, size)).hexdigest() for _c, seed, size in entries}

    # Cleaning up the dead node's HDFS content: the torn claim's file (still under the
    # dead writer's lease) goes, the recorded claims stay whole.
    dead = open_hdfs_content_repository(hdfs_store.storage, hdfs_store.root, "node-a", ["c"], prepare=False)
    report = dead.recover([claim for claim, _seed, _size in entries])
    assert report.missing == []
    if torn_offset == 0:
        container, section, resource_id = torn_path.split("/")
        assert [r.id for r in report.destroyed] == [resource_id]
    for claim, seed, size in entries:
        assert dead.read(claim) == payload(seed, size)
    dead.close()


@pytest.mark.slow
def test_datanode_loss_while_writing_completes_or_fails_cleanly(tmp_path, hdfs_cluster, hdfs_store):
    # Bounded retries and socket timeouts, as a node must configure them: otherwise an
    # hsync to a dead DataNode may wait minutes before it fails.
    storage = HdfsStorage(
        hdfs_cluster.url, {**hdfs_cluster.client_config, **FAIL_FAST, "dfs.client.socket-timeout": "5000"}
    )
    store = type(hdfs_store)(storage, hdfs_store.root)
    repository, local, hdfs = replicated(tmp_path, store)
    outcomes: list[tuple[int, object]] = []
    stop = threading.Event()
    chunk = 256 * 1024

    def writer():
        index = 0
        while not stop.is_set():
            data = payload(index, 4 * chunk)
            try:
                with repository.write() as claim_writer:
                    for start in range(0, len(data), chunk):
                        claim_writer.write(data[start : start + chunk])
                outcomes.append((index, claim_writer.claim))
            except ContentRepositoryError as error:
                outcomes.append((index, error))
            except Exception as error:  # noqa: BLE001 - recorded: the test fails on it below
                outcomes.append((index, error))
            index += 1

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while len(outcomes) < 3 and time.monotonic() < deadline:
            thread.join(0.05)
        assert len(outcomes) >= 3, "no write completed before the fault"
        at_fault = len(outcomes)
        hdfs_cluster.kill_datanode(1)
        deadline = time.monotonic() + 90
        while len(outcomes) < at_fault + 5 and time.monotonic() < deadline:
            thread.join(0.05)
        stop.set()
        thread.join(120)
        assert not thread.is_alive()
    finally:
        stop.set()
        hdfs_cluster.restart_datanode(1)
        hdfs_cluster.wait_healthy()
    after_fault = outcomes[at_fault:]
    assert after_fault, "the writer made no attempt after the DataNode was killed"
    for index, outcome in outcomes:
        if isinstance(outcome, Exception):
            assert isinstance(outcome, ContentRepositoryError), repr(outcome)
            continue
        assert local.read(outcome) == payload(index, 4 * chunk)
    # Nothing half-committed: only completed claims are counted anywhere.
    completed = [outcome for _index, outcome in outcomes if not isinstance(outcome, Exception)]
    for replica in (local, hdfs):
        counted = sum(replica.claimant_count(claim) for claim in {c.resource for c in completed})
        assert counted == len(completed)
    # With the DataNode back, writing works (again).
    claim = _write_with_deadline(repository, b"after the fault", 60)
    repository.close()
    # Completed: HDFS alone holds it whole, read as an adopter reads it. A file whose
    # close failed after its claims were hsynced (the DataNode died under the close)
    # stays open under this writer's lease, and hdfs-native reads none of its last
    # block until the adopter recovers that lease.
    adopter = open_hdfs_content_reader(store.storage, store.root, "node-1", ["c"], recover_open_files=True)
    for index, outcome in outcomes:
        if not isinstance(outcome, Exception):
            assert adopter.read(outcome) == payload(index, 4 * chunk)
    assert adopter.read(claim) == b"after the fault"
    adopter.close()


def _write_with_deadline(repository, data: bytes, seconds: float):
    deadline = time.monotonic() + seconds
    while True:
        try:
            return repository.write_bytes(data)
        except ContentRepositoryError:
            if time.monotonic() > deadline:
                raise


FAIL_FAST = {
    "dfs.client.failover.max.attempts": "1",
    "dfs.client.failover.sleep.base.millis": "100",
    "dfs.client.failover.sleep.max.millis": "200",
}


class NameNodeProxy:
    """A TCP forwarder in front of the NameNode that the test can cut and restore:
    a real network outage between this node and HDFS, without harming the cluster."""

    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.port = None
        self._listener = None
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port or 0))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._connections += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    @staticmethod
    def _pump(source, target) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, target):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self) -> None:
        # shutdown() first: a bare close() would not wake the thread blocked in
        # accept(), and the kernel would keep accepting on the listening socket.
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()


@pytest.mark.slow
def test_hdfs_unreachable_fails_cleanly_then_succeeds_when_it_returns(tmp_path, hdfs_cluster, hdfs_store):
    upstream = urllib.parse.urlparse(hdfs_cluster.url).port
    proxy = NameNodeProxy(upstream)
    proxy.start()
    try:
        # hdfs-native retries an unreachable NameNode for ~3 minutes by default; a
        # node that must roll back sessions promptly bounds that.
        storage = HdfsStorage(f"hdfs://127.0.0.1:{proxy.port}", FAIL_FAST)
        config = ContentRepositoryConfig(archive=ArchivePolicy(max_usage=None))
        local = open_filesystem_content_repository({"c": str(tmp_path / "local")}, config)
        hdfs = open_hdfs_content_repository(storage, hdfs_store.root, "node-1", ["c"])
        repository = ReplicatingContentRepository([local, hdfs])
        first = repository.write_bytes(b"before")
        proxy.stop()
        started = time.monotonic()
        writer = None
        with pytest.raises(ContentRepositoryError) as failure:
            writer = repository.write()
            with writer:
                writer.write(b"during the outage" * 1000)
        failed_after = time.monotonic() - started
        # The session rolls back: nothing of the failed claim is referenced anywhere.
        assert local.claimant_count(first) == 1
        if writer is not None:
            assert local.claimant_count(writer.resource) == (1 if writer.resource == first.resource else 0)
        assert sum(local.claimant_count(r) for r in local.list_resources()) == 1
        assert repository.read(first) == b"before"  # reads go local: unaffected
        proxy.start()
        claim = _write_with_deadline(repository, b"after", 60)
        assert hdfs.read(claim) == b"after"
        assert open_hdfs_content_reader(hdfs_store.storage, hdfs_store.root, "node-1", ["c"]).read(claim) == b"after"
        assert failed_after < 30, f"the outage took {failed_after:.0f}s to surface: {failure.value}"
        repository.close()
    finally:
        proxy.stop()


def test_a_claim_whose_hdfs_bytes_another_commits_sync_lost_is_refused_to_its_own(tmp_path, hdfs_cluster, hdfs_store):
    """A node's commits share one content repository. Commit A's claim is written but
    not yet synced when the DataNodes freeze; commit B syncs first, fails, and is told.
    When HDFS is back, A's own sync finds nothing left to do, so only `check_durable`
    stands between A and committing a claim whose HDFS bytes were never written."""
    storage = HdfsStorage(hdfs_cluster.url, {**hdfs_cluster.client_config, **FAIL_FAST}, io_timeout=3)
    local = open_filesystem_content_repository(
        {"c": str(tmp_path / "local")}, ContentRepositoryConfig(sync_on_close=False)
    )
    hdfs = open_hdfs_content_repository(storage, hdfs_store.root, "node-1", ["c"])
    repository = ReplicatingContentRepository([local, hdfs])
    before = repository.write_bytes(b"before" * 100)
    repository.sync()
    repository.check_durable([before])
    mine = repository.write_bytes(b"mine" * 2000)  # commit A: written, not synced
    frozen = [index for index, datanode in enumerate(hdfs_cluster.datanodes) if datanode.alive()]
    for index in frozen:
        hdfs_cluster.pause_datanode(index)
    try:
        with pytest.raises(ContentRepositoryError):  # commit B's sync: the hsync times out
            repository.sync()
    finally:
        for index in frozen:
            hdfs_cluster.resume_datanode(index)
    repository.sync()  # commit A's own sync: the loss was reported to B already
    with pytest.raises(ContentWriteFailed, match="lost"):
        repository.check_durable([mine])
    repository.check_durable([before])  # synced before the fault: still durable
    deadline = time.monotonic() + 60
    while True:  # a commit after the DataNodes are back: its claim is durable
        try:
            after = repository.write_bytes(b"after")
            repository.sync()
            repository.check_durable([after])
            break
        except ContentRepositoryError:
            if time.monotonic() > deadline:
                raise
    reader = open_hdfs_content_reader(hdfs_store.storage, hdfs_store.root, "node-1", ["c"])
    assert reader.read(before) == b"before" * 100
    assert reader.read(after) == b"after"
    repository.close()


def test_fsck_finds_and_repairs_a_claim_missing_on_hdfs(tmp_path, hdfs_store):
    repository, local, hdfs = replicated(tmp_path, hdfs_store)
    claims = [repository.write_bytes(payload(index, 2000)) for index in range(3)]
    victim = claims[1].resource
    hdfs_store.storage.delete(f"{hdfs_store.root}/content/node-1/c/{victim.section}/{victim.id}")
    report = repository.fsck()
    assert [(p.resource, p.kind) for p in report.problems] == [(victim.relative_path, "missing")]
    assert not report.ok
    repaired = repository.fsck(repair=True)
    assert repaired.ok
    assert repository.fsck().problems == []
    reader = open_hdfs_content_reader(hdfs_store.storage, hdfs_store.root, "node-1", ["c"])
    assert reader.read(claims[1]) == payload(1, 2000)
    repository.close()


# A node whose content file fails to close after its claims were hsynced (CI saw a
# DataNode kill do this: "Datanode connection closed while waiting for ack"), then
# dies. The close failure is injected into the real HDFS writer; everything else,
# the hsync, the lease and the reads, is real HDFS.
CLOSE_FAILS_SCRIPT = r"""
import json, sys
from replication.hdfs_content import open_hdfs_content_repository
from replication.hdfs_storage import HdfsStorage, HdfsWritableFile
from repositories.storage import StorageError

def close_fails(self):
    raise StorageError(f"cannot close hdfs:{self.path}: injected: Datanode connection closed while waiting for ack")

HdfsWritableFile.close = close_fails
url, base, node, body = sys.argv[1:5]
repository = open_hdfs_content_repository(HdfsStorage(url), base, node, [node])
claims = [repository.write_bytes(f"{body}-{index}".encode()) for index in range(3)]
print(json.dumps([[c.resource.section, c.resource.id, c.offset, c.length] for c in claims]), flush=True)
sys.stdin.read()  # holds the files open until it is killed
"""


def synced_then_killed(script: str, *arguments: str) -> tuple[str, str]:
    """Run a writer `script`, SIGKILL it once it printed its line (its claims synced),
    and return that line and what it wrote to stderr."""
    writer = subprocess.Popen(
        [sys.executable, "-c", script, *arguments],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = writer.stdout.readline()  # blocks until the claims are synced, or the writer died
        assert line, f"the writer died: {writer.stderr.read()}"
        writer.kill()
        assert writer.wait(timeout=30) == -signal.SIGKILL
        return line, writer.stderr.read()
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


def test_a_claim_in_a_file_a_dead_node_left_open_is_read_once_its_lease_is_recovered(hdfs_cluster, hdfs_store):
    from cluster.node.content import ForeignContainers
    from repositories.claims import ContentClaim, ResourceClaim
    from repositories.content import ContentTruncated

    node = "n9-4"
    line, said = synced_then_killed(CLOSE_FAILS_SCRIPT, hdfs_cluster.url, hdfs_store.root, node, "payload")
    assert "failed after its claims were synced" in said
    claims = [
        ContentClaim(ResourceClaim(node, section, resource_id), offset, length)
        for section, resource_id, offset, length in json.loads(line)
    ]
    storage = hdfs_store.storage
    path = f"{hdfs_store.root}/content/{node}/{node}/{claims[0].resource.section}/{claims[0].resource.id}"
    assert storage.status(path).length > 0  # the NameNode counts the hsynced bytes...

    # ...but hdfs-native reads an open file only to its last finished block: nothing here.
    plain = open_hdfs_content_reader(storage, hdfs_store.root, node, [node])
    with pytest.raises(ContentTruncated, match="holds 0 readable bytes"):
        plain.read(claims[0])

    # An adopter's reader of the dead incarnation recovers the lease, then reads it all.
    foreign = ForeignContainers(storage, hdfs_store.root, own="n1-5")
    for index, claim in enumerate(claims):
        with foreign.open_read(claim) as reader:
            assert reader.read() == f"payload-{index}".encode()
    assert plain.read(claims[0]) == b"payload-0"  # the file is closed for every reader now
    foreign.close()


# A clustered node keeps its HDFS resource files open across commits (one hsync per
# commit). It is killed with them open; its claims were synced, never closed.
KEEP_OPEN_SCRIPT = r"""
import json, sys
from replication.hdfs_content import open_hdfs_content_repository
from replication.hdfs_storage import HdfsStorage

url, base, node = sys.argv[1:4]
repository = open_hdfs_content_repository(HdfsStorage(url), base, node, [node], keep_open=True)
claims = []
for commit in range(3):
    claims += [repository.write_bytes(f"commit-{commit}-claim-{index}".encode(), sync=False) for index in range(50)]
    repository.sync()
open_now = sorted(r.id for r in repository.open_resources())
print(json.dumps({"claims": [[c.resource.section, c.resource.id, c.offset, c.length] for c in claims],
                  "open": open_now}), flush=True)
sys.stdin.read()  # holds the files open until it is killed
"""


def killed_with_files_open(hdfs_cluster, hdfs_store, node: str) -> list:
    """The claims a writer of `node` (KEEP_OPEN_SCRIPT) synced before it was SIGKILLed
    with some of their resource files open."""
    from repositories.claims import ContentClaim, ResourceClaim

    line, _ = synced_then_killed(KEEP_OPEN_SCRIPT, hdfs_cluster.url, hdfs_store.root, node)
    written = json.loads(line)
    claims = [
        ContentClaim(ResourceClaim(node, section, resource_id), offset, length)
        for section, resource_id, offset, length in written["claims"]
    ]
    assert written["open"], "the writer kept no resource file open: this test tests nothing"
    assert {c.resource.id for c in claims} & set(written["open"])
    return claims


# An adopter recovers the dead container's newest files either from the claims its
# shard's WAL names, or, while it fences the shard (before the WAL is read), from a
# listing of the container's newest sections.
@pytest.mark.parametrize("found_by", ["claims", "listing"])
def test_an_adopter_reads_every_synced_claim_of_a_node_killed_with_its_resource_files_open(
    hdfs_cluster, hdfs_store, found_by
):
    from cluster.node.content import ForeignContainers

    node = "n8-3"
    claims = killed_with_files_open(hdfs_cluster, hdfs_store, node)

    plain = open_hdfs_content_reader(hdfs_store.storage, hdfs_store.root, node, [node])
    expected = [f"commit-{commit}-claim-{index}".encode() for commit in range(3) for index in range(50)]
    # What an adopter does as it recovers the shard: the newest files of the dead
    # container are recovered in one round, after which any reader reads them whole.
    foreign = ForeignContainers(hdfs_store.storage, hdfs_store.root, own="n1-5")
    resources = {claim.resource for claim in claims}
    if found_by == "claims":
        assert foreign.recover_newest(resources) == 2 * len(resources)
    else:
        assert foreign.recover_newest_written(node) == 2 * len(resources)
        assert foreign.recover_newest_written("n1-5") == 0  # its own container: never
    assert [plain.read(claim) for claim in claims] == expected
    got = []
    for claim in claims:
        with foreign.open_read(claim) as reader:
            got.append(reader.read())
    assert got == expected
    foreign.close()
    plain.close()


def test_a_live_node_reads_its_own_claim_from_an_open_hdfs_file_once_it_is_sealed(tmp_path, hdfs_store):
    from repositories.content.format import resource_path

    repository, local, hdfs = replicated(tmp_path, hdfs_store, keep_open=True)
    claims = [repository.write_bytes(f"claim-{index}".encode(), sync=False) for index in range(5)]
    repository.sync()
    resource = claims[0].resource
    assert resource in hdfs.open_resources()  # synced, still open on HDFS: unreadable there as it is

    # The local copy is lost; the read goes to HDFS, which must first close the file.
    local_file = resource_path(str(tmp_path / "local-node-1"), resource)
    with open(local_file, "r+b") as damaged:
        damaged.seek(claims[1].offset)
        damaged.write(b"\xff" * claims[1].length)
    assert repository.read(claims[1]) == b"claim-1"
    assert resource not in hdfs.open_resources() and resource not in local.open_resources()
    assert open_hdfs_content_reader(hdfs_store.storage, hdfs_store.root, "node-1", ["c"]).read(claims[4]) == b"claim-4"

    # Writing goes on in a new resource, in lockstep on both replicas.
    after = repository.write_bytes(b"after", sync=False)
    repository.sync()
    assert after.resource != resource
    assert repository.read(after) == b"after"
    repository.close()
    assert open_hdfs_content_reader(hdfs_store.storage, hdfs_store.root, "node-1", ["c"]).read(after) == b"after"


def test_a_resource_whose_hsync_failed_is_retired_on_both_replicas_before_the_next_claim(
    tmp_path, hdfs_cluster, hdfs_store
):
    """The long drill's `ReplicaDiverged`, on a clustered node's content (local disk led,
    HDFS files kept open across commits): a commit's hsync fails (its DataNodes froze),
    so the HDFS replica fails and retires the resource it synced. The local replica,
    whose fdatasync went fine, must retire it too, or it hands that resource to the next
    claim and HDFS has no file to append it to."""
    storage = HdfsStorage(hdfs_cluster.url, {**hdfs_cluster.client_config, **FAIL_FAST}, io_timeout=3)
    content = open_node_content(
        storage, ClusterLayout("main", hdfs_store.root), Incarnation("n1", 5), str(tmp_path / "local")
    )
    local, hdfs = content.replicas.replicas
    diverged: list[ReplicaDiverged] = []
    write_at = hdfs.write_at

    def recording(resource, offset):
        try:
            return write_at(resource, offset)
        except ReplicaDiverged as error:
            diverged.append(error)
            raise

    hdfs.write_at = recording
    before = content.write_bytes(b"before" * 100)
    content.sync()
    content.check_durable([before])
    mine = content.write_bytes(b"mine" * 2000)  # a commit's claim, in the same resource, not yet synced
    assert mine.resource == before.resource
    frozen = [index for index, datanode in enumerate(hdfs_cluster.datanodes) if datanode.alive()]
    for index in frozen:
        hdfs_cluster.pause_datanode(index)
    try:
        with pytest.raises(ContentRepositoryError):  # its hsync times out: the HDFS replica fails the resource
            content.sync()
    finally:
        for index in frozen:
            hdfs_cluster.resume_datanode(index)
    deadline = time.monotonic() + 60
    while True:  # the next commits, once the DataNodes are back
        try:
            after = content.write_bytes(b"after")
            content.sync()
            content.check_durable([after])
            break
        except ContentRepositoryError:
            if time.monotonic() > deadline:
                raise
    assert diverged == []
    assert after.resource != before.resource
    assert before.resource not in local.open_resources() | hdfs.open_resources()  # retired and closed on both
    with pytest.raises(ContentWriteFailed, match="lost"):
        content.check_durable([mine])
    assert content.read(before) == b"before" * 100
    assert content.replicas.seal(after.resource)  # HDFS reads a file kept open once it is closed
    assert hdfs.read(after) == local.read(after) == b"after"
    content.close()


def test_a_resource_writers_pass_over_is_retired_by_age_and_its_hdfs_file_closed(tmp_path, hdfs_store):
    """Writers take the resource let go of last, so one let go of earlier is passed
    over: once older than the resource age it is retired on both replicas by the next
    write, and the sync after closes its HDFS file, which another reader then reads."""
    config = ContentRepositoryConfig(sync_on_close=False, archive=ArchivePolicy(max_usage=None))
    local = open_filesystem_content_repository({"c": str(tmp_path / "local")}, config)
    hdfs = open_hdfs_content_repository(hdfs_store.storage, hdfs_store.root, "node-1", ["c"], keep_open=True)
    repository = ReplicatingContentRepository([local, hdfs], max_resource_age_s=0.5)
    writers = [repository.write(), repository.write()]
    for index, writer in enumerate(writers):
        writer.write(f"first-{index}".encode())
    passed_over, taken = (writer.close() for writer in writers)
    repository.sync()
    assert passed_over.resource != taken.resource
    assert passed_over.resource in hdfs.open_resources()
    written = []

    def retired() -> bool:
        written.append(repository.write_bytes(b"next", sync=False))
        return passed_over.resource not in local.appendable_resources()

    wait_until(retired, 10, "the passed-over resource to be retired by age")
    resources = [claim.resource for claim in written]
    assert passed_over.resource not in resources and resources[0] == taken.resource  # passed over, every time
    assert passed_over.resource not in hdfs.appendable_resources()  # retired on both replicas at once
    repository.sync()
    wait_until(lambda: passed_over.resource not in hdfs.open_resources(), 10, "its HDFS file to be closed")
    reader = open_hdfs_content_reader(hdfs_store.storage, hdfs_store.root, "node-1", ["c"])
    assert reader.read(passed_over) == b"first-0"
    repository.close()


def test_an_adopter_reads_its_first_claims_ahead_and_its_tasks_then_read_them_from_memory(hdfs_cluster, hdfs_store):
    """`ForeignContainers.read_ahead`, as an adopter calls it with the claims of its
    queues' first FlowFiles: the dead writer's files still open are recovered on the way,
    and the claims read ahead are read again without HDFS (shown by deleting the files)."""
    from cluster.node.content import ForeignContainers
    from repositories.claims import ContentClaim, ResourceClaim

    node = "n7-2"
    claims = killed_with_files_open(hdfs_cluster, hdfs_store, node)
    expected = [f"commit-{commit}-claim-{index}".encode() for commit in range(3) for index in range(50)]
    foreign = ForeignContainers(hdfs_store.storage, hdfs_store.root, own="n1-5")
    own = ContentClaim(ResourceClaim("n1-5", 0, "1"), 0, 10)
    heads = claims[:40]
    assert foreign.read_ahead([own, *heads, *claims[40:]], budget=sum(c.length for c in heads)) == len(heads)
    hdfs_store.storage.delete(f"{hdfs_store.root}/content/{node}", recursive=True)
    got = []
    for claim in heads:
        with foreign.open_read(claim) as reader:
            got.append(reader.read())
    assert got == expected[:40]
    foreign.close()
