"""Sources take their input exactly once across crashes, on real local repositories:
GetFile and FetchFile finish the deletes a crash cut short and never take a recorded
file again, ListFile lists a file once, ExecuteStateless commits its sub-flow's state."""

from __future__ import annotations

import os
import textwrap

import pytest

from flow.commit import CommitHooks, DurableCommitter
from flow.loading import parse_flow
from flow.processor import ProcessContext
from flow.processors import PROCESSOR_TYPES
from flow.queue import FlowFileQueue
from flow.session import ProcessSession
from flow.shard import open_shard
from flow.stateless import StatelessFlowLoader
from repositories.content import ContentRepositoryConfig, open_filesystem_content_repository
from repositories.storage import LocalStorage


class SimulatedCrash(BaseException):
    pass


class CrashAt(CommitHooks):
    """Crash at `point` of the commits of `component` (every one, or the first `times`)."""

    def __init__(self, point, component, times=None):
        left = [times]

        def crash(component_id):
            if component_id == component and left[0] != 0:
                if left[0] is not None:
                    left[0] -= 1
                raise SimulatedCrash(f"{point} of {component_id}")

        super().__init__({point: crash})


class Node:
    """One run of a node over the repositories under `root`: its queues, a durable
    committer, and sessions for the processors the test triggers by hand."""

    def __init__(self, root, queues, hooks=None):
        self.queues = {name: FlowFileQueue(name) for name in queues}
        self.shard = open_shard(
            LocalStorage(), str(root / "shard"), "s", self.queues.values(), checkpoint_interval=None
        )
        report = self.shard.recover()
        self.content = open_filesystem_content_repository(
            {"c": str(root / "content")}, ContentRepositoryConfig(sync_on_close=False)
        )
        self.content.recover(report.live_claims)
        self.committer = DurableCommitter(self.shard, self.content, None, hooks=hooks)

    def trigger(self, processor, context, incoming=(), outgoing=None):
        """Run one task as the traditional engine does (commit what the processor left open)."""
        session = ProcessSession(
            component_id=processor.id,
            component_type=processor.type_name,
            committer=self.committer,
            content=self.content,
            shard=self.shard,
            incoming=[self.queues[q] for q in incoming],
            outgoing={r: [self.queues[q]] for r, q in (outgoing or {}).items()},
            clock_ms=lambda: 1_000,
        )
        processor.on_trigger(context, session)
        if not session.is_closed:
            session.commit() if session.touched else session.rollback()

    def contents(self, queue):
        flowfiles = self.queues[queue].poll(1 << 20)[0]
        self.queues[queue].requeue(flowfiles)
        return sorted(self.content.read(f.content_claim) if f.content_claim else b"" for f in flowfiles)

    def crash(self):
        self.shard.wal.close()  # no checkpoint: what is in the journals is what a crash leaves
        self.content.close()


def processor(type_name, processor_id, properties, loader=None, services=()):
    """A configured processor and its context; `services`: the flow's [(id, type, properties)]."""
    definition = parse_flow(
        {
            "services": [{"id": sid, "type": kind, "properties": props} for sid, kind, props in services],
            "processors": [
                {
                    "id": processor_id,
                    "type": type_name,
                    "properties": properties,
                    "auto_terminate": list(PROCESSOR_TYPES[type_name].relationships_for(properties, {})),
                }
            ],
        }
    )
    instance = PROCESSOR_TYPES[type_name](processor_id)
    context = ProcessContext(
        processor_id, definition.processors[processor_id].properties, {}, stateless_flows=loader, has_incoming=False
    )
    instance.on_scheduled(context)
    return instance, context


def write(directory, name, data):
    """A file written whole under a temporary name, then renamed (a new inode)."""
    temporary = directory / f".{name}.tmp"
    temporary.write_bytes(data)
    os.replace(temporary, directory / name)


def test_get_file_takes_each_file_once_across_crashes_after_the_commit_and_in_the_prune(tmp_path):
    inbox = tmp_path / "in"
    inbox.mkdir()
    for name in ("a", "b"):
        write(inbox, name, b"first " + name.encode())
    properties = {"input_directory": str(inbox)}

    # Run 1: the FlowFiles and the record commit; the node dies before the deletes.
    node = Node(tmp_path, ["out"], CrashAt("after_wal", "get"))
    get, context = processor("GetFile", "get", properties)
    with pytest.raises(SimulatedCrash):
        node.trigger(get, context, outgoing={"success": "out"})
    node.crash()
    assert sorted(os.listdir(inbox)) == ["a", "b"]
    write(inbox, "a", b"second a")  # meanwhile a new file under a taken name

    # Run 2: finishes the deletes first (b only: a is another file now), then takes the
    # new a; that commit (the prune and the new record) dies before the WAL.
    node = Node(tmp_path, ["out"], CrashAt("before_wal", "get"))
    assert node.contents("out") == [b"first a", b"first b"]
    get, context = processor("GetFile", "get", properties)
    with pytest.raises(SimulatedCrash):
        node.trigger(get, context, outgoing={"success": "out"})
    node.crash()
    assert os.listdir(inbox) == ["a"]

    # Run 3: nothing in the way.
    node = Node(tmp_path, ["out"])
    get, context = processor("GetFile", "get", properties)
    node.trigger(get, context, outgoing={"success": "out"})
    node.trigger(get, context, outgoing={"success": "out"})  # prunes the records of what it deleted
    assert node.contents("out") == [b"first a", b"first b", b"second a"]
    assert os.listdir(inbox) == []
    assert node.shard.get_state("get") == {"intake.layout": "1"}, "nothing is kept once its delete is durable"
    node.crash()


