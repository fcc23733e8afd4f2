"""The standard processors, each run inside a one-processor stateless flow."""

from __future__ import annotations

import logging
import os
import time

import pytest

from flow.loading import parse_flow
from flow.stateless import StatelessFlow


def run(processor_type, properties, inputs=(), relationships=None, *, source=False, auto=()):
    """Feed `inputs` [(attributes, bytes)] through one processor; returns {relationship:
    [(attributes, bytes)]}."""
    from flow.processors import PROCESSOR_TYPES

    cls = PROCESSOR_TYPES[processor_type]
    definition = one_processor_flow(processor_type, properties, relationships or cls.relationships, source, auto)
    return trigger_once(parse_flow(definition), inputs)


def one_processor_flow(processor_type, properties, relationships, source=False, auto=()) -> dict:
    """A flow of processor `p` (fed by the input port `in` unless `source`) with an
    output port `out-NAME` for each of `relationships` not in `auto` (auto-terminated)."""
    definition: dict = {
        "processors": [{"id": "p", "type": processor_type, "properties": properties, "auto_terminate": list(auto)}],
        "ports": [{"id": "in", "type": "input"}],
        "connections": [],
    }
    if not source:
        definition["connections"].append({"source": "in", "destination": "p"})
    for name in relationships:
        if name in auto:
            continue
        port = f"out-{name}"
        definition["ports"].append({"id": port, "type": "output"})
        definition["connections"].append({"source": "p", "relationships": [name], "destination": port})
    return definition


def trigger_once(definition, inputs=()) -> dict[str, list]:
    """One run of the stateless flow `definition` on `inputs`, acknowledged: what each
    output port `out-NAME` got, as (attributes, content) by NAME."""
    flow = StatelessFlow(definition)
    try:
        result = flow.trigger(inputs) if inputs else flow.trigger()
    finally:
        flow.close()
    assert result.success, result.failure
    result.acknowledge()
    out: dict[str, list] = {}
    for port, attributes, data in result.outputs:
        out.setdefault(port[len("out-") :], []).append((attributes, data))
    return out


def test_generate_flowfile_sequence_and_custom_text():
    out = run(
        "GenerateFlowFile",
        {"batch_size": 3, "sequence_attribute": "seq", "custom_text": "n=${seq}", "extra": "${seq:plus(10)}"},
        source=True,
    )
    assert [(a["seq"], a["extra"], d) for a, d in out["success"]] == [
        ("0", "10", b"n=0"),
        ("1", "11", b"n=1"),
        ("2", "12", b"n=2"),
    ]


def test_generate_flowfile_sizes():
    out = run("GenerateFlowFile", {"batch_size": 2, "file_size": "1 KB", "unique_flowfiles": True}, source=True)
    (a, first), (_, second) = out["success"]
    assert len(first) == len(second) == 1024 and first != second


def test_update_attribute_sets_and_deletes():
    out = run(
        "UpdateAttribute",
        {"greeting": "hi ${name}", "delete_attributes": "tmp\\..*"},
        [({"name": "ann", "tmp.a": "1", "keep": "k"}, b"x")],
    )
    ((attributes, data),) = out["success"]
    assert attributes["greeting"] == "hi ann" and "tmp.a" not in attributes and attributes["keep"] == "k"


def test_route_on_attribute_by_property_name_and_matched():
    inputs = [({"size": str(n)}, b"") for n in (1, 50, 500)]
    out = run(
        "RouteOnAttribute", {"small": "${size:lt(10)}", "big": "${size:gt(100)}"}, inputs, ["small", "big", "unmatched"]
    )
    assert [a["size"] for a, _ in out["small"]] == ["1"]
    assert [a["size"] for a, _ in out["big"]] == ["500"]
    assert [a["size"] for a, _ in out["unmatched"]] == ["50"]
    out = run(
        "RouteOnAttribute",
        {"routing_strategy": "route_to_matched_if_any_matches", "small": "${size:lt(10)}", "big": "${size:gt(100)}"},
        inputs,
        ["matched", "unmatched"],
    )
    assert sorted(a["size"] for a, _ in out["matched"]) == ["1", "500"]


def test_split_text_with_header():
    text = b"h1\na\nb\nc\nd\ne\n"
    out = run("SplitText", {"line_split_count": 2, "header_line_count": 1}, [({"filename": "f"}, text)])
    assert [d for _, d in out["splits"]] == [b"h1\na\nb", b"h1\nc\nd", b"h1\ne"]
    assert [a["fragment.index"] for a, _ in out["splits"]] == ["1", "2", "3"]
    assert {a["fragment.count"] for a, _ in out["splits"]} == {"3"}
    assert [d for _, d in out["original"]] == [text]


