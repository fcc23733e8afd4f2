"""A FlowFile whose content cannot be read goes to `failure` alone: the session names it
(`UnreadableContent`), at open or at whatever byte the damage is met; each processor
that reads content penalizes it, sets `content.error`, and goes on with the rest of its
batch. Storage that cannot be reached is not the FlowFile's fault: the session rolls
back. PutFile leaves no temporary file behind, whatever stops a copy."""

from __future__ import annotations

import io
import logging
import os
import textwrap

import pytest

from flow.commit import HeldCommitter
from flow.errors import UnreadableContent
from flow.loading import parse_flow, standard_registry
from flow.memory_content import InMemoryContentRepository
from flow.processor import ProcessContext
from flow.queue import FlowFileQueue
from flow.session import ProcessSession
from flow.shard import QueueShard
from flow.stateless import StatelessFlowLoader
from repositories.content.errors import ContentCorrupted, ContentNotFound, ContentTruncated, ContentUnavailable

PENALTY_MS = 30_000
NOW = 1_000_000


class _BreaksAfter(io.RawIOBase):
    """A claim's stream whose bytes after the first `good` ones fail (a damaged block)."""

    def __init__(self, data: bytes, good: int, error: Exception):
        super().__init__()
        self._data, self._good, self._error, self._position = data, good, error, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._position >= len(self._data):
            return 0
        if self._position >= self._good:
            raise self._error
        piece = self._data[self._position : min(self._good, self._position + len(buffer))]
        buffer[: len(piece)] = piece
        self._position += len(piece)
        return len(piece)


class DamagedContent(InMemoryContentRepository):
    """In-memory content some of whose claims fail as a damaged repository's do."""

    def __init__(self):
        super().__init__()
        self.damage: dict = {}  # resource -> (error, bytes readable before it, or None: fails at open)

    def open_read(self, claim, offset=0, length=None):
        damage = self.damage.get(claim.resource)
        if damage is None:
            return super().open_read(claim, offset, length)
        error, good = damage
        if good is None:
            raise error
        return _BreaksAfter(super().open_read(claim, offset, length).read(), good, error)

    def undamaged(self, claim) -> bytes:
        """The claim's bytes as written."""
        return super().open_read(claim).read()


class Bench:
    """One processor between an incoming queue and a queue per relationship, driven by
    hand as the engine drives it: a session per run, committed after `on_trigger`."""

    def __init__(
        self,
        processor_type: str,
        properties: dict,
        relationships=("success", "failure"),
        loader=None,
        services=None,
        flow_services=(),
    ):
        document: dict = {
            "processors": [
                {"id": "p", "type": processor_type, "properties": properties, "auto_terminate": list(relationships)}
            ]
        }
        if flow_services:  # the flow's own services (record readers and writers)
            document["services"] = list(flow_services)
        definition = parse_flow(document).processors["p"]
        self.incoming = FlowFileQueue("in", clock_ms=lambda: NOW)
        self.out = {name: FlowFileQueue(name, clock_ms=lambda: NOW) for name in relationships}
        self.shard = QueueShard("s", [self.incoming, *self.out.values()])
        self.content = DamagedContent()
        self.committer = HeldCommitter(self.shard, self.content)
        self.processor = definition.create()
        self.context = ProcessContext(
            "p", definition.properties, definition.dynamic, has_incoming=True, stateless_flows=loader, services=services
        )

    def add(self, *contents: bytes, **attributes) -> list:
        seed = ProcessSession(
            component_id="seed",
            component_type="Seed",
            committer=self.committer,
            content=self.content,
            shard=self.shard,
            outgoing={"s": [self.incoming]},
            clock_ms=lambda: NOW,
        )
        made = []
        for index, data in enumerate(contents):
            flowfile = seed.write_bytes(seed.create(attributes={"i": str(index), **attributes}), data)
            seed.transfer(flowfile, "s")
            made.append(flowfile)
        seed.commit()
        return made

    def damage(self, flowfile, error: Exception, good: int | None = None) -> None:
        self.content.damage[flowfile.content_claim.resource] = (error, good)

    def session(self) -> ProcessSession:
        return ProcessSession(
            component_id="p",
            component_type="x",
            committer=self.committer,
            content=self.content,
            shard=self.shard,
            incoming=[self.incoming],
            outgoing={name: [queue] for name, queue in self.out.items()},
            clock_ms=lambda: NOW,
            penalty_ms=PENALTY_MS,
        )

    def run_once(self) -> None:
        session = self.session()
        try:
            self.processor.on_trigger(self.context, session)
        except BaseException:
            session.rollback()
            raise
        if not session.is_closed:
            session.commit()

    def drain(self, name: str) -> list[tuple[dict, bytes, int]]:
        """(attributes, content, penalty expiration) of what `name` holds, in order."""
        flowfiles, _ = self.out[name].poll(1000, NOW + 10 * PENALTY_MS)
        self.out[name].acknowledge(flowfiles)
        return sorted(
            (
                (
                    f.attributes,
                    self.content.undamaged(f.content_claim) if f.content_claim else b"",
                    f.penalty_expiration,
                )
                for f in flowfiles
            ),
            key=lambda each: each[0].get("i", ""),
        )