def test_fetch_file_finishes_a_delete_a_crash_cut_short_and_list_file_lists_once(tmp_path):
    inbox = tmp_path / "in"
    inbox.mkdir()
    write(inbox, "a", b"payload")
    flows = {"listed": "listed", "fetched": "fetched"}

    node = Node(tmp_path, flows, CrashAt("after_wal", "fetch"))
    list_file, list_context = processor("ListFile", "list", {"input_directory": str(inbox)})
    fetch, fetch_context = processor(
        "FetchFile", "fetch", {"completion_strategy": "delete", "allowed_root": str(inbox)}
    )
    node.trigger(list_file, list_context, outgoing={"success": "listed"})
    with pytest.raises(SimulatedCrash):
        node.trigger(fetch, fetch_context, incoming=["listed"], outgoing={"success": "fetched"})
    node.crash()
    assert os.listdir(inbox) == ["a"], "the crash came between the commit and the delete"

    node = Node(tmp_path, flows)
    assert node.contents("listed") == [] and node.contents("fetched") == [b"payload"]
    list_file, list_context = processor("ListFile", "list", {"input_directory": str(inbox)})
    fetch, fetch_context = processor(
        "FetchFile", "fetch", {"completion_strategy": "delete", "allowed_root": str(inbox)}
    )
    node.trigger(list_file, list_context, outgoing={"success": "listed"})
    assert node.contents("listed") == [], "ListFile's mark committed with its listing: not listed again"
    node.trigger(fetch, fetch_context, incoming=["listed"], outgoing={"success": "fetched"})
    assert os.listdir(inbox) == [], "FetchFile's next run finished the recorded delete"
    assert node.shard.get_state("fetch") == {"intake.layout": "1"}
    assert node.contents("fetched") == [b"payload"]
    node.crash()


def get_file_sub_flow(tmp_path, inbox):
    """A stateless sub-flow in which GetFile takes the files of `inbox` to an output port."""
    sub = tmp_path / "sub.yaml"
    sub.write_text(
        textwrap.dedent(f"""
        processors:
          - {{id: get, type: GetFile, properties: {{input_directory: "{inbox}"}}}}
        ports:
          - {{id: out, type: output}}
        connections:
          - {{source: get, destination: out}}
    """)
    )
    return sub


def test_execute_stateless_commits_its_sub_flows_state_with_its_outputs(tmp_path):
    inbox = tmp_path / "in"
    inbox.mkdir()
    for name in ("a", "b"):
        write(inbox, name, name.encode())
    sub = get_file_sub_flow(tmp_path, inbox)
    loader = StatelessFlowLoader(PROCESSOR_TYPES)

    node = Node(tmp_path, ["out"], CrashAt("after_wal", "run"))
    run, context = processor("ExecuteStateless", "run", {"flow": str(sub)}, loader)
    with pytest.raises(SimulatedCrash):
        node.trigger(run, context, outgoing={"output": "out"})
    node.crash()
    assert sorted(os.listdir(inbox)) == ["a", "b"]

    node = Node(tmp_path, ["out"])
    run, context = processor("ExecuteStateless", "run", {"flow": str(sub)}, loader)
    node.trigger(run, context, outgoing={"output": "out"})
    node.trigger(run, context, outgoing={"output": "out"})
    assert node.contents("out") == [b"a", b"b"], "the files the committed sub-flow state records are not taken again"
    assert os.listdir(inbox) == []
    node.crash()


def test_a_failed_commit_of_execute_stateless_offers_its_sub_flows_files_again(tmp_path):
    inbox = tmp_path / "in"
    inbox.mkdir()
    write(inbox, "a", b"a")
    sub = get_file_sub_flow(tmp_path, inbox)
    failing = [1]

    def refuse_once(component_id):
        if failing[0]:
            failing[0] -= 1
            raise OSError("disk gone for a moment")

    node = Node(tmp_path, ["out"], CommitHooks(before_wal=refuse_once))
    run, context = processor("ExecuteStateless", "run", {"flow": str(sub)}, StatelessFlowLoader(PROCESSOR_TYPES))
    with pytest.raises(Exception, match="commit failed"):
        node.trigger(run, context, outgoing={"output": "out"})
    assert node.contents("out") == [] and os.listdir(inbox) == ["a"]
    node.trigger(run, context, outgoing={"output": "out"})
    assert node.contents("out") == [b"a"] and os.listdir(inbox) == []
    node.crash()
