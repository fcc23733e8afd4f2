"""Preparations started while an adopted shard is fenced (`cluster.node.early_adoption`):
only for a shard written under the node's flow, and a flow that prepares anything; one
set per shard and epoch (an adoption tried again goes on with it); taken once by the
shard's runtime at that epoch and flow, and released otherwise."""

from __future__ import annotations

from cluster.core.ownership import new_shard
from cluster.node.early_adoption import EarlyPreparations
from flow.loading import parse_flow

from ..flow.test_preparation import Ready, graph


def _ownership(epoch: int = 5, flow: str | None = "v1"):
    return new_shard("n1-4", "n2-3", epoch, at=0.0, flow=flow)


def _definition():
    return graph().definition


def _started(early: EarlyPreparations, **ownership):
    Ready.calls, Ready.released = [], []
    early.start(_ownership(**ownership), _definition(), "v1", admit=lambda: None, services=None)


def test_a_shard_of_this_flow_is_prepared_once_and_its_runtime_takes_it():
    early = EarlyPreparations()
    _started(early)
    taken = early.take("n1-4", 5, "v1")
    assert taken is not None and taken.preparation.wait(10)
    assert Ready.calls == [("sink", "out", "n1-4")]
    assert taken.graph.processors["sink"] in taken.preparation.processors  # the runtime runs these very processors
    assert early.take("n1-4", 5, "v1") is None  # taken once
    assert Ready.released == []


def test_an_adoption_tried_again_goes_on_with_what_was_started():
    early = EarlyPreparations()
    _started(early)
    first = early._by_shard["n1-4"]
    early.start(_ownership(), _definition(), "v1", admit=lambda: None, services=None)
    assert early._by_shard["n1-4"] is first


def test_what_is_not_taken_at_its_epoch_and_flow_is_released():
    for epoch, version in ((6, "v1"), (5, "v2")):
        early = EarlyPreparations()
        _started(early)
        early._by_shard["n1-4"].preparation.wait(10)
        assert early.take("n1-4", epoch, version) is None
        assert Ready.released == ["sink", "other"]


def test_a_later_epoch_replaces_and_releases_the_earlier_one():
    early = EarlyPreparations()
    _started(early)
    early._by_shard["n1-4"].preparation.wait(10)
    early.start(_ownership(epoch=6), _definition(), "v1", admit=lambda: None, services=None)
    assert Ready.released == ["sink", "other"]
    assert early.take("n1-4", 6, "v1") is not None


def test_the_end_of_the_incarnation_releases_everything_not_taken():
    early = EarlyPreparations()
    _started(early)
    early._by_shard["n1-4"].preparation.wait(10)
    early.release_all()
    assert Ready.released == ["sink", "other"] and early.take("n1-4", 5, "v1") is None


def test_nothing_is_started_for_another_flow_none_recorded_or_a_flow_that_prepares_nothing():
    early = EarlyPreparations()
    _started(early, flow="v0")
    _started(early, flow=None)
    plain = parse_flow({"processors": [{"id": "gen", "type": "GenerateFlowFile", "auto_terminate": ["success"]}]})
    early.start(_ownership(), plain, "v1", admit=lambda: None, services=None)
    assert early._by_shard == {} and Ready.calls == []
