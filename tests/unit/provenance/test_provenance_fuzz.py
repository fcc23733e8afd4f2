"""Fuzzing the provenance repository's readers on damaged files. The files a crash left
(written by the real repository): an event file of several blocks with its table of
contents, an index shard with its manifest, `layout.json`, and a later generation of
events still in its journals. One of them is damaged (bits flipped, bytes overwritten,
zeroed, inserted or written twice, the file cut short); then a node restarts on them
(recovery merges the journals and indexes them) or a tool opens them read-only, and
reads every event by id, in sequence, and by query.

Each opening answers within 2 s and 256 MB, or raises a `ProvenanceError` that says
why; so does each read. What is read was written: every event equal to the event
registered with its id, none twice, a query's events naming what it asked for. Damage
costs only what it touches: the events of a damaged block, of a journal's frames from
the damaged one on; the index, its manifest and the TOC cost no event read by id.

A journal frame's or a block's checksums keep every other damage from its Arrow and
zstd decoders; a second test forges that (damages the payload, then writes its
checksums again) and asks only for documented errors within the same bounds.

About 130 examples; CUSTODY_LONG=1 runs twenty times as many.
"""

from __future__ import annotations

import itertools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repositories.provenance import (
    CorruptBlockError,
    EventNotFoundError,
    EventType,
    ProvenanceError,
    ProvenanceQuery,
    ProvenanceRepository,
)
from repositories.provenance import event_file_format as eff
from repositories.provenance import journal_format as jf
from repositories.provenance.layout import ProvenanceLayout
from tests.damaged_files import damaged_bytes, fuzz_settings, scratch_directory, within_bounds

from .conftest import FakeClock, event, make_config
from .forging import forged_event_file, forged_journal

UUIDS = ["uuid-a", "uuid-b", "uuid-c"]
KINDS = [EventType.CREATE, EventType.ROUTE, EventType.FORK, EventType.JOIN, EventType.SEND, EventType.DROP]
MERGED, IN_JOURNALS = 60, 20  # events of the generation in the event file, and of the one in journals
BLOCK_BYTES = 2048
WAIT_S = 10.0


def events(count: int) -> list:
    return [
        event(kind, uuid, details=f"event {n} " + "d" * 40)
        for n, kind, uuid in zip(range(count), itertools.cycle(KINDS), itertools.cycle(UUIDS))
    ]