def test_merge_content_with_header_delimiter_footer():
    inputs = [({"k": "same", "i": str(i)}, f"part{i}".encode()) for i in range(3)]
    out = run("MergeContent", {"min_entries": 3, "header": "[", "delimiter": ",", "footer": "]"}, inputs)
    ((attributes, data),) = out["merged"]
    assert data == b"[part0,part1,part2]" and attributes["merge.count"] == "3" and attributes["k"] == "same"
    assert "i" not in attributes and len(out["original"]) == 3


def test_merge_content_by_correlation_attribute():
    inputs = [({"g": g}, g.encode()) for g in "abab"]
    out = run("MergeContent", {"min_entries": 2, "correlation_attribute": "g"}, inputs)
    assert sorted(d for _, d in out["merged"]) == [b"aa", b"bb"]


@pytest.mark.parametrize(
    "properties, expected",
    [
        ({"search_value": "(\\w+)@(\\w+)", "replacement_value": "$2 at $1"}, b"x example at user y"),
        ({"replacement_strategy": "prepend", "replacement_value": ">${tag}"}, b">Tx user@example y"),
        ({"replacement_strategy": "append", "replacement_value": "<"}, b"x user@example y<"),
        (
            {"replacement_strategy": "literal_replace", "search_value": "user", "replacement_value": "USER"},
            b"x USER@example y",
        ),
        ({"replacement_strategy": "always_replace", "replacement_value": "gone"}, b"gone"),
    ],
)
def test_replace_text(properties, expected):
    out = run("ReplaceText", properties, [({"tag": "T"}, b"x user@example y")])
    assert out["success"][0][1] == expected


def test_replace_text_line_by_line():
    out = run(
        "ReplaceText",
        {"evaluation_mode": "line_by_line", "replacement_strategy": "prepend", "replacement_value": "- "},
        [({}, b"a\nb\r\nc")],
    )
    assert out["success"][0][1] == b"- a\n- b\r\n- c"


def test_log_attribute_logs_and_passes_through(caplog):
    with caplog.at_level(logging.INFO):
        out = run(
            "LogAttribute", {"log_payload": True, "attributes_to_log": "keep"}, [({"keep": "me", "hide": "x"}, b"body")]
        )
    assert out["success"][0][1] == b"body"
    assert "keep" in caplog.text and "hide" not in caplog.text and "body" in caplog.text


def _put_file_with_one_flowfile(tmp_path):
    """A PutFile on `tmp_path/out` (made) and a queue holding one FlowFile ("payload")."""
    from flow.commit import HeldCommitter
    from flow.memory_content import InMemoryContentRepository
    from flow.processor import ProcessContext
    from flow.processors.files import PutFile
    from flow.queue import FlowFileQueue
    from flow.session import ProcessSession
    from flow.shard import QueueShard

    directory = tmp_path / "out"
    properties = (
        parse_flow(
            {
                "processors": [
                    {
                        "id": "put",
                        "type": "PutFile",
                        "properties": {"directory": str(directory)},
                        "auto_terminate": ["success", "failure"],
                    }
                ]
            }
        )
        .processors["put"]
        .properties
    )
    incoming = FlowFileQueue("in")
    shard = QueueShard("s", [incoming])
    content = InMemoryContentRepository()
    committer = HeldCommitter(shard, content)
    seed = ProcessSession(
        component_id="seed",
        component_type="x",
        committer=committer,
        content=content,
        shard=shard,
        outgoing={"s": [incoming]},
        clock_ms=lambda: 0,
    )
    flowfile = seed.write_bytes(seed.create(), b"payload")
    seed.transfer(flowfile, "s")
    seed.commit()
    directory.mkdir()

    def session():
        return ProcessSession(
            component_id="put",
            component_type="PutFile",
            committer=committer,
            content=content,
            shard=shard,
            incoming=[incoming],
            auto_terminated=("success", "failure"),
            clock_ms=lambda: 0,
        )

    return PutFile("put"), ProcessContext("put", properties, {}), session, committer, flowfile, directory


def test_put_file_is_idempotent_by_flowfile_identity(tmp_path):
    from flow.processors.files import PARTIAL_MAX_AGE_S, PutFile

    processor, context, new_session, committer, flowfile, directory = _put_file_with_one_flowfile(tmp_path)
    leftover = directory / f".{flowfile.id}.0badf00d.partial"
    leftover.write_bytes(b"left by a crash")
    in_progress = directory / f".{flowfile.id}.0c0ffee0.partial"
    in_progress.write_bytes(b"another node writing now")
    old = time.time() - PARTIAL_MAX_AGE_S - 1
    os.utime(leftover, (old, old))
    processor.on_scheduled(context)
    processor.sweeper.join(10)
    assert os.listdir(directory) == [in_progress.name]  # a young one may be another node's write
    os.utime(in_progress, (old, old))
    again = PutFile("put-of-an-adopted-shard")
    again.on_scheduled(context)
    # The directory was swept once in this process: an adopted shard's engine does not
    # read it again (it may hold millions of delivered files).
    assert again.sweeper is None and in_progress.exists()
    in_progress.unlink()
    for attempt in range(2):  # a retry after a crash that lost the first commit
        session = new_session()
        processor.on_trigger(context, session)
        if attempt == 0:
            session.rollback()
        else:
            session.commit()
    assert os.listdir(directory) == [flowfile.id]
    assert (directory / flowfile.id).read_bytes() == b"payload"
    sends = [e for e in committer.events if e.event_type.value == "SEND"]
    assert len(sends) == 1 and sends[0].transit_uri == f"file://{directory / flowfile.id}"


