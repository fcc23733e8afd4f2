"""Which of a node's workers takes what (`flow.workers`): the pure decisions, then the
sources that follow them in real engines, one per worker, over shards of their own."""

from __future__ import annotations

import errno
import os

import pytest

from cluster.services.process import wait_until
from flow.engine import TraditionalEngine
from flow.graph import FlowGraph
from flow.loading import parse_flow
from flow.memory_content import InMemoryContentRepository
from flow.shard import open_shard
from flow.workers import SOLE_WORKER, Worker
from repositories.storage import LocalStorage


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_the_shares_of_a_total_add_up_to_it_and_the_numbers_below_it_are_each_made_once(count):
    workers = [Worker(index, count) for index in range(count)]
    for total in range(0, 40):
        shares = [worker.share(total) for worker in workers]
        assert sum(shares) == total
        assert max(shares) - min(shares) <= 1
        numbers = [worker.sequence(local) for worker in workers for local in range(worker.share(total))]
        assert sorted(numbers) == list(range(total))


def test_the_sole_worker_takes_everything_and_numbers_as_a_node_without_workers():
    assert SOLE_WORKER == Worker(0, 1) and SOLE_WORKER.sole
    assert SOLE_WORKER.share(7) == 7 and [SOLE_WORKER.sequence(n) for n in range(3)] == [0, 1, 2]
    assert SOLE_WORKER.takes_path("/any/file") and SOLE_WORKER.takes_partition(9)
    assert SOLE_WORKER.runs_in("ListFile", is_source=True)


def test_a_file_goes_to_exactly_one_worker_and_always_the_same():
    """The hash is BLAKE2b of the path, not Python's salted `hash`: the assignment below
    was computed in another process and must hold in this one and every later one."""
    workers = [Worker(0, 2), Worker(1, 2)]
    names = [f"/in/f{i}.txt" for i in range(8)]
    taken = [[name for name in names if worker.takes_path(name)] for worker in workers]
    assert taken == [
        ["/in/f3.txt", "/in/f4.txt", "/in/f5.txt", "/in/f6.txt", "/in/f7.txt"],
        ["/in/f0.txt", "/in/f1.txt", "/in/f2.txt"],
    ]
    three = [Worker(index, 3) for index in range(3)]
    for name in (f"/data/{i}" for i in range(200)):
        assert sum(worker.takes_path(name) for worker in three) == 1
    undecodable = "/in/\udcff-undecodable"  # as os.walk gives a name that is not UTF-8
    assert Worker(0, 2).takes_path(undecodable) != Worker(1, 2).takes_path(undecodable)


def test_a_kafka_partition_goes_to_the_worker_of_its_index():
    assert [p for p in range(7) if Worker(1, 3).takes_partition(p)] == [1, 4]


def test_sources_that_cannot_split_their_input_run_in_worker_zero_only():
    first, second = Worker(0, 2), Worker(1, 2)
    for type_name in ("GetFile", "ConsumeKafka", "ListenHTTP", "GenerateFlowFile"):
        assert first.runs_in(type_name, is_source=True) and second.runs_in(type_name, is_source=True)
    for type_name in ("ListFile", "ExecuteStateless", "SomePythonSource"):
        assert first.runs_in(type_name, is_source=True) and not second.runs_in(type_name, is_source=True)
    assert second.runs_in("ListFile", is_source=False)  # a processor with input: its worker's own queues


def test_a_listenhttp_that_keeps_idempotency_keys_runs_in_worker_zero_only():
    """A key is kept in its worker's state: a retry the kernel gave to another worker
    would not find it. Without keys (an empty header) every worker listens."""
    first, second = Worker(0, 2), Worker(1, 2)
    keyed = {"idempotency_key_header": "Idempotency-Key"}
    assert first.runs_in("ListenHTTP", is_source=True, properties=keyed)
    assert not second.runs_in("ListenHTTP", is_source=True, properties=keyed)
    for unkeyed in ({"idempotency_key_header": ""}, {"idempotency_key_header": "  "}):
        assert second.runs_in("ListenHTTP", is_source=True, properties=unkeyed)


@pytest.mark.parametrize("index,count", [(2, 2), (-1, 3), (0, 0)])
def test_a_worker_outside_its_count_is_refused(index, count):
    with pytest.raises(ValueError, match="the index must be from 0"):
        Worker(index, count)


