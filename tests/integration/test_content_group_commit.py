"""SIGKILL of a node's replicated content (local + HDFS) in the middle of group
commits: four sessions write small and large claims side by side (the large ones
packed into shared resource files) and commit every few claims; a commit that
returned (sync, then check_durable) is reported on stdout. The test kills the writer
with SIGKILL after some commits, then reads every reported claim as an adopter does
(the HDFS copy, the dead writer's leases recovered) and from the local copy, and
counts what was lost, duplicated (two claims over the same bytes) or unexpected
(bytes of another claim): none of either.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import signal
import subprocess
import sys
import threading
import time

from repositories.claims import ContentClaim, ResourceClaim

SESSIONS = 4
CLAIMS_PER_COMMIT = 8
COMMITS_BEFORE_KILL = 40
SMALL = 64 * 1024  # max_appendable_claim_size here: claims of this size or more are large
PACKED = 1 << 20
NODE, CONTAINER = "gc-node", "gc"


def payload(claim_id: str, size: int) -> bytes:
    seed = hashlib.sha256(claim_id.encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def size_of(session: int, number: int) -> int:
    return 1024 if number % 3 else SMALL + 1000 * (session + 1)


def writer_main() -> None:
    """The writing node: URL HDFS_BASE LOCAL_DIRECTORY. Runs until killed."""
    from replication.hdfs_content import DEFAULT_HDFS_CONFIG, open_hdfs_content_repository
    from replication.hdfs_storage import HdfsStorage
    from replication.replicating_content import ReplicatingContentRepository
    from repositories.content import ArchivePolicy, ContentRepositoryConfig, open_filesystem_content_repository

    url, base, local_directory = sys.argv[1:4]
    config = ContentRepositoryConfig(
        sync_on_close=False,
        archive=ArchivePolicy(max_usage=None),
        max_appendable_claim_size=SMALL,
        packed_resource_size=PACKED,
    )
    local = open_filesystem_content_repository({CONTAINER: local_directory}, config)
    hdfs_config = dataclasses.replace(DEFAULT_HDFS_CONFIG, max_appendable_claim_size=SMALL, packed_resource_size=PACKED)
    hdfs = open_hdfs_content_repository(HdfsStorage(url), base, NODE, [CONTAINER], hdfs_config, keep_open=True)
    content = ReplicatingContentRepository([local, hdfs])
    out = threading.Lock()

    def commit(claims: list[tuple[str, int]]) -> None:
        written = [(claim_id, content.write_bytes(payload(claim_id, size), sync=False)) for claim_id, size in claims]
        content.sync()
        content.check_durable([claim for _, claim in written])
        lines = "".join(
            f"C {claim_id} {c.resource.section} {c.resource.id} {c.offset} {c.length}\n" for claim_id, c in written
        )
        with out:
            sys.stdout.write(lines + "K\n")
            sys.stdout.flush()

    def session(index: int) -> None:
        for first in itertools.count(0, CLAIMS_PER_COMMIT):
            numbers = range(first, first + CLAIMS_PER_COMMIT)
            commit([(f"s{index}-{number}", size_of(index, number)) for number in numbers])

    # A first commit of large claims alone, before the sessions start: the one writer
    # gets its resource back after each claim, so they are packed into one resource
    # whatever the sessions' timing (packing among the sessions depends on which
    # claim takes a resource next: sessions in step may never pack). The sessions then
    # append to it, until it holds `PACKED` bytes or a small claim fills it.
    commit([(f"p-{number}", SMALL + 1000 * number) for number in range(CLAIMS_PER_COMMIT)])
    for index in range(SESSIONS):
        threading.Thread(target=session, args=(index,), daemon=True).start()
    signal.pause()


def test_sigkill_in_the_middle_of_group_commits_loses_no_committed_claim(hdfs_store, tmp_path):
    from replication.hdfs_content import open_hdfs_content_reader
    from repositories.content import open_filesystem_content_repository

    url = hdfs_store.storage.url
    base = f"{hdfs_store.root}/cluster"
    hdfs_store.storage.mkdir(f"{base}/content", parents=True)
    local_directory = str(tmp_path / "local")  # under pytest's base, not left in /tmp
    os.mkdir(local_directory)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from tests.integration.test_content_group_commit import writer_main; writer_main()",
            url,
            base,
            local_directory,
        ],
        cwd=repo,
        stdout=subprocess.PIPE,
        text=True,
    )
    committed: list[tuple[str, ContentClaim]] = []
    commits = 0
    deadline = time.monotonic() + 120
    try:
        pending = []
        for line in process.stdout:
            if line == "K\n":
                committed.extend(pending)
                pending = []
                commits += 1
                if commits >= COMMITS_BEFORE_KILL:
                    break
            elif line.startswith("C ") and line.endswith("\n"):
                _, claim_id, section, resource_id, offset, length = line.split()
                resource = ResourceClaim(CONTAINER, int(section), resource_id)
                pending.append((claim_id, ContentClaim(resource, int(offset), int(length))))
            assert time.monotonic() < deadline, f"only {commits} commits in 120 s"
        os.kill(process.pid, signal.SIGKILL)  # in the middle of the next commits
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait()
        process.stdout.close()
    assert process.returncode == -signal.SIGKILL, f"the writer ended on its own ({process.returncode})"
    assert commits >= COMMITS_BEFORE_KILL

    ids = [claim_id for claim_id, _ in committed]
    assert len(ids) == len(set(ids)) == commits * CLAIMS_PER_COMMIT
    # Duplicated: no two claims over the same bytes.
    by_resource: dict[ResourceClaim, list[ContentClaim]] = {}
    for _, claim in committed:
        by_resource.setdefault(claim.resource, []).append(claim)
    overlapping = []
    for claims in by_resource.values():
        ordered = sorted(claims, key=lambda c: c.offset)
        overlapping += [(a, b) for a, b in zip(ordered, ordered[1:], strict=False) if a.offset + a.length > b.offset]
    assert overlapping == []
    # Large claims were packed (the first commit's at least): some resource holds more than one.
    assert any(sum(1 for c in claims if c.length >= SMALL) > 1 for claims in by_resource.values())

    expected = [payload(claim_id, claim.length) for claim_id, claim in committed]
    adopter = open_hdfs_content_reader(hdfs_store.storage, base, NODE, [CONTAINER], recover_open_files=True)
    try:
        from_hdfs = adopter.read_many([claim for _, claim in committed])
    finally:
        adopter.close()
    local = open_filesystem_content_repository({CONTAINER: local_directory})
    try:
        from_local = [local.read(claim) for _, claim in committed]
    finally:
        local.close()
    for name, found in (("hdfs", from_hdfs), ("local", from_local)):
        lost = [claim_id for (claim_id, _), data, want in zip(committed, found, expected, strict=True) if not data]
        unexpected = [
            claim_id
            for (claim_id, _), data, want in zip(committed, found, expected, strict=True)
            if data and data != want
        ]
        assert (lost, unexpected) == ([], []), f"{name}: {len(lost)} lost, {len(unexpected)} unexpected"
