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


def _answer(*workers, silent=()) -> dict:
    """A `GET /api/v1/cluster/processors` answer: worker I's PutFile took in workers[I]
    (FlowFiles, bytes); the workers in `silent` did not answer."""
    shards = {
        f"w{index}.local": [
            {"processor": "generate", "since_start": {"in_count": 0, "in_bytes": 0}},
            {"processor": "put", "since_start": {"in_count": count, "in_bytes": size}},
        ]
        for index, (count, size) in enumerate(workers)
        if index not in silent
    }
    members = [{"node": f"worker-{index}", "answered": index not in silent} for index in range(len(workers))]
    return {"shards": shards, "members": members}


def test_putfiles_intake_is_summed_over_the_workers():
    from benchmarks._flow_workers import put_intake

    assert put_intake(_answer((1000, 100_000), (2500, 250_000)), 2) == (3500, 350_000)


def test_putfiles_intake_is_refused_unless_every_worker_answered():
    from benchmarks._flow_workers import put_intake

    with pytest.raises(RuntimeError, match="1 of 2 workers"):
        put_intake(_answer((1000, 100_000), (2500, 250_000), silent=(1,)), 2)


def test_the_files_are_counted_less_often_the_further_the_end_and_every_20_ms_near_it():
    from benchmarks._flow_workers import next_poll_s

    assert next_poll_s(200_000, 0.0) == 0.1  # no rate yet
    assert next_poll_s(190_000, 10_000.0) == 1.0  # 19 s to go: at most a second
    assert next_poll_s(10_000, 10_000.0) == 0.5  # 1 s to go at this rate: half of it
    assert next_poll_s(10, 10_000.0) == 0.02  # 1 ms to go: the shortest wait


def test_counting_to_the_end_of_a_run_lists_the_directory_a_few_dozen_times_not_hundreds():
    from benchmarks._flow_workers import next_poll_s

    files, rate, now, polls = 200_000, 10_000.0, 0.0, 0  # a 20 s run at 10,000 files a second
    while (have := min(files, int(rate * now))) < files:
        polls += 1
        now += next_poll_s(files - have, rate)
    assert polls < 40 and now - files / rate <= 0.02  # the end seen within one shortest wait
