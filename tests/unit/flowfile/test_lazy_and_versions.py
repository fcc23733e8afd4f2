"""Lazy records, snapshot format 2 blocks, and files written by earlier versions.

Recovery checks every CRC and decodes only each record's id; the rest is decoded on
first access. So these tests check that (a) a damaged bit anywhere in a snapshot is
refused at recovery, never accepted to fail later at access, (b) a lazy record is
equal to the record written, tier by tier, and (c) files written by the previous
release (snapshot format 1, SerDe version 2) and by older SerDe versions restore.
"""

from __future__ import annotations

import os
import pickle
import shutil
import threading

import pytest

from cluster.cli import main
from repositories.claims import ContentClaim, ResourceClaim
from repositories.flowfile import (
    CorruptRecordError,
    CorruptSnapshotError,
    Delete,
    FlowFileRecord,
    FlowFileSerDe,
    LazyFlowFileRecord,
    NotAWriteAheadLogError,
    Put,
    SwapFile,
    SwapIn,
    SwapOut,
    WalDamagedError,
    decode_records,
)
from repositories.flowfile import format as fmt
from repositories.flowfile.record import apply_update
from repositories.flowfile.snapshot import read_snapshot, write_snapshot
from repositories.storage import LocalStorage

from .helpers import make_record, open_wal

DATA = os.path.join(os.path.dirname(__file__), "data")


@pytest.fixture
def storage():
    return LocalStorage()


@pytest.fixture
def directory(tmp_path):
    return str(tmp_path / "wal")


class MemoryFile:
    def __init__(self):
        self.data = bytearray()

    def write(self, data):
        self.data += data

    def sync(self):
        pass


def snapshot_bytes(records, serde=None, swap_files=None) -> bytes:
    file = MemoryFile()
    write_snapshot(
        file,
        epoch=1,
        serde=serde or FlowFileSerDe(),
        max_txid=9,
        records={r.id: r for r in records},
        swap_files=swap_files or {},
    )
    return bytes(file.data)


# -- files written by earlier versions --------------------------------------------


def previous_release_transactions():
    """What tests/unit/flowfile/data/wal-format1-serde2 holds: written by commit
    6beccf2 (snapshot format 1, SerDe version 2), epoch 3, two partitions, a
    checkpoint after the first three transactions (see that commit's code)."""
    nul = FlowFileRecord("nul\0id", {"k\0": "v\0v", "": ""}, None, "q\0x", 0, 1, 2, 3)
    no_attributes = FlowFileRecord("no-attrs", {}, ContentClaim(ResourceClaim("c", 5, "r"), 7, 8), "q2", 8, 10, 9, 0)
    return [
        [Put(make_record(n)) for n in range(6)],
        [Put(nul)],
        [SwapOut(SwapFile("swap/1", "q1", 2, 20), ("ff-4", "ff-5"))],
        [Put(make_record(n, 1)) for n in range(2, 4)],
        [Delete("ff-0"), SwapOut(SwapFile("swap/2", "q1", 1, 10), ("ff-1",))],
        [SwapIn("swap/2"), Put(make_record(1, 2))],
        [Put(no_attributes)],
    ]


def test_a_wal_written_by_the_previous_release_restores(storage, tmp_path):
    directory = str(tmp_path / "old")
    shutil.copytree(os.path.join(DATA, "wal-format1-serde2"), directory)
    with open(os.path.join(directory, "snapshot"), "rb") as handle:
        assert fmt.unpack_snapshot_header(handle.read())[0].format_version == 1
    expected, swaps = {}, {}
    for transaction in previous_release_transactions():
        for update in transaction:
            apply_update(expected, swaps, update)
    wal = open_wal(storage, directory, epoch=3)
    assert wal.recover() == expected
    assert wal.swap_files == swaps
    assert wal.last_recovery.max_txid == 7
    # The journals were written by SerDe version 2: the forced checkpoint rewrote
    # everything in the current formats, which must restore the same state.
    assert any("SerDe version 2" in reason for reason in wal.last_recovery.checkpoint_reasons)
    wal.close()
    with open(os.path.join(directory, "snapshot"), "rb") as handle:
        header = fmt.unpack_snapshot_header(handle.read())[0]
    assert (header.format_version, header.serde_version) == (fmt.SNAPSHOT_FORMAT_VERSION, FlowFileSerDe.CURRENT_VERSION)
    again = open_wal(storage, directory, epoch=3)
    assert again.recover() == expected
    assert again.swap_files == swaps
    again.close()


