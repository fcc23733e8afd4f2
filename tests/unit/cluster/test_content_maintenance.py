"""A node's content maintenance round: the resources no writer came back to are retired
(and closed) before each collect, so that an idle node's last resources are collected
too; a round that fails is one log line until a round works again."""

from __future__ import annotations

import logging

from cluster.node.maintenance import ContentMaintenance


class Content:
    """Records what a round asks of the content (the calls, in order)."""

    def __init__(self, calls: list[str]):
        self.calls = calls
        self.failing = False

    def collect(self) -> None:
        self.calls.append("collect")
        if self.failing:
            raise OSError("HDFS did not answer")

    def age_off(self) -> None:
        self.calls.append("age_off")


def test_a_round_retires_what_no_writer_came_back_to_before_it_collects():
    calls: list[str] = []
    maintenance = ContentMaintenance(Content(calls), retire=lambda: calls.append("retire"))  # type: ignore[arg-type]
    maintenance.round(age_off=False)
    maintenance.round(age_off=True)
    assert calls == ["retire", "collect", "retire", "collect", "age_off"]
    assert maintenance.rounds == 2


def test_without_retire_a_round_only_collects():
    calls: list[str] = []
    ContentMaintenance(Content(calls)).round(age_off=False)  # type: ignore[arg-type]
    assert calls == ["collect"]


def test_a_failing_round_is_logged_once_until_one_works(caplog):
    calls: list[str] = []
    content = Content(calls)
    maintenance = ContentMaintenance(content, retire=lambda: calls.append("retire"))  # type: ignore[arg-type]
    content.failing = True
    with caplog.at_level(logging.INFO, logger="cluster.node.maintenance"):
        for _ in range(3):
            maintenance.round(age_off=False)
        content.failing = False
        maintenance.round(age_off=False)
    messages = [record.getMessage() for record in caplog.records]
    assert len([m for m in messages if "failed" in m]) == 1 and "HDFS did not answer" in messages[0]
    assert any("works again" in m for m in messages) and maintenance.rounds == 1
