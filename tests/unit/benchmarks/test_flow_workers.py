"""`custody bench flow --workers N` (`benchmarks._flow_workers`): what it expects the
workers to write, and the options it refuses."""

from __future__ import annotations

import argparse

import pytest

from benchmarks._flow_workers import expected_files, refusal


def test_the_files_expected_are_one_per_flowfile_or_one_per_bundle_of_each_workers_share():
    assert expected_files(20_000, 0, 2) == 20_000
    assert expected_files(50_000, 1000, 1) == 50
    assert expected_files(50_000, 1000, 2) == 50  # 25,000 each: 25 bundles each
    assert expected_files(3000, 1000, 2) == 4  # 1,500 each: a bundle and a short one each
    assert expected_files(5, 1000, 3) == 3  # 2, 2 and 1: one short bundle each


def _args(**changed) -> argparse.Namespace:
    values = {"workers": 2, "against_nifi": False, "profile": False, "no_outbox": False, **changed}
    return argparse.Namespace(**values)


@pytest.mark.parametrize(
    "changed,words",
    [
        ({"workers": 0}, "at least 1"),
        ({"profile": True}, "--profile"),
        ({"no_outbox": True}, "--no-outbox"),
    ],
)
def test_options_that_measure_this_process_are_refused_with_workers(changed, words):
    problem = refusal(_args(**changed))
    assert problem is not None and words in problem
    assert refusal(_args()) is None


def test_against_nifi_takes_workers():
    assert refusal(_args(against_nifi=True)) is None


def test_what_putfile_wrote_counts_files_and_their_bytes(tmp_path):
    from benchmarks._flow_workers import written

    assert written(str(tmp_path / "absent")) == (0, 0)
    for index, size in enumerate((100, 100, 1000)):
        (tmp_path / f"f{index}").write_bytes(b"x" * size)
    assert written(str(tmp_path)) == (3, 1200)