def journal_format_1_transactions():
    """What tests/unit/flowfile/data/wal-journal1-snapshot2-serde3 holds: written by
    commit 92d5b5c (journal format 1, snapshot format 2, SerDe version 3), epoch 5, two
    partitions: the first list before a checkpoint, the second in the journals."""
    unicode = FlowFileRecord("ünï-id", {"ключ": "значение ¥ \u00a5", "nul\0k": "v\0"}, None, "q2", 3, 4, 5, 6)
    before = [
        [Put(make_record(n)) for n in range(4)],
        [SwapOut(SwapFile("swap/a", "q1", 2, 20), ("ff-2", "ff-3"))],
    ]
    after = [
        [Put(unicode), Put(make_record(4))],
        [Delete("ff-0")],
        [SwapIn("swap/a"), Put(make_record(2, 1)), Put(make_record(3, 1))],
        [SwapOut(SwapFile("swap/b", "q1", 1, 10), ("ff-1",))],
        [Put(make_record(5, 2))],
    ]
    return before, after


def test_journals_of_format_1_restore_and_are_rewritten_in_the_current_format(storage, tmp_path):
    directory = str(tmp_path / "journal1")
    shutil.copytree(os.path.join(DATA, "wal-journal1-snapshot2-serde3"), directory)
    for name in ("journal-0", "journal-1"):
        with open(os.path.join(directory, name), "rb") as handle:
            assert fmt.unpack_file_header(handle.read(), fmt.JOURNAL_MAGIC)[0].format_version == 1
    before, after = journal_format_1_transactions()
    expected, swaps = {}, {}
    for transaction in before + after:
        for update in transaction:
            apply_update(expected, swaps, update)
    wal = open_wal(storage, directory, epoch=5)
    assert wal.recover() == expected
    assert wal.swap_files == swaps
    report = wal.last_recovery
    assert (report.max_txid, report.transactions_replayed, report.cuts) == (7, len(after), [])
    # Frames are appended only in the current format: the journals were rewritten first.
    assert any("journal format version 1" in reason for reason in report.checkpoint_reasons)
    wal.update([Put(make_record(6))])
    expected["ff-6"] = make_record(6)
    wal.close()
    for name in ("journal-0", "journal-1"):
        with open(os.path.join(directory, name), "rb") as handle:
            assert fmt.unpack_journal_header(handle.read()).format_version == fmt.JOURNAL_FORMAT_VERSION
    again = open_wal(storage, directory, epoch=5)
    assert again.recover() == expected
    assert again.swap_files == swaps and not again.last_recovery.checkpoint_reasons
    again.close()


def journal_format_2_transactions():
    """What tests/unit/flowfile/data/wal-journal2-snapshot2-serde3 holds: written by
    commit bbe0f1e (journal format 2, snapshot format 2, SerDe version 3), epoch 6, three
    partitions: the first list before a checkpoint, the second in the journals. Journal
    format 2 has neither the journal set in its header nor a durable watermark in its
    frames."""
    unicode = FlowFileRecord("ünï-id", {"ключ": "значение ¥", "nul\0k": "v\0"}, None, "q2", 3, 4, 5, 6)
    claimed = FlowFileRecord("claimed", {"a": "b"}, ContentClaim(ResourceClaim("c", 5, "r"), 7, 8), "q1", 8, 10, 9, 11)
    before = [[Put(make_record(n)) for n in range(4)], [SwapOut(SwapFile("swap/a", "q1", 2, 20), ("ff-2", "ff-3"))]]
    after = [
        [Put(unicode), Put(make_record(4))],
        [Delete("ff-0")],
        [SwapIn("swap/a"), Put(make_record(2, 1)), Put(make_record(3, 1))],
        [SwapOut(SwapFile("swap/b", "q1", 1, 10), ("ff-1",))],
        [Put(claimed)],
        [Put(make_record(5, 2))],
    ]
    return before, after


