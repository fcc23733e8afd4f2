"""Node-level shared services: started on first lookup, once, shared; an unknown name is a
clear error; closed in reverse start order. No Spark here: the services are fakes."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading

import pytest

from flow.errors import ServiceError, UnknownService
from flow.loading import parse_flow
from flow.processor import ProcessContext, Processor
from flow.processors import STANDARD_PROCESSORS
from flow.registry import ProcessorRegistry
from flow.services import ServiceRegistry
from flow.stateless import StatelessFlow


class Fake:
    def __init__(self, name, log):
        self.name, self.log = name, log
        log.append(f"start {name}")

    def close(self):
        self.log.append(f"close {self.name}")


def registry_of(*names, log):
    services = ServiceRegistry()
    for name in names:
        services.register(name, lambda name=name: Fake(name, log))
    return services


def test_a_service_starts_on_its_first_lookup_only_and_is_shared():
    log = []
    services = registry_of("spark", "hdfs", log=log)
    assert log == [] and services.started() == []
    first = services.get("spark")
    assert services.get("spark") is first
    assert log == ["start spark"] and services.started() == ["spark"]


def test_an_unknown_service_names_the_configured_ones():
    services = registry_of("spark", "hdfs", log=[])
    with pytest.raises(UnknownService, match=r"'sparkk' is configured on this node \(configured: hdfs, spark\)"):
        services.get("sparkk")
    context = ProcessContext("transform", {}, {}, services=services)
    with pytest.raises(UnknownService, match=r"^transform: no shared service 'hbase'"):
        context.service("hbase")
    with pytest.raises(UnknownService, match=r"^transform: no shared service 'spark' .*\(configured: none\)"):
        ProcessContext("transform", {}, {}).service("spark")


def test_close_stops_in_reverse_start_order_with_the_given_stop_and_logs_durations(caplog):
    log = []
    services = registry_of("a", "b", log=log)
    services.register("c", lambda: "session c", lambda service: log.append(f"stop {service}"))
    services.get("b")
    services.get("c")
    services.get("a")
    with caplog.at_level(logging.INFO, logger="flow.services"):
        services.close()
    assert log == ["start b", "start a", "close a", "stop session c", "close b"]
    assert "service 'a': stopped in " in caplog.text
    services.close()  # idempotent
    with pytest.raises(ServiceError, match="closed"):
        services.get("a")
    with pytest.raises(ServiceError, match="closed"):
        services.register("d", lambda: None)


def test_a_failed_start_is_a_clear_error_and_is_tried_again():
    attempts = []

    def start():
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionRefusedError("NameNode down")
        return "client"

    services = ServiceRegistry()
    services.register("hdfs", start)
    with pytest.raises(
        ServiceError,
        match=r"service 'hdfs' failed to start after .* ConnectionRefusedError: "
        r"NameNode down",
    ):
        services.get("hdfs")
    assert services.get("hdfs") == "client" and len(attempts) == 2


def test_a_stop_that_fails_does_not_keep_the_others_running(caplog):
    log = []
    services = registry_of("first", log=log)
    services.register("broken", lambda: "x", lambda service: 1 / 0)
    services.get("first")
    services.get("broken")
    services.close()
    assert log == ["start first", "close first"]
    assert "service 'broken': its stop failed" in caplog.text


def test_concurrent_lookups_start_a_service_once_and_close_waits_for_a_start_under_way():
    log = []
    release = threading.Event()
    entered = threading.Event()

    def slow_start():
        entered.set()
        release.wait(10)
        return Fake("slow", log)

    services = ServiceRegistry()
    services.register("slow", slow_start)
    found, refused = [], []

    def look_up():
        try:
            found.append(services.get("slow"))
        except ServiceError as error:
            refused.append(error)

    lookups = [threading.Thread(target=look_up) for _ in range(3)]
    for thread in lookups:
        thread.start()
    assert entered.wait(10)
    closer = threading.Thread(target=services.close)
    closer.start()
    closer.join(0.2)
    assert closer.is_alive()  # it waits for the start under way
    release.set()
    for thread in lookups + [closer]:
        thread.join(10)
    assert log == ["start slow", "close slow"]
    assert len(found) == 1  # the others were refused: the registry closed while they waited
    assert len(refused) == 2 and "the registry of services is closed" in str(refused[0])


def test_a_registered_name_is_taken():
    services = ServiceRegistry()
    services.register("spark", lambda: None)
    with pytest.raises(ServiceError, match="'spark' is already registered"):
        services.register("spark", lambda: None)
    assert services.names() == ["spark"] and "spark" in services


def test_processors_of_a_stateless_flow_and_of_the_flows_it_embeds_share_the_nodes_services(tmp_path):
    class UseService(Processor):
        type_name = "TestUseService"

        def on_trigger(self, context, session):
            flowfile = session.get()
            session.transfer(session.put_attribute(flowfile, "via", context.service("shared")), "success")

    sub = tmp_path / "sub.yaml"
    sub.write_text(
        "processors: [{id: use, type: TestUseService}]\n"
        "ports: [{id: in, type: input}, {id: out, type: output}]\n"
        "connections: [{source: in, destination: use}, {source: use, destination: out}]\n"
    )
    starts = []
    services = ServiceRegistry()
    services.register("shared", lambda: starts.append(1) or "the one service")
    outer = StatelessFlow(
        parse_flow(
            {
                "processors": [
                    {"id": "use", "type": "TestUseService"},
                    {
                        "id": "embed",
                        "type": "ExecuteStateless",
                        "properties": {"flow": str(sub)},
                        "auto_terminate": ["original", "failure"],
                    },
                ],
                "ports": [{"id": "in", "type": "input"}, {"id": "out", "type": "output"}],
                "connections": [
                    {"source": "in", "destination": "use"},
                    {"source": "use", "destination": "embed"},
                    {"source": "embed", "relationships": ["output"], "destination": "out"},
                ],
            },
            registry=ProcessorRegistry([*STANDARD_PROCESSORS, UseService]),
        ),
        services=services,
    )
    try:
        result = outer.trigger([({}, b"x")])
    finally:
        outer.close()
    assert result.success, result.failure
    assert [attributes["via"] for _, attributes, _ in result.outputs] == ["the one service"]
    assert starts == [1]


def test_importing_the_flow_engine_does_not_import_pyspark():
    code = (
        "import sys, flow, flow.engine, flow.loading, flow.stateless, flow.services, flow.spark.session; "
        "assert 'pyspark' not in sys.modules, sorted(m for m in sys.modules if 'spark' in m)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_service_found_dead_is_stopped_and_started_again():
    log, dead = [], set()
    services = ServiceRegistry()
    services.register("spark", lambda: Fake(f"spark{len(log)}", log), alive=lambda fake: fake.name not in dead)
    first = services.get("spark")
    assert services.get("spark") is first
    dead.add(first.name)  # its cluster manager gave up on it
    second = services.get("spark")
    assert second is not first and log == ["start spark0", "close spark0", "start spark2"]
    assert services.started() == ["spark"]
    services.close()
    assert log[-1] == "close spark2"


def test_a_liveness_check_that_raises_counts_as_dead():
    log = []
    services = ServiceRegistry()
    services.register("spark", lambda: Fake("spark", log), alive=lambda fake: 1 / 0)
    services.get("spark")
    services.get("spark")
    assert log == ["start spark", "close spark", "start spark"]


def test_a_discarded_service_is_stopped_and_the_next_lookup_starts_a_new_one():
    log = []
    services = registry_of("spark", log=log)
    services.discard("spark", "not started: nothing happens")
    first = services.get("spark")
    services.discard("spark", "its cluster gave it no executors")
    assert log == ["start spark", "close spark"] and services.started() == []
    assert services.get("spark") is not first