def test_get_file_deletes_sources_only_after_success(tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    for name in ("a.txt", "b.txt", ".hidden"):
        (source / name).write_bytes(name.encode())
    out = run("GetFile", {"input_directory": str(source)}, source=True)
    assert sorted(d for _, d in out["success"]) == [b"a.txt", b"b.txt"]
    assert sorted(os.listdir(source)) == [".hidden"]


def test_list_file_then_fetch_file_lists_each_file_once(tmp_path):
    from flow.stateless import StatelessFlow

    source = tmp_path / "in"
    source.mkdir()
    (source / "one").write_bytes(b"1")
    old = time.time() - 10
    os.utime(source / "one", (old, old))
    flow = StatelessFlow(
        parse_flow(
            {
                "processors": [
                    {"id": "list", "type": "ListFile", "properties": {"input_directory": str(source)}},
                    {
                        "id": "fetch",
                        "type": "FetchFile",
                        "properties": {"completion_strategy": "none"},
                        "auto_terminate": ["not.found", "permission.denied", "failure"],
                    },
                ],
                "ports": [{"id": "out", "type": "output"}],
                "connections": [
                    {"source": "list", "destination": "fetch"},
                    {"source": "fetch", "relationships": ["success"], "destination": "out"},
                ],
            }
        )
    )
    first = flow.trigger()
    assert [(a["filename"], d) for _, a, d in first.outputs] == [("one", b"1")]
    first.acknowledge()
    (source / "two").write_bytes(b"2")
    second = flow.trigger()
    assert [(a["filename"], d) for _, a, d in second.outputs] == [("two", b"2")]
    flow.close()


def test_concurrent_list_file_tasks_list_a_file_once(tmp_path):
    from flow.commit import HeldCommitter
    from flow.memory_content import InMemoryContentRepository
    from flow.processor import ProcessContext
    from flow.processors.files import ListFile
    from flow.queue import FlowFileQueue
    from flow.session import ProcessSession
    from flow.shard import QueueShard

    source = tmp_path / "in"
    source.mkdir()
    (source / "one").write_bytes(b"1")
    properties = (
        parse_flow(
            {
                "processors": [
                    {
                        "id": "list",
                        "type": "ListFile",
                        "properties": {"input_directory": str(source)},
                        "auto_terminate": ["success"],
                    }
                ]
            }
        )
        .processors["list"]
        .properties
    )
    out = FlowFileQueue("out")
    shard = QueueShard("s", [out])
    content = InMemoryContentRepository()
    committer = HeldCommitter(shard, content)
    processor, context = ListFile("list"), ProcessContext("list", properties, {})
    sessions = [
        ProcessSession(
            component_id="list",
            component_type="ListFile",
            committer=committer,
            content=content,
            shard=shard,
            outgoing={"success": [out]},
            clock_ms=lambda: 0,
        )
        for _ in range(2)
    ]
    for session in sessions:  # two tasks (concurrent_tasks: 2) run before the engine commits either
        processor.on_trigger(context, session)
    for session in sessions:
        if not session.is_closed:
            session.commit() if session.touched else session.rollback()
    assert out.count == 1


@pytest.mark.parametrize("unnamed", [True, False], ids=["unnamed-files", "named-temporary"])
def test_put_file_never_writes_through_a_link_planted_at_its_temporary_name(tmp_path, monkeypatch, unnamed):
    import secrets

    from flow.processors import file_writes
    from flow.processors.files import PutFile

    processor, context, new_session, _, flowfile, directory = _put_file_with_one_flowfile(tmp_path)
    if not unnamed:  # a file system without unnamed files: the temporary file has a name
        monkeypatch.setattr(file_writes, "_named_only", {str(directory)})
    victim = tmp_path / "victim"
    victim.write_bytes(b"not yours")
    # The attacker is handed the name, which is otherwise 16 random hex digits.
    monkeypatch.setattr(secrets, "token_hex", lambda n: "ab" * n)
    link = directory / f".{flowfile.id}.{'ab' * 8}.partial"
    os.symlink(victim, link)
    assert PutFile._PARTIAL.match(link.name)  # the sweep of crashed writes knows the new names
    session = new_session()
    processor.on_trigger(context, session)
    session.commit()
    assert victim.read_bytes() == b"not yours"
    if unnamed:  # the file had no name until it was whole: the planted one was never used
        assert (directory / flowfile.id).read_bytes() == b"payload" and link.is_symlink()
    else:
        assert not (directory / flowfile.id).exists()  # refused (and penalized), not delivered


def test_merge_content_leaves_short_correlation_bins_queued_untouched_until_they_age_out(tmp_path):
    """Bins short of min_entries are not taken and put back on every trigger (each a
    commit): the FlowFiles stay queued, the processor yields, and a bin older than
    max_bin_age is merged although short."""
    from flow.commit import HeldCommitter
    from flow.memory_content import InMemoryContentRepository
    from flow.processor import ProcessContext
    from flow.processors.merge import MergeContent
    from flow.queue import FlowFileQueue
    from flow.session import ProcessSession
    from flow.shard import QueueShard

    properties = (
        parse_flow(
            {
                "processors": [
                    {
                        "id": "merge",
                        "type": "MergeContent",
                        "auto_terminate": ["merged", "original", "failure"],
                        "properties": {"min_entries": 3, "correlation_attribute": "g", "max_bin_age": "10 sec"},
                    }
                ]
            }
        )
        .processors["merge"]
        .properties
    )
    incoming = FlowFileQueue("in")
    shard = QueueShard("s", [incoming])
    content = InMemoryContentRepository()
    commits = []
    committer = HeldCommitter(shard, content)
    seed = ProcessSession(
        component_id="seed",
        component_type="x",
        committer=committer,
        content=content,
        shard=shard,
        outgoing={"s": [incoming]},
        clock_ms=lambda: 0,
    )
    for group in "aab":
        seed.transfer(seed.write_bytes(seed.create(attributes={"g": group}), group.encode()), "s")
    seed.commit()
    merge, now = MergeContent("merge"), [100.0]
    merge.clock = lambda: now[0]
    context = ProcessContext("merge", properties, {})

    def trigger():
        session = ProcessSession(
            component_id="merge",
            component_type="MergeContent",
            committer=committer,
            content=content,
            shard=shard,
            incoming=[incoming],
            auto_terminated=("merged", "original", "failure"),
            clock_ms=lambda: 0,
        )
        original_commit = committer.commit
        committer.commit = lambda tx: (commits.append(tx), original_commit(tx))
        context.yielded = False
        try:
            merge.on_trigger(context, session)
            if not context.yielded:
                session.commit()
        finally:
            committer.commit = original_commit
        return context.yielded

    for _ in range(5):  # idle: nothing merged, nothing written, a yield each time
        assert trigger() is True
        now[0] += 1.0
    assert incoming.count == 3 and commits == []  # no commit at all while idle
    assert not [e for e in committer.events if e.event_type.value == "JOIN"]
    now[0] += 10.0  # both bins are older than max_bin_age now
    assert trigger() is False
    # Bin a merged (a JOIN of two); bin b, alone, too (one parent: a FORK).
    merges = sorted(e.event_type.value for e in committer.events if e.event_type.value in ("JOIN", "FORK"))
    assert merges == ["FORK", "JOIN"] and incoming.count == 0


def test_split_text_refuses_a_split_over_its_buffer_and_leaves_the_content_as_it_was():
    text = b"short\n" + b"x" * 5000 + b"\nend\n"
    out = run(
        "SplitText",
        {"line_split_count": 1, "maximum_buffer_size": "1 KB"},
        [({"filename": "f"}, text)],
        relationships=("splits", "failure"),
        auto=("original",),
    )
    assert out.get("splits", []) == []  # the split made before the long line is undone
    [(attributes, data)] = out["failure"]
    assert data == text and "maximum_buffer_size" in attributes["text.error"]


def test_replace_text_by_line_refuses_a_line_over_its_buffer():
    text = b"a\n" + b"y" * 4000 + b"\n"
    out = run(
        "ReplaceText",
        {
            "evaluation_mode": "line_by_line",
            "maximum_buffer_size": "1 KB",
            "replacement_strategy": "append",
            "replacement_value": "!",
        },
        [({}, text)],
    )
    assert out.get("success", []) == []
    [(attributes, data)] = out["failure"]
    assert data == text and "longer than maximum_buffer_size" in attributes["text.error"]


def test_replace_text_sends_only_the_flowfile_whose_expression_fails_to_failure():
    out = run(
        "ReplaceText",
        {"replacement_strategy": "append", "replacement_value": "${n:plus(1)}"},
        [({"n": "abc"}, b"bad"), ({"n": "41"}, b"good")],
    )
    assert [data for _, data in out["success"]] == [b"good42"]
    [(attributes, data)] = out["failure"]
    assert data == b"bad" and "replacement_value" in attributes["text.error"]
