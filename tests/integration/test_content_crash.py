"""Crash tests: a writer process is killed with SIGKILL in the middle of a claim.

The writer plays a node: it writes claims and, after each one is complete (closed,
synced), records it in a ledger file and fsyncs the ledger - the stand-in for the
FlowFile repository's commit. Then it starts one more, large claim and is killed
while streaming it. On restart the repository is recovered from the ledger: every
recorded claim must read back whole, the killed claim must be gone, and the space
its bytes took must be reclaimed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repositories.claims import ContentClaim, ResourceClaim
from repositories.content import ArchivePolicy, ContentRepositoryConfig, open_filesystem_content_repository
from repositories.content.format import CHECKSUM_SUFFIX

ROOT = Path(__file__).resolve().parents[2]

# argv: kind, ledger, claims-before-kill, then kind-specific arguments.
#   local <dir>
#   replicating <dir> <hdfs-url> <hdfs-base> <node>
WRITER_SCRIPT = r"""
import hashlib, json, os, sys
from repositories.content import ArchivePolicy, ContentRepositoryConfig, open_filesystem_content_repository

kind, ledger_path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
config = ContentRepositoryConfig(archive=ArchivePolicy(max_usage=None))
local = open_filesystem_content_repository({"c": sys.argv[4]}, config)
if kind == "replicating":
    from replication.hdfs_content import open_hdfs_content_repository
    from replication.hdfs_storage import HdfsStorage
    from replication.replicating_content import ReplicatingContentRepository
    hdfs = open_hdfs_content_repository(HdfsStorage(sys.argv[5]), sys.argv[6], sys.argv[7], ["c"])
    repository = ReplicatingContentRepository([local, hdfs])
else:
    repository = local

def payload(seed, size):
    block = hashlib.sha256(str(seed).encode()).digest()
    return (block * (size // 32 + 1))[:size]

ledger = open(ledger_path, "a")
sizes = [100, 3000, 40_000, 70_000, 700, 250_000, 10]
for index in range(count):
    size = sizes[index % len(sizes)]
    with repository.write() as writer:
        for start in range(0, size, 64 * 1024):
            writer.write(payload(index, size)[start:start + 64 * 1024])
    claim = writer.claim
    ledger.write(json.dumps([claim.resource.container, claim.resource.section, claim.resource.id,
                             claim.offset, claim.length, index, size]) + "\n")
    ledger.flush()
    os.fsync(ledger.fileno())
# The claim that will be torn: streamed until the parent kills us.
writer = repository.write()
sys.stdout.write(f"TORN {writer.resource.relative_path} {writer.offset}\n")
sys.stdout.flush()
chunk = b"T" * (256 * 1024)
written = 0
while True:
    writer.write(chunk)
    written += len(chunk)
    if written == 4 * len(chunk):
        sys.stdout.write("MID\n")
        sys.stdout.flush()
"""


def payload(seed: int, size: int) -> bytes:
    import hashlib

    block = hashlib.sha256(str(seed).encode()).digest()
    return (block * (size // 32 + 1))[:size]


def run_writer_until_mid_claim(arguments: list[str], ledger: Path, deadline_seconds: float = 60.0):
    """Start the writer, wait (with a deadline) until it is inside the torn claim,
    SIGKILL it. Returns (torn resource path, torn offset)."""
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT, *arguments],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + deadline_seconds
        torn = None
        for line in process.stdout:
            if line.startswith("TORN "):
                _, path, offset = line.split()
                torn = (path, int(offset))
            if line.strip() == "MID":
                break
            if time.monotonic() > deadline:
                break
        else:
            raise AssertionError(f"writer exited early: {process.wait()} {process.stderr.read()}")
        assert torn is not None, "the writer never reached the torn claim"
        os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
        return torn
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()


def read_ledger(ledger: Path) -> list[tuple[ContentClaim, int, int]]:
    entries = []
    for line in ledger.read_text().splitlines():
        try:
            container, section, resource_id, offset, length, seed, size = json.loads(line)
        except ValueError:
            continue  # a torn ledger line is an uncommitted record
        claim = ContentClaim(ResourceClaim(container, section, resource_id), offset, length)
        entries.append((claim, seed, size))
    return entries


def resource_bytes(directory: Path, checksums: bool = False) -> dict[str, int]:
    """Sizes of the resource files under `directory` (or, with `checksums`, of the
    checksum files beside them, by the name of their resource)."""
    return {
        str(path.relative_to(directory)).removesuffix(CHECKSUM_SUFFIX): path.stat().st_size
        for path in directory.rglob("*")
        if path.is_file() and path.name.endswith(CHECKSUM_SUFFIX) == checksums
    }


@pytest.mark.slow
@pytest.mark.parametrize("claims_before_kill", [3, 11])
def test_killed_writer_leaves_claims_whole_or_gone_and_space_reclaimed(tmp_path, claims_before_kill):
    directory = tmp_path / "content"
    ledger = tmp_path / "ledger"
    torn_path, torn_offset = run_writer_until_mid_claim(
        ["local", str(ledger), str(claims_before_kill), str(directory)], ledger
    )
    before = resource_bytes(directory)
    torn_file = torn_path.split("/", 1)[1]  # container/section/id -> section/id
    assert before[torn_file] > torn_offset  # the torn claim's bytes really are on disk

    entries = read_ledger(ledger)
    assert len(entries) == claims_before_kill
    repository = open_filesystem_content_repository(
        {"c": str(directory)}, ContentRepositoryConfig(archive=ArchivePolicy(max_usage=None))
    )
    report = repository.recover([claim for claim, _seed, _size in entries])
    assert report.missing == []
    for claim, seed, size in entries:
        assert repository.read(claim) == payload(seed, size)

    # Space reclaimed: every byte left on disk belongs to a recorded claim.
    after = resource_bytes(directory)
    ends: dict[str, int] = {}
    for claim, _seed, _size in entries:
        key = f"{claim.resource.section}/{claim.resource.id}"
        ends[key] = max(ends.get(key, 0), claim.offset + claim.length)
    assert after == ends
    assert after.get(torn_file, 0) == torn_offset
    # ...and every checksum record too: each checksum file describes its resource file
    # exactly up to the end of its last recorded claim, and every block verifies.
    assert set(resource_bytes(directory, checksums=True)) == set(after)
    for resource in {claim.resource for claim, _seed, _size in entries}:
        check = repository.check_resource(resource)
        assert (check.status, check.covered, check.failures) == (
            "verified",
            ends[f"{resource.section}/{resource.id}"],
            [],
        )

    # And the repository keeps working after the crash.
    claim = repository.write_bytes(b"after the crash")
    assert repository.read(claim) == b"after the crash"
    repository.close()