CORRUPTED = ContentCorrupted(
    "local: claim 0/c1-x@0+9 is damaged on this replica (bytes 0..9: the bytes do not "
    "match their checksum)\nnothing unverified was returned"
)


def assert_set_aside(failed, error_class: str) -> None:
    for attributes, _data, penalty in failed:
        assert attributes["content.error"].startswith(error_class + ": "), attributes
        assert "\n" not in attributes["content.error"]
        assert penalty == NOW + PENALTY_MS


# -- the session --------------------------------------------------------------------------


@pytest.mark.parametrize("error", [CORRUPTED, ContentTruncated("ends short"), ContentNotFound("gone")])
@pytest.mark.parametrize("good", [None, 4], ids=["at open", "mid-stream"])
def test_the_session_names_the_flowfile_whose_claim_cannot_be_read(error, good):
    bench = Bench("PutFile", {"directory": "/nowhere"})
    intact, damaged = bench.add(b"intact", b"damaged content")
    bench.damage(damaged, error, good)
    session = bench.session()
    batch = session.get_batch(10)
    assert session.read_bytes(batch[0]) == b"intact"
    with pytest.raises(UnreadableContent) as raised:
        session.read_bytes(batch[1])
    assert raised.value.flowfile.id == damaged.id and raised.value.cause is error
    assert raised.value.reason.startswith(type(error).__name__)
    with pytest.raises(UnreadableContent) as raised:
        session.read_bytes_many(batch)
    assert raised.value.flowfile.id == damaged.id
    session.rollback()


def test_storage_that_cannot_be_reached_is_not_the_flowfiles_fault():
    bench = Bench("PutFile", {"directory": "/nowhere"})
    (flowfile,) = bench.add(b"x")
    bench.damage(flowfile, ContentUnavailable("HDFS is down"))
    session = bench.session()
    with pytest.raises(ContentUnavailable):
        session.read_bytes(session.get())
    session.rollback()


# -- the processors -----------------------------------------------------------------------


def test_put_file_writes_the_rest_of_its_batch_and_leaves_no_temporary_file(tmp_path, caplog):
    bench = Bench("PutFile", {"directory": str(tmp_path), "sync": False})
    flowfiles = bench.add(b"a", b"b" * 100, b"c" * 100, b"d")
    bench.damage(flowfiles[1], CORRUPTED)
    bench.damage(flowfiles[2], ContentTruncated("ends short"), good=40)
    with caplog.at_level(logging.ERROR):
        bench.run_once()
    assert sorted(os.listdir(tmp_path)) == sorted([flowfiles[0].id, flowfiles[3].id]), "no .partial file"
    failed = bench.drain("failure")
    assert [a["i"] for a, _, _ in failed] == ["1", "2"]
    assert_set_aside(failed[:1], "ContentCorrupted")
    assert_set_aside(failed[1:], "ContentTruncated")
    assert len(bench.drain("success")) == 2
    assert caplog.text.count("whose content cannot be read") == 1, "one line for the run"


def test_put_file_removes_its_temporary_file_whatever_stops_a_copy(tmp_path):
    bench = Bench("PutFile", {"directory": str(tmp_path), "sync": False})
    (flowfile,) = bench.add(b"x" * 100)
    bench.damage(flowfile, RuntimeError("a bug in the middle of a copy"), good=50)
    with pytest.raises(RuntimeError):
        bench.run_once()
    bench.damage(flowfile, ContentUnavailable("HDFS is down"), good=50)
    with pytest.raises(ContentUnavailable):
        bench.run_once()
    assert os.listdir(tmp_path) == []
    assert bench.incoming.count == 1, "rolled back: still queued"


