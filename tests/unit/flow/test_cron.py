"""Cron schedules (NiFi's CRON_DRIVEN, Quartz's expressions): the next firing time of
each kind of field, the refusals, the flow's `scheduling.cron`, and an engine that runs
a cron-scheduled processor at its times only."""

from __future__ import annotations

import json
import time
from datetime import datetime

import pytest

from cluster.services.process import wait_until
from flow.cron import CronError, parse_cron
from flow.definition_model import SchedulingDefinition
from flow.engine import TraditionalEngine
from flow.errors import FlowDefinitionError
from flow.graph import FlowGraph
from flow.loading import parse_flow
from flow.memory_content import InMemoryContentRepository
from flow.shard import open_shard
from repositories.storage import LocalStorage

NOW = datetime(2026, 12, 1, 20, 17, 33)  # a Tuesday


def next_after(expression: str, moment: datetime = NOW) -> datetime | None:
    fire = parse_cron(expression).next_after(time.mktime(moment.timetuple()))
    return None if fire is None else datetime.fromtimestamp(fire)


@pytest.mark.parametrize(
    ("expression", "fires"),
    [
        ("0 0/5 * * * ?", datetime(2026, 12, 1, 20, 20, 0)),
        ("*/10 * * * * ?", datetime(2026, 12, 1, 20, 17, 40)),
        ("33 17 20 * * ?", datetime(2026, 12, 2, 20, 17, 33)),  # strictly after: not now itself
        ("0 30 2 ? * MON-FRI", datetime(2026, 12, 2, 2, 30, 0)),
        ("0 0 9 ? * SAT,SUN", datetime(2026, 12, 5, 9, 0, 0)),
        ("0 0 9 ? * 1", datetime(2026, 12, 6, 9, 0, 0)),  # Quartz's 1 is Sunday
        ("0 0 0 L * ?", datetime(2026, 12, 31, 0, 0, 0)),
        ("0 0 0 L FEB ?", datetime(2027, 2, 28, 0, 0, 0)),
        ("0 0 9 ? * 6#3", datetime(2026, 12, 18, 9, 0, 0)),  # the third Friday
        ("0 15 10 1,15 * ?", datetime(2026, 12, 15, 10, 15, 0)),
        ("0 0 12 1 JAN ? 2028", datetime(2028, 1, 1, 12, 0, 0)),
        ("0 0 12 1-3 * ? 2020-2025", None),  # never again
        ("0 0 0 31 FEB ?", None),  # never at all
    ],
)
def test_the_next_firing_time(expression, fires):
    assert next_after(expression) == fires


def test_the_end_of_a_day_rolls_over_to_the_next():
    assert next_after("* * * * * ?", datetime(2026, 12, 31, 23, 59, 59)) == datetime(2027, 1, 1, 0, 0, 0)


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("0 0 * * *", "6 or 7 fields"),
        ("0 0 0 * * *", "must be '?'"),
        ("0 0 0 ? * ?", "must be '?'"),
        ("0 0 0 15W * ?", "W and L-n"),
        ("0 0 0 ? * 5L", "L in the day of week"),
        ("61 0 0 * * ?", "seconds: '61'"),
        ("0 0 0 ? * 9#2", "not one of 1-7"),
        ("0 0 0 ? * 6#6", "'#' and 1 to 5"),
        ("0 0 20-10 * * ?", "runs backwards"),
        ("0 0 0 * FOO ?", "month: 'FOO'"),
        ("0 0 0 * * ? 1969", "year: '1969'"),
    ],
)
def test_what_quartz_refuses_or_custody_does_not_take_is_one_clear_error(expression, problem):
    with pytest.raises(CronError, match=problem):
        parse_cron(expression)


def _flow(scheduling: dict) -> dict:
    return {
        "processors": [
            {"id": "cron", "type": "GenerateFlowFile", "properties": {"batch_size": 1}, "scheduling": scheduling},
            {"id": "busy", "type": "GenerateFlowFile", "properties": {"batch_size": 1, "max_count": 50}},
            {"id": "hold", "type": "UpdateAttribute", "auto_terminate": ["success"]},
        ],
        "connections": [
            {"id": "timed", "source": "cron", "destination": "hold"},
            {"id": "counted", "source": "busy", "destination": "hold"},
        ],
    }


def test_a_flow_schedules_a_processor_by_cron_and_says_what_is_wrong_with_one():
    definition = parse_flow(_flow({"cron": "0 0/5 * * * ?"}))
    assert definition.processors["cron"].scheduling == SchedulingDefinition(cron="0 0/5 * * * ?")
    with pytest.raises(FlowDefinitionError, match="scheduling.cron.*6 or 7 fields"):
        parse_flow(_flow({"cron": "0 5 * * *"}))
    with pytest.raises(FlowDefinitionError, match="cron or run_schedule, not both"):
        parse_flow(_flow({"cron": "0 0/5 * * * ?", "run_schedule": "1 sec"}))


def _engine(tmp_path, cron: str) -> tuple[TraditionalEngine, object]:
    graph = FlowGraph(parse_flow(_flow({"cron": cron})))
    shard = open_shard(LocalStorage(), str(tmp_path / "shard"), "s", graph.queues.values(), checkpoint_interval=None)
    shard.recover()
    return TraditionalEngine(graph, shard, InMemoryContentRepository(), None, threads=2, stopped=["hold"]), shard


def test_a_processor_whose_time_has_not_come_does_not_run(tmp_path):
    engine, shard = _engine(tmp_path, "0 0 12 1 JAN ? 2199")
    engine.start()
    try:
        # the other source, scheduled as fast as it can go, has made all it makes
        wait_until(lambda: engine.graph.queues["counted"].count >= 50, 30, "50 FlowFiles of the busy source")
        assert engine.graph.queues["timed"].count == 0
    finally:
        engine.stop(timeout=10)
        shard.wal.close()


def test_a_processor_scheduled_every_second_runs_once_a_second(tmp_path):
    engine, shard = _engine(tmp_path, "* * * * * ?")
    timed = engine.graph.queues["timed"]
    engine.start()
    try:
        wait_until(lambda: timed.count >= 3, 30, "three FlowFiles of the cron source")
    finally:
        engine.stop(timeout=10)
        shard.wal.close()
    created = sorted(entry[2].entry_date for entry in timed.snapshot().entries)
    # each firing is in a second of its own (a timer-driven source would make thousands)
    assert len({millis // 1000 for millis in created}) == len(created)


def test_a_cron_schedule_exports_to_nifi_as_cron_driven_and_imports_back():
    from flow.nifi_flow import export_nifi_flow, import_nifi_flow

    flow = {
        "name": "nightly",
        "processors": [
            {
                "id": "gen",
                "type": "GenerateFlowFile",
                "scheduling": {"cron": "0 30 2 ? * MON-FRI"},
                "auto_terminate": ["success"],
            }
        ],
        "connections": [],
    }
    document = export_nifi_flow(flow)
    (processor,) = document["flowContents"]["processors"]
    assert (processor["schedulingStrategy"], processor["schedulingPeriod"]) == ("CRON_DRIVEN", "0 30 2 ? * MON-FRI")
    imported = import_nifi_flow(json.dumps(document))
    assert imported.flow["processors"][0]["scheduling"] == {"cron": "0 30 2 ? * MON-FRI"}
