"""The drill's timeline plot: delivery rates from cumulative samples, and a PNG."""

import pytest

from cluster.drills.plot import plot_timeline, rates


def test_rates_are_deliveries_per_second_on_a_one_second_grid():
    times, values = rates([(100.0, 0), (100.5, 10), (101.0, 20), (102.0, 20), (103.0, 50)])
    assert times == [0.0, 1.0, 2.0]
    assert values == pytest.approx([20.0, 0.0, 30.0])


def test_rates_interpolate_between_sparse_samples_and_need_two():
    assert rates([(0.0, 0), (4.0, 40)]) == ([0.0, 1.0, 2.0, 3.0], [10.0, 10.0, 10.0, 10.0])
    assert rates([(5.0, 3)]) == ([], [])


def test_the_plot_is_a_png_that_reads_back(tmp_path):
    from PIL import Image

    samples = [(1000.0 + i * 0.5, min(i, 40) * 25 + max(0, i - 60) * 25) for i in range(160)]
    rounds = [{"round": 0, "fault": "kill", "phases": {"fault_at": 1015.0, "plan_at": 1019.2, "adopted_at": 1020.5,
                                                      "resumed_at": 1031.0}},
              {"round": 1, "fault": "datanode", "phases": {"fault_at": 1050.0, "healed_at": 1056.0}}]
    path = plot_timeline({"timeline": samples, "rounds": rounds, "ok": True, "target": "local"}, str(tmp_path / "t.png"))
    with open(path, "rb") as image:
        assert image.read(8) == b"\x89PNG\r\n\x1a\n"
    with Image.open(path) as image:
        assert image.width >= 1000 and image.height >= 400
