"""The pause monitor's arithmetic and its one line per pause: pure, no threads."""

import logging

import pytest

from cluster.node.pause_monitor import PauseMonitor, overrun


def test_overrun_is_the_time_past_the_interval_never_negative():
    assert overrun(0.5, 10.0, 10.5) == 0.0
    assert overrun(0.5, 10.0, 10.2) == 0.0
    assert overrun(0.5, 10.0, 26.1) == pytest.approx(15.6)


def test_only_a_pause_past_the_threshold_is_logged(caplog):
    monitor = PauseMonitor(interval=0.5, threshold=1.5)
    with caplog.at_level(logging.WARNING, logger="cluster.node.pause_monitor"):
        assert monitor.observe(100.0, 101.9) is None  # 1.4 s late: scheduling noise
        assert monitor.observe(200.0, 216.1) == pytest.approx(15.6)
    assert monitor.pauses == [pytest.approx(15.6)]
    (line,) = [record.getMessage() for record in caplog.records]
    assert "stood still for about 15.6s" in line
