"""LogMessage: the line, the level by FlowFile, what is not evaluated, and failures."""

from __future__ import annotations

import logging

import pytest

from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from flow.processors.log_message import TRACE, log_level, log_line
from tests.unit.flow.test_processors import one_processor_flow, trigger_once

LOGGER = "flow.processor.p"  # the processor's logger, as LogAttribute's


def definition(properties, relationships=("success",)):
    return parse_flow(one_processor_flow("LogMessage", properties, relationships))


def lines(caplog):
    return [(record.levelno, record.getMessage()) for record in caplog.records if record.name == LOGGER]


def test_logs_prefix_and_message_at_the_level_and_passes_the_flowfile_on(caplog):
    flow = definition({"log_level": "WARN", "log_prefix": "[${who}] ", "log_message": "got ${filename} 100%"})
    with caplog.at_level(logging.INFO, logger=LOGGER):
        out = trigger_once(flow, [({"who": "ann", "filename": "f.txt"}, b"body")])
    assert lines(caplog) == [(logging.WARNING, "[ann] got f.txt 100%")]
    [(attributes, data)] = out["success"]
    assert data == b"body" and attributes["who"] == "ann"


def test_the_level_is_evaluated_for_each_flowfile(caplog):
    flow = definition({"log_level": "${level}", "log_message": "${n}"})
    inputs = [({"level": level, "n": str(n)}, b"") for n, level in enumerate(("error", "debug", "Info"), 1)]
    with caplog.at_level(logging.INFO, logger=LOGGER):
        out = trigger_once(flow, inputs)
    assert lines(caplog) == [(logging.ERROR, "1"), (logging.INFO, "3")]
    assert len(out["success"]) == 3


def test_prefix_and_message_are_not_evaluated_below_the_loggers_level(caplog):
    # the message would fail (abc is no number), but debug is not logged: nothing to evaluate
    flow = definition({"log_level": "debug", "log_message": "${n:plus(1)}"})
    with caplog.at_level(logging.INFO, logger=LOGGER):
        out = trigger_once(flow, [({"n": "abc"}, b"x")])
    assert lines(caplog) == [] and [data for _, data in out["success"]] == [b"x"]


def test_trace_logs_below_debug(caplog):
    flow = definition({"log_level": "trace", "log_message": "deep"})
    with caplog.at_level(TRACE, logger=LOGGER):
        trigger_once(flow, [({}, b"")])
    assert lines(caplog) == [(TRACE, "deep")] and TRACE < logging.DEBUG


def test_a_level_made_wrong_by_an_attribute_goes_to_failure_with_the_reason(caplog):
    flow = definition(
        {"log_level": "${level}", "log_message": "m", "expression_failure": "route_to_failure"}, ("success", "failure")
    )
    with caplog.at_level(logging.INFO, logger=LOGGER):
        out = trigger_once(flow, [({"level": "loud"}, b"1"), ({"level": "info"}, b"2")])
    [(attributes, data)] = out["failure"]
    assert data == b"1" and "'loud' is not a log level" in attributes["expression.error"]
    assert "log_level" in attributes["expression.error"]
    assert [data for _, data in out["success"]] == [b"2"]
    assert [line for line in lines(caplog) if line[0] == logging.INFO] == [(logging.INFO, "m")]


def test_a_failing_message_goes_to_failure_naming_the_property(caplog):
    flow = definition({"log_message": "${n:plus(1)}", "expression_failure": "route_to_failure"}, ("success", "failure"))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        out = trigger_once(flow, [({"n": "abc"}, b"")])
    [(attributes, _)] = out["failure"]
    assert attributes["expression.error"].startswith("property 'log_message'")


def test_a_constant_level_that_is_none_of_the_five_is_refused_when_loading():
    with pytest.raises(FlowDefinitionError, match="expected one of trace, debug, info, warn, error, got 'warning'"):
        definition({"log_level": "warning"})


def test_the_line_and_the_levels():
    assert log_line("  ", "m") == "m" and log_line(None, None) == "" and log_line("p: ", None) == "p: "
    assert log_line(" p ", "m") == " p m"
    assert log_level("WARN") == logging.WARNING and log_level("warning") is None and log_level("fatal") is None
