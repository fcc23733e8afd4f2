"""The drill's timeline plot: delivery rates from cumulative samples, and a PNG."""

import pytest

from cluster.drills.plot import label_levels, moving_average, outages, plot_timeline, rates


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
    rounds = [
        {
            "round": 0,
            "fault": "kill",
            "phases": {"fault_at": 1015.0, "plan_at": 1019.2, "adopted_at": 1020.5, "resumed_at": 1031.0},
        },
        {"round": 1, "fault": "datanode", "phases": {"fault_at": 1050.0, "healed_at": 1056.0}},
    ]
    path = plot_timeline(
        {"timeline": samples, "rounds": rounds, "ok": True, "target": "local"}, str(tmp_path / "t.png")
    )
    with open(path, "rb") as image:
        assert image.read(8) == b"\x89PNG\r\n\x1a\n"
    with Image.open(path) as image:
        assert image.width >= 1000 and image.height >= 400


def test_moving_average_is_the_mean_of_each_value_and_those_just_before_it():
    assert moving_average([3.0, 6.0, 9.0, 0.0], 2) == [3.0, 4.5, 7.5, 4.5]
    assert moving_average([], 30) == []


def test_labels_are_staggered_where_close_and_left_out_past_the_last_height():
    # gap 10: 0 and 4 and 8 take the three heights; 9 fits none; 15 overlaps 8 but not 4 or 0 at height 0
    assert label_levels([0.0, 4.0, 8.0, 9.0, 15.0, 30.0], 10.0, levels=3) == [0, 1, 2, None, 0, 0]
    assert label_levels([0.0, 20.0, 40.0], 10.0) == [0, 0, 0]


def test_outages_give_each_round_its_stall_from_the_fault():
    report = {
        "rounds": [
            {"round": 0, "fault": "kill", "death_to_resume": 4.5, "phases": {"fault_at": 110.0, "resumed_at": 114.5}},
            {
                "round": 1,
                "fault": "datanode",
                "twenty_delivered_after": 0.3,
                "phases": {"fault_at": 130.0, "healed_at": 140.0},
            },
            {"round": 2, "fault": "expire", "phases": {"fault_at": 150.0}},  # nothing to resume: no figure
        ]
    }
    assert outages(report, 100.0) == [(10.0, 4.5, "kill"), (30.0, 0.3, "datanode")]