def test_journals_of_format_2_restore_and_are_rewritten_in_the_current_format(storage, tmp_path):
    directory = str(tmp_path / "journal2")
    shutil.copytree(os.path.join(DATA, "wal-journal2-snapshot2-serde3"), directory)
    for name in ("journal-0", "journal-1", "journal-2"):
        with open(os.path.join(directory, name), "rb") as handle:
            assert fmt.unpack_journal_header(handle.read()).format_version == 2
    before, after = journal_format_2_transactions()
    expected, swaps = {}, {}
    for transaction in before + after:
        for update in transaction:
            apply_update(expected, swaps, update)
    wal = open_wal(storage, directory, epoch=6, partitions=3)
    assert wal.recover() == expected
    assert wal.swap_files == swaps
    report = wal.last_recovery
    assert (report.max_txid, report.transactions_replayed, report.cuts, report.damage) == (8, len(after), [], [])
    assert any("journal format version 2" in reason for reason in report.checkpoint_reasons)
    wal.update([Put(make_record(6))])
    expected["ff-6"] = make_record(6)
    wal.close()
    for name in ("journal-0", "journal-1", "journal-2"):
        with open(os.path.join(directory, name), "rb") as handle:
            header = fmt.unpack_journal_header(handle.read())
        assert (header.format_version, header.partitions) == (fmt.JOURNAL_FORMAT_VERSION, 3)
    again = open_wal(storage, directory, epoch=6, partitions=3)
    assert again.recover() == expected
    assert again.swap_files == swaps and not again.last_recovery.checkpoint_reasons
    again.close()


@pytest.mark.parametrize("version", [1, 2])
def test_snapshot_and_journal_of_an_older_serde_version_restore(storage, directory, version):
    old = open_wal(storage, directory, serde=FlowFileSerDe(version=version))
    old.recover()
    old.update([Put(make_record(n)) for n in range(5)])
    old.checkpoint()  # snapshot format 2 holding SerDe-version records
    old.update([Put(make_record(n, 1)) for n in range(3, 8)])
    old.update([Delete("ff-0")])
    expected = dict(old.records)
    old.close()
    if version == 1:  # v1 had no lineage start date nor penalty
        expected = {k: r.replace(lineage_start_date=r.entry_date, penalty_expiration=0) for k, r in expected.items()}
    wal = open_wal(storage, directory)
    assert wal.recover() == expected
    wal.close()


def test_unknown_snapshot_format_version_is_refused(storage, directory):
    serde = FlowFileSerDe()
    data = snapshot_bytes([make_record(1)])
    header = fmt.pack_snapshot_header(1, serde.name, serde.version, 9, 1, 0, format_version=9)
    with pytest.raises(NotAWriteAheadLogError, match="format version 9"):
        read_snapshot("snapshot", header + data[len(header) :], serde)


# -- lazy records -------------------------------------------------------------------


def test_restored_records_are_lazy_and_equal_to_what_was_written(storage, directory):
    wal = open_wal(storage, directory)
    wal.recover()
    wal.update([Put(make_record(n)) for n in range(10)])
    wal.checkpoint()
    wal.update([Put(make_record(n, 1)) for n in range(5, 12)])  # journal records
    expected = dict(wal.records)
    wal.close()
    records = open_wal(storage, directory).recover()
    assert all(type(r) is LazyFlowFileRecord and not r.is_decoded for r in records.values())
    record = records["ff-7"]
    assert record.queue == "q1"  # decodes the head only
    assert record._attributes is None and record._head is not None
    assert record.content_claim == expected["ff-7"].content_claim
    assert record.attributes == expected["ff-7"].attributes
    assert record.is_decoded and record._encoded is None  # bytes released once both tiers are decoded
    assert records == expected


def test_decode_records_decodes_every_tier_or_only_heads():
    serde = FlowFileSerDe()
    originals = [make_record(n) for n in range(20)]
    records = read_snapshot("snapshot", snapshot_bytes(originals), serde).records
    decode_records(list(records.values())[:10], attributes=False)
    assert [r._head is not None and r._attributes is None for r in records.values()] == [True] * 10 + [False] * 10
    decode_records(records.values())
    assert all(r.is_decoded for r in records.values())
    assert records == {r.id: r for r in originals}