def test_put_file_logs_a_write_failure_that_every_flowfile_meets_once(tmp_path, caplog):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the directory should be")
    bench = Bench("PutFile", {"directory": str(blocked / "out"), "sync": False})
    bench.add(*(b"x" for _ in range(20)))
    with caplog.at_level(logging.ERROR):
        bench.run_once()
        bench.add(b"y")
        bench.run_once()
    assert len(bench.drain("failure")) == 21
    assert caplog.text.count("cannot write") == 1, "one line a minute, not one per FlowFile"


@pytest.mark.parametrize("size", [10, 5 << 20], ids=["read together", "streamed"])
def test_merge_content_merges_the_bin_without_the_member_it_cannot_read(size):
    bench = Bench("MergeContent", {"min_entries": 4, "delimiter": ","}, ("merged", "original", "failure"))
    flowfiles = bench.add(*(bytes([ord("a") + index]) * size for index in range(4)))
    bench.damage(flowfiles[2], CORRUPTED, good=None if size == 10 else size // 2)
    bench.run_once()
    ((attributes, merged, _),) = bench.drain("merged")
    assert merged == b",".join(bytes([ord(c)]) * size for c in "abd") and attributes["merge.count"] == "3"
    assert [a["i"] for a, _, _ in bench.drain("original")] == ["0", "1", "3"]
    assert_set_aside(bench.drain("failure"), "ContentCorrupted")
    joins = [event for event in bench.committer.events if event.event_type.value == "JOIN"]
    assert len(joins) == 1 and len(joins[0].parent_uuids) == 3, "the merge given up left no trace"


@pytest.mark.parametrize("good", [None, 3], ids=["at open", "after a split"])
def test_split_text_sends_the_flowfile_it_cannot_read_to_failure_with_no_split(good):
    bench = Bench("SplitText", {"line_split_count": 1}, ("original", "splits", "failure"))
    (flowfile,) = bench.add(b"a\nb\nc\n")
    bench.damage(flowfile, ContentTruncated("ends short"), good)
    bench.run_once()
    assert bench.drain("splits") == [] and bench.drain("original") == []
    assert_set_aside(bench.drain("failure"), "ContentTruncated")
    assert not any(event.event_type.value == "FORK" for event in bench.committer.events)


@pytest.mark.parametrize("mode", ["entire_text", "line_by_line"])
def test_replace_text_sends_the_flowfile_it_cannot_read_to_failure_and_changes_the_others(mode):
    bench = Bench("ReplaceText", {"replacement_strategy": "prepend", "replacement_value": ">", "evaluation_mode": mode})
    flowfiles = bench.add(b"one\n", b"two\n", b"three\n")
    bench.damage(flowfiles[1], CORRUPTED, good=None if mode == "entire_text" else 2)
    bench.run_once()
    assert [data for _, data, _ in bench.drain("success")] == [b">one\n", b">three\n"]
    assert_set_aside(bench.drain("failure"), "ContentCorrupted")


def test_log_attribute_logs_that_it_cannot_read_the_payload_and_passes_the_flowfile_on(caplog):
    bench = Bench("LogAttribute", {"log_payload": True}, ("success",))
    (flowfile,) = bench.add(b"body")
    bench.damage(flowfile, ContentNotFound("gone"))
    with caplog.at_level(logging.INFO):
        bench.run_once()
    ((attributes, _, penalty),) = bench.drain("success")
    assert "content.error" not in attributes and penalty == 0
    assert "payload unreadable (ContentNotFound: gone)" in caplog.text


def test_execute_stateless_sends_an_input_it_cannot_read_to_failure_without_triggering(tmp_path):
    sub = tmp_path / "sub.yaml"
    sub.write_text(
        textwrap.dedent("""
        processors:
          - {id: tag, type: UpdateAttribute, properties: {seen: "yes"}}
        ports:
          - {id: in, type: input}
          - {id: out, type: output}
        connections:
          - {source: in, destination: tag}
          - {source: tag, destination: out}
    """)
    )
    bench = Bench(
        "ExecuteStateless",
        {"flow": str(sub), "input_port": "in"},
        ("output", "original", "failure"),
        loader=StatelessFlowLoader(standard_registry()),
    )
    bench.processor.on_scheduled(bench.context)
    intact, damaged = bench.add(b"x", b"y")
    bench.damage(damaged, CORRUPTED)
    bench.run_once()
    bench.run_once()
    assert [a["seen"] for a, _, _ in bench.drain("output")] == ["yes"]
    assert [a["i"] for a, _, _ in bench.drain("original")] == ["0"]
    assert_set_aside(bench.drain("failure"), "ContentCorrupted")