def _worker_engine(tmp_path, worker: Worker, input_directory: str) -> tuple[TraditionalEngine, object]:
    """An engine of worker `worker`: GenerateFlowFile (7 in all, numbered), GetFile and
    ListFile, each into a queue of its own toward a stopped processor that holds them."""
    definition = parse_flow(
        {
            "processors": [
                {
                    "id": "generate",
                    "type": "GenerateFlowFile",
                    "properties": {"batch_size": 2, "max_count": 7, "sequence_attribute": "seq"},
                },
                {"id": "get", "type": "GetFile", "properties": {"input_directory": input_directory}},
                {"id": "list", "type": "ListFile", "properties": {"input_directory": input_directory}},
                {"id": "hold", "type": "UpdateAttribute", "auto_terminate": ["success"]},
            ],
            "connections": [
                {"id": "generated", "source": "generate", "destination": "hold"},
                {"id": "got", "source": "get", "destination": "hold"},
                {"id": "listed", "source": "list", "destination": "hold"},
            ],
        }
    )
    graph = FlowGraph(definition)
    shard = open_shard(
        LocalStorage(),
        str(tmp_path / f"shard-{worker.index}"),
        "s",
        graph.queues.values(),
        checkpoint_interval=None,
    )
    shard.recover()
    engine = TraditionalEngine(
        graph, shard, InMemoryContentRepository(), None, threads=2, stopped=["hold"], worker=worker
    )
    return engine, shard


def _queued(engine, queue: str) -> list[dict]:
    return [dict(entry[2].attributes) for entry in engine.graph.queues[queue].snapshot().entries]


def test_two_workers_split_generated_flowfiles_and_files_and_only_worker_zero_lists(tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    names = [f"f{i}.txt" for i in range(8)]
    for name in names:
        (source / name).write_bytes(name.encode())
    seen: dict[int, dict] = {}
    for index in (0, 1):
        worker = Worker(index, 2)
        engine, shard = _worker_engine(tmp_path, worker, str(source))
        mine = {name for name in names if worker.takes_path(os.path.join(str(source), name))}
        engine.start()
        try:
            wait_until(
                lambda engine=engine, worker=worker, mine=mine: (
                    engine.graph.queues["generated"].count == worker.share(7) and not mine & set(os.listdir(source))
                ),
                20,
                f"worker {index}'s share of the FlowFiles and of the files",
            )
            seen[index] = {
                "seq": sorted(int(a["seq"]) for a in _queued(engine, "generated")),
                "files": sorted(a["filename"] for a in _queued(engine, "got")),
                "listed": engine.status()["processors"]["list"]["state"],
            }
        finally:
            engine.stop(timeout=10)
            shard.wal.close()
    assert seen[0]["seq"] == [0, 2, 4, 6] and seen[1]["seq"] == [1, 3, 5]
    assert sorted(seen[0]["files"] + seen[1]["files"]) == names
    assert not set(seen[0]["files"]) & set(seen[1]["files"])
    assert seen[0]["listed"] == "RUNNING" and seen[1]["listed"] == "STOPPED"
    assert os.listdir(source) == []


def _listen_http(worker: Worker, port: int):
    from flow.processor import ProcessContext
    from flow.processors.http import ListenHTTP

    definition = parse_flow(
        {
            "processors": [
                {"id": "listen", "type": "ListenHTTP", "properties": {"port": port}, "auto_terminate": ["success"]}
            ]
        }
    )
    processor = ListenHTTP("listen")
    context = ProcessContext("listen", definition.processors["listen"].properties, {}, worker=worker)
    processor.on_scheduled(context)
    return processor, context


def test_the_listen_http_of_each_worker_binds_the_same_port_and_a_sole_one_binds_it_alone():
    first, first_context = _listen_http(Worker(0, 2), 0)
    try:
        second, second_context = _listen_http(Worker(1, 2), first.port)
        try:
            assert second.port == first.port
            with pytest.raises(OSError) as refused:  # a node of one worker asks the port for itself
                _listen_http(SOLE_WORKER, first.port)
            assert refused.value.errno == errno.EADDRINUSE
        finally:
            second.on_stopped(second_context)
    finally:
        first.on_stopped(first_context)


@pytest.mark.parametrize("header,in_second", [("Idempotency-Key", False), ("", True)])
def test_an_engine_of_worker_one_runs_listen_http_only_when_it_keeps_no_idempotency_keys(tmp_path, header, in_second):
    """The engine asks `runs_in` with the processor's properties as parsed (the default
    header included): a ListenHTTP keeping keys is STOPPED in worker 1, never bound."""
    definition = parse_flow(
        {
            "processors": [
                {
                    "id": "listen",
                    "type": "ListenHTTP",
                    "properties": {"port": 0, **({} if header else {"idempotency_key_header": ""})},
                    "auto_terminate": ["success"],
                }
            ]
        }
    )
    states = {}
    for index in (0, 1):
        graph = FlowGraph(definition)
        shard = open_shard(
            LocalStorage(), str(tmp_path / f"shard-{index}"), "s", graph.queues.values(), checkpoint_interval=None
        )
        shard.recover()
        engine = TraditionalEngine(graph, shard, InMemoryContentRepository(), None, threads=1, worker=Worker(index, 2))
        try:
            states[index] = engine.status()["processors"]["listen"]["state"]
        finally:
            shard.wal.close()
    assert states[0] != "STOPPED", states
    assert (states[1] != "STOPPED") is in_second, states
