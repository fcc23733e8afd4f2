"""A processor's `scheduling`: each of its settings is read into its field of
`SchedulingDefinition` (counts as integers, durations in seconds), and a setting left
out keeps the field's default."""

from __future__ import annotations

from flow.definition_model import SchedulingDefinition
from flow.loading import parse_flow


def _scheduling(settings: dict) -> SchedulingDefinition:
    processor = {"id": "gen", "type": "GenerateFlowFile", "auto_terminate": ["success"]}
    if settings:
        processor["scheduling"] = settings
    return parse_flow({"name": "f", "processors": [processor], "connections": []}).processors["gen"].scheduling


def test_every_scheduling_setting_reaches_its_field():
    scheduling = _scheduling(
        {
            "run_schedule": "250 ms",
            "concurrent_tasks": 3,
            "yield_duration": "4 sec",
            "penalty_duration": "2 min",
            "max_rollbacks": 7,
        }
    )
    assert scheduling == SchedulingDefinition(
        run_schedule_s=0.25, concurrent_tasks=3, yield_s=4.0, penalty_s=120.0, max_rollbacks=7
    )
    assert type(scheduling.concurrent_tasks) is int and type(scheduling.max_rollbacks) is int


def test_settings_left_out_keep_their_defaults():
    assert _scheduling({}) == SchedulingDefinition()
    assert _scheduling({"max_rollbacks": 2}) == SchedulingDefinition(max_rollbacks=2)
    assert _scheduling({"penalty_duration": "1 sec"}) == SchedulingDefinition(penalty_s=1.0)