def test_lazy_record_fields_read_like_the_namedtuple_they_replace():
    serde = FlowFileSerDe()
    original = make_record(3)
    encoded = serde.encode_record(original)
    lazy = serde.record_decoder(serde.version)(encoded, 0, len(encoded))
    assert isinstance(lazy, FlowFileRecord) and lazy == original and original == lazy
    record_id, attributes, claim, queue, size, entry, lineage, penalty = lazy
    assert (record_id, attributes, claim, queue) == (
        original.id,
        original.attributes,
        original.content_claim,
        original.queue,
    )
    assert (size, entry, lineage, penalty) == (original.size, original.entry_date, original.lineage_start_date, 0)
    assert lazy[0] == "ff-3" and len(lazy) == 8
    assert lazy._asdict() == original._asdict()
    assert lazy.replace(queue="q9") == original._replace(queue="q9")
    assert pickle.loads(pickle.dumps(lazy)) == original
    assert repr(lazy) == repr(original)
    assert lazy != original.replace(attributes={})
    with pytest.raises(TypeError):
        hash(lazy)


def test_concurrent_first_access_decodes_consistently():
    serde = FlowFileSerDe()
    originals = [make_record(n) for n in range(300)]
    data = snapshot_bytes(originals)
    for _ in range(5):
        records = read_snapshot("snapshot", data, serde).records
        seen, barrier = [], threading.Barrier(4)

        def reader(order):
            barrier.wait()  # noqa: B023
            for record in list(records.values())[::order]:  # noqa: B023
                seen.append((record.id, record.attributes, record.queue, record.content_claim))  # noqa: B023

        threads = [threading.Thread(target=reader, args=(o,)) for o in (1, -1, 1, -1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        by_id = {r.id: r for r in originals}
        assert all(
            by_id[i].attributes == a and by_id[i].queue == q and by_id[i].content_claim == c for i, a, q, c in seen
        )
        assert len(seen) == 4 * len(originals)


def test_checkpoint_writes_untouched_lazy_records_back_unchanged(storage, directory):
    wal = open_wal(storage, directory)
    wal.recover()
    wal.update([Put(make_record(n)) for n in range(20)])
    wal.checkpoint()
    wal.close()
    path = os.path.join(directory, "snapshot")
    before = open(path, "rb").read()
    again = open_wal(storage, directory)
    records = again.recover()
    again.checkpoint()
    again.close()
    assert open(path, "rb").read() == before
    assert not any(r.is_decoded for r in records.values())  # reused, not decoded and re-encoded


def test_any_serde_of_the_same_name_and_version_reuses_the_bytes_of_an_undecoded_record():
    encoded = FlowFileSerDe().encode_record(make_record(2))
    lazy = FlowFileSerDe().record_decoder(3)(encoded, 0, len(encoded))
    assert FlowFileSerDe().encode_record(lazy) is lazy._encoded  # an adopter's SerDe, say
    assert not lazy.is_decoded
    older = FlowFileSerDe(version=2)
    assert older.decode_record(older.encode_record(lazy), 2) == make_record(2)  # re-encoded


def test_blocks_split_by_count(monkeypatch):
    monkeypatch.setattr(fmt, "SNAPSHOT_BLOCK_RECORDS", 7)
    originals = [make_record(n) for n in range(50)]
    data = snapshot_bytes(originals, swap_files={"s": SwapFile("s", "q1", 1, 2)})
    contents = read_snapshot("snapshot", data, FlowFileSerDe())
    assert contents.records == {r.id: r for r in originals}
    assert list(contents.swap_files) == ["s"]


def test_ids_with_nul_use_the_length_prefixed_id_column():
    originals = [FlowFileRecord("a\0b", {}, None, "q", 1, 2, 3), make_record(1)]
    contents = read_snapshot("snapshot", snapshot_bytes(originals), FlowFileSerDe())
    assert contents.records == {r.id: r for r in originals}


# -- damage: refused at recovery, never accepted ------------------------------------


def test_every_flipped_bit_of_a_snapshot_is_refused_at_recovery():
    """A flipped bit anywhere, in particular in the attribute bytes that recovery does
    not decode, must fail recovery (CRC of the block) rather than be accepted and
    fail, or worse decode to a wrong value, when the record is read."""
    originals = [make_record(n) for n in range(3)] + [FlowFileRecord("x", {"k": "v"}, None, "q", 1, 2, 3)]
    data = snapshot_bytes(originals, swap_files={"s": SwapFile("s", "q1", 1, 2)})
    serde = FlowFileSerDe()
    assert read_snapshot("snapshot", data, serde).records == {r.id: r for r in originals}
    for position in range(len(data)):
        damaged = bytearray(data)
        damaged[position] ^= 1 << (position % 8)
        with pytest.raises((CorruptSnapshotError, NotAWriteAheadLogError)):
            read_snapshot("snapshot", bytes(damaged), serde)


def test_a_flipped_bit_in_an_attribute_names_the_record_and_its_offset():
    originals = [make_record(n) for n in range(5)]
    data = snapshot_bytes(originals)
    position = data.index(b"value-3-1-v0")  # an attribute of the fourth record
    damaged = bytearray(data)
    damaged[position + 2] ^= 0x10
    with pytest.raises(CorruptSnapshotError, match="record 3 of 5: CRC mismatch") as raised:
        read_snapshot("snapshot", bytes(damaged), FlowFileSerDe())
    assert raised.value.offset <= position < raised.value.offset + len(FlowFileSerDe().encode_record(originals[3]))


def test_flipped_bit_in_a_journal_put_is_cut_at_recovery(storage, directory):
    wal = open_wal(storage, directory, partitions=1)
    wal.recover()
    wal.update([Put(make_record(1))])
    wal.update([Put(make_record(2))])
    wal.update([Put(make_record(3))])
    wal.close()
    path = os.path.join(directory, "journal-0")
    data = bytearray(open(path, "rb").read())
    data[data.index(b"value-2-1-v0") + 3] ^= 0x01
    open(path, "wb").write(bytes(data))
    # Damage before an intact transaction is no crash's: refused, and nothing changed.
    with pytest.raises(WalDamagedError, match="transaction 2 payload CRC mismatch"):
        open_wal(storage, directory, partitions=1).recover()
    assert open(path, "rb").read() == bytes(data)
    again = open_wal(storage, directory, partitions=1, accept_damage=True)
    records = again.recover()
    assert set(records) == {"ff-1", "ff-3"}
    assert [cut.txid for cut in again.last_recovery.cuts] == [2]
    assert (again.last_recovery.transactions_lost, again.last_recovery.updates_lost) == (1, 1)
    again.close()


class ForgingSerDe(FlowFileSerDe):
    """Writes a record whose attribute bytes are not UTF-8, with correct CRCs: what only
    a SerDe bug or a forger can produce."""

    def encode_record(self, record):
        encoded = super().encode_record(record)
        if record.id == "ff-2":
            encoded = encoded.replace(b"value-2-1-v0", b"value-2-1-\xff\xfe")
        return encoded


def test_undecodable_record_with_a_valid_crc_fails_at_access_and_in_fsck(storage, directory, capsys):
    wal = open_wal(storage, directory, serde=ForgingSerDe())
    wal.recover()
    wal.update([Put(make_record(n)) for n in range(4)])
    wal.checkpoint()
    wal.close()
    again = open_wal(storage, directory)
    records = again.recover()
    again.close()
    assert records["ff-1"].attributes == make_record(1).attributes
    assert records["ff-2"].queue == "q1"  # the head is intact
    with pytest.raises(CorruptRecordError, match="'ff-2'.*attributes"):
        records["ff-2"].attributes  # noqa: B018 - the access decodes them
    assert main(["wal", "fsck", directory]) == 1
    assert "UNDECODABLE" in capsys.readouterr().out


def test_record_bytes_with_a_different_embedded_id_are_refused_at_access():
    serde = FlowFileSerDe()
    encoded = serde.encode_record(make_record(4))
    lazy = LazyFlowFileRecord("ff-5", encoded, serde.lazy_decoder)
    with pytest.raises(CorruptRecordError, match="'ff-5'"):
        lazy.queue  # noqa: B018 - the access decodes it