@dataclass(repr=False)
class Written:
    image: Path  # the files a crash left: containers c0 and c1
    files: dict  # path relative to the image -> bytes
    events: dict  # id -> the event registered, with its id and time
    merged: set  # ids in the event file
    event_file: str  # its relative path
    pieces: dict  # relative path -> [(end offset, ids)] of each block or journal frame, in file order
    landmarks: dict  # relative path -> offsets where a change hurts most


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Written:
    root = tmp_path_factory.mktemp("provenance")
    clock = FakeClock()
    repository = ProvenanceRepository(make_config(root / "source", block_bytes=BLOCK_BYTES), clock=clock)
    registered = {}
    for batch in (events(MERGED // 2), events(MERGED // 2)):
        ids = repository.register_events(batch)
        registered.update(zip(ids, batch, strict=False))
    repository.sync()
    for batch in (events(IN_JOURNALS // 2), events(IN_JOURNALS // 4), events(IN_JOURNALS // 4)):
        ids = repository.register_events(batch)  # left in the journals: what a crash leaves
        registered.update(zip(ids, batch, strict=False))
    image = root / "image"
    shutil.copytree(root / "source", image)
    repository.close()
    files = {str(path.relative_to(image)): path.read_bytes() for path in sorted(image.rglob("*")) if path.is_file()}
    now_ms = int(clock() * 1000)
    written = Written(
        image, files, {i: e.with_id(i, now_ms) for i, e in registered.items()}, set(range(1, MERGED + 1)), "", {}, {}
    )
    for name, data in files.items():
        if name.endswith(eff.TOC_SUFFIX):
            _, _, blocks = eff.unpack_toc(data)
            written.event_file = name[: -len(eff.TOC_SUFFIX)] + eff.EVENT_SUFFIX
            written.pieces[written.event_file] = [(b.end, range(b.first_id, b.last_id + 1)) for b in blocks]
            written.landmarks[written.event_file] = tuple(b.offset for b in blocks)
            written.landmarks[name] = (12, eff.TOC_HEADER.size, len(data) - 4)
        elif name.endswith(jf.SUFFIX):
            written.pieces[name] = journal_frames(data)
            written.landmarks[name] = (jf.HEADER.size, *(end for end, _ in written.pieces[name]))
    assert len(written.pieces[written.event_file]) > 3 and sum(map(len, written.pieces.values())) > 5
    return written


def journal_frames(data: bytes) -> list:
    frames, offset = [], jf.HEADER.size
    while offset < len(data):
        first, count, length, _ = jf.unpack_frame_header(data, offset)
        offset += jf.FRAME.size + length
        frames.append((offset, range(first, first + count)))
    return frames


def names(event, uuid: str) -> bool:
    return uuid in (event.flowfile_uuid, *event.parent_uuids, *event.child_uuids)


@dataclass
class Seen:
    listed: list  # events(), damaged blocks skipped
    by_id: dict  # id -> get(id), for every id get found
    found: list  # query by uuid
    every: list  # query for everything


def open_and_read(root: Path, opening: str, uuid: str, ids) -> Seen:
    """A node's restart (recovery, merge and index of the journals) or a tool's
    read-only opening; then every read; then close."""
    if opening == "restart":
        repository = ProvenanceRepository(make_config(root, block_bytes=BLOCK_BYTES), clock=FakeClock())
    else:
        repository = ProvenanceRepository.open(str(root / "c0"))
    try:
        if opening == "restart":
            repository.wait_idle(WAIT_S)
        by_id = {}
        for event_id in ids:
            try:
                by_id[event_id] = repository.get(event_id)
            except (EventNotFoundError, CorruptBlockError):
                pass
        return Seen(
            repository.events(0, 10_000, skip_damaged=True),
            by_id,
            repository.query(ProvenanceQuery(flowfile_uuid=uuid, limit=1000)).events,
            repository.query(ProvenanceQuery(limit=1000)).events,
        )
    finally:
        repository.close(timeout=WAIT_S)


def lay_out(written: Written, root: Path, changed: dict) -> None:
    """The crash's files under `root`, with `changed` ones instead, and a layout.json
    that names `root`'s containers (the tool's opening reads it)."""
    shutil.copytree(written.image, root, dirs_exist_ok=True)
    os.unlink(root / "c0" / "layout.json")
    ProvenanceLayout([str(root / "c0"), str(root / "c1")]).prepare()
    for name, content in changed.items():
        (root / name).write_bytes(content)


def check_only_written(written: Written, seen: Seen, uuid: str) -> None:
    for read in (seen.listed, list(seen.by_id.values()), seen.found, seen.every):
        for got in read:
            assert got == written.events.get(got.event_id), f"event {got.event_id} read back changed: {got}"
        assert len({e.event_id for e in read}) == len(read), "an event read twice"
    assert [e.event_id for e in seen.listed] == sorted(e.event_id for e in seen.listed)
    assert all(event_id == got.event_id for event_id, got in seen.by_id.items())
    assert all(names(got, uuid) for got in seen.found), "a query returned an event that does not name its uuid"


def check_damage_costs_only_what_it_touches(
    written: Written, seen: Seen, target: str, first_change: int, visible: set, uuid: str
) -> None:
    lost = set()
    for end, ids in written.pieces.get(target, ()):  # a block, or a frame and every one after it
        if end > first_change:
            lost.update(ids)
            if target != written.event_file:
                lost.update(i for _, later in written.pieces[target] for i in later if i > max(ids))
    kept = visible - lost
    assert kept <= {e.event_id for e in seen.listed}, f"events lost: {sorted(kept - {e.event_id for e in seen.listed})}"
    assert kept <= set(seen.by_id)
    if "index" not in target:
        assert {e.event_id for e in seen.found} == {e.event_id for e in seen.listed if names(e, uuid)}


READ_ONLY_TARGETS = ("events", "index", "layout.json")  # what a read-only opening reads


@fuzz_settings(90)
@given(data=st.data(), opening=st.sampled_from(["restart", "read-only"]), uuid=st.sampled_from(UUIDS))
def test_damaged_provenance_files_read_as_written_or_are_refused(written, data, opening, uuid):
    targets = sorted(
        name
        for name in written.files
        if opening == "restart" and name != "c0/layout.json" or any(part in name for part in READ_ONLY_TARGETS)
    )
    target = data.draw(st.sampled_from(targets), label="damaged file")
    with scratch_directory() as directory:
        root = Path(directory)
        lay_out(written, root, {})
        original = (root / target).read_bytes()  # layout.json names this root
        damaged = data.draw(damaged_bytes(original, written.landmarks.get(target, ())), label="damage")
        (root / target).write_bytes(damaged.content)
        ids = range(0, max(written.events) + 2)
        outcome, seen = within_bounds(lambda: open_and_read(root, opening, uuid, ids), (ProvenanceError,))
    if outcome == "refused":
        return
    check_only_written(written, seen, uuid)
    visible = set(written.events) if opening == "restart" else written.merged
    check_damage_costs_only_what_it_touches(written, seen, target, damaged.first_change, visible, uuid)


# --- Forged payloads: damage behind the checksums ---------------------------------------------------------


@fuzz_settings(40)
@given(data=st.data(), layer=st.sampled_from(["journal", "arrow", "zstd"]))
def test_forged_payloads_are_refused_or_read(written, data, layer):
    def payload_damage(payload: bytes) -> bytes:
        return data.draw(damaged_bytes(payload), label="payload damage").content

    changed = {}
    if layer == "journal":
        journal = data.draw(
            st.sampled_from(sorted(n for n, frames in written.pieces.items() if n.endswith(jf.SUFFIX) and frames)),
            label="journal",
        )
        frame = data.draw(st.integers(0, len(written.pieces[journal]) - 1), label="frame")
        changed[journal] = forged_journal(written.files[journal], frame, payload_damage)
    else:
        toc = written.event_file[: -len(eff.EVENT_SUFFIX)] + eff.TOC_SUFFIX
        block = data.draw(st.integers(0, len(written.pieces[written.event_file]) - 1), label="block")
        changed[written.event_file], changed[toc] = forged_event_file(
            written.files[written.event_file], written.files[toc], block, layer, payload_damage
        )
    with scratch_directory() as directory:
        root = Path(directory)
        lay_out(written, root, changed)
        within_bounds(
            lambda: open_and_read(root, "restart", UUIDS[0], range(0, max(written.events) + 2)), (ProvenanceError,)
        )
