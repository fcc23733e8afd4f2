"""DuplicateFlowFile: clones and copy.index, the count per FlowFile, and its bounds."""

from __future__ import annotations

import pytest

from flow.errors import FlowDefinitionError
from flow.loading import parse_flow
from flow.processors.duplicate import MAX_COPIES, NotACount, copies
from tests.unit.flow.test_processors import one_processor_flow, trigger_once


def definition(properties, relationships=("success",)):
    return parse_flow(one_processor_flow("DuplicateFlowFile", properties, relationships))


def test_default_makes_a_hundred_clones_besides_the_original():
    out = trigger_once(definition({}), [({"k": "v"}, b"payload")])
    success = out["success"]
    assert sorted(int(a["copy.index"]) for a, _ in success) == list(range(101))
    assert {data for _, data in success} == {b"payload"} and {a["k"] for a, _ in success} == {"v"}
    # each clone is a FlowFile of its own, named (as an input is) after the original
    assert len({a["filename"] for a, _ in success}) == 1


def test_the_count_is_evaluated_for_each_flowfile():
    out = trigger_once(definition({"number_of_copies": "${n}"}), [({"n": "2"}, b"a"), ({"n": " +0 "}, b"b")])
    by_content = sorted((data, a["copy.index"]) for a, data in out["success"])
    assert by_content == [(b"a", "0"), (b"a", "1"), (b"a", "2"), (b"b", "0")]


def test_a_negative_count_at_run_time_sends_only_the_original():
    out = trigger_once(definition({"number_of_copies": "${n}"}), [({"n": "-3"}, b"a")])
    assert [(a["copy.index"], data) for a, data in out["success"]] == [("0", b"a")]


@pytest.mark.parametrize(
    "count, reason",
    [
        ("abc", "expected an integer number of copies, got 'abc'"),
        ("2147483648", "expected an integer number of copies"),
        (str(MAX_COPIES + 1), "10,001 copies is over the limit of 10,000 per FlowFile"),
    ],
)
def test_a_count_that_is_not_one_goes_to_failure_and_the_rest_go_on(count, reason):
    flow = definition({"number_of_copies": "${n}", "expression_failure": "route_to_failure"}, ("success", "failure"))
    out = trigger_once(flow, [({"n": count}, b"bad"), ({"n": "1"}, b"good")])
    [(attributes, data)] = out["failure"]
    assert data == b"bad" and "copy.index" not in attributes and reason in attributes["expression.error"]
    assert sorted((data, a["copy.index"]) for a, data in out["success"]) == [(b"good", "0"), (b"good", "1")]


@pytest.mark.parametrize("count", ["-1", "many", "10001", "1.5"])
def test_a_constant_count_that_is_not_one_is_refused_when_loading(count):
    with pytest.raises(FlowDefinitionError, match="number_of_copies"):
        definition({"number_of_copies": count})


def test_copies_reads_counts_as_nifi_does():
    assert copies("+3") == 3 and copies(" 7\t") == 7 and copies("-5") == 0 and copies("007") == 7
    assert copies(str(MAX_COPIES)) == MAX_COPIES
    for text in ("", "1_000", "0x10", "٣", "9" * 65):
        with pytest.raises(NotACount):
            copies(text)


def test_flowfiles_past_a_runs_budget_of_clones_wait_for_the_next_run_and_none_is_lost():
    inputs = [({"n": "6000"}, b"a"), ({"n": "6000"}, b"b"), ({"n": "1"}, b"c")]
    out = trigger_once(definition({"number_of_copies": "${n}"}), inputs)
    counted = {}
    for attributes, data in out["success"]:
        counted.setdefault(data, set()).add(int(attributes["copy.index"]))
    assert counted == {b"a": set(range(6001)), b"b": set(range(6001)), b"c": {0, 1}}
