import pytest

from repositories.provenance import CorruptBlockError, ProvenanceQuery, ProvenanceRepository
from repositories.provenance import event_file_format as eff

from .conftest import event, make_config


@pytest.fixture
def damaged_setup(tmp_path, clock):
    """One event file of several blocks; returns (open function, entry blocks, path)."""
    config = make_config(tmp_path, block_bytes=8192, containers=(str(tmp_path / "c0"),))
    repo = ProvenanceRepository(config, clock=clock)
    repo.register_events([event("CREATE", "everyone", details="d" * 100) for _ in range(400)])
    repo.sync()
    (entry,) = repo.event_files()
    blocks, path = entry.reader.blocks, entry.path
    repo.close()
    opened = []

    def reopen():
        r = ProvenanceRepository(config, clock=clock)
        opened.append(r)
        return r

    yield reopen, blocks, path
    for r in opened:
        r.close()


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x04]))


def check_only_block_lost(repo, blocks, bad):
    b = blocks[bad]
    with pytest.raises(CorruptBlockError) as error:
        repo.get(b.first_id + 1)
    assert error.value.block_index == bad
    assert f"events {b.first_id}..{b.last_id}" in str(error.value)
    for i, other in enumerate(blocks):
        if i != bad:
            assert repo.get(other.first_id).event_id == other.first_id
    survivors = [e.event_id for e in repo.events(1, 10_000, skip_damaged=True)]
    assert survivors == [i for i in range(1, 401) if not b.first_id <= i <= b.last_id]
    result = repo.query(ProvenanceQuery(flowfile_uuid="everyone", limit=1000))
    assert sorted(event_id for event_id, _ in result.errors) == list(range(b.first_id, b.last_id + 1))
    assert len(result.events) == 400 - b.count


def test_bit_flip_in_payload_costs_only_that_block(damaged_setup):
    reopen, blocks, path = damaged_setup
    assert len(blocks) >= 4
    bad = 2
    flip(path, blocks[bad].offset + eff.BLOCK_HEADER.size + blocks[bad].compressed_length // 2)
    repo = reopen()
    check_only_block_lost(repo, blocks, bad)
    with pytest.raises(CorruptBlockError, match="checksum"):
        repo.events(1, 10_000)


def test_bit_flip_in_block_header(damaged_setup):
    reopen, blocks, path = damaged_setup
    flip(path, blocks[1].offset + 9)
    check_only_block_lost(reopen(), blocks, 1)


def test_truncated_last_block(damaged_setup):
    reopen, blocks, path = damaged_setup
    last = len(blocks) - 1
    with open(path, "r+b") as f:
        f.truncate(blocks[last].offset + eff.BLOCK_HEADER.size + 5)
    repo = reopen()
    with pytest.raises(CorruptBlockError, match="truncated"):
        repo.get(blocks[last].last_id)
    check_only_block_lost(repo, blocks, last)


def test_damaged_toc_is_rebuilt_from_block_headers(damaged_setup):
    reopen, blocks, path = damaged_setup
    toc = path[: -len(".prov")] + ".toc"
    flip(toc, 50)
    repo = reopen()
    (entry,) = repo.event_files()
    assert entry.reader.toc_rebuilt and entry.reader.blocks == blocks
    assert [e.event_id for e in repo.events(1, 1000)] == list(range(1, 401))
