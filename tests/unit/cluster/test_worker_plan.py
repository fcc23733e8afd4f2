"""The worker supervisor's decisions (`cluster.node.worker_plan`), without processes,
and the recorded worker count on disk."""

from __future__ import annotations

import argparse

import pytest

from cluster.node.worker_plan import (
    COUNT_FILE,
    DIED_AT_ONCE_S,
    MAX_DELAY_S,
    count_problem,
    read_count,
    record_count,
    restart_after,
)
from cluster.node.workers import worker_command


def test_a_new_directory_starts_with_any_count_and_a_recorded_one_only_with_its_own():
    assert count_problem(None, False, 1) is None
    assert count_problem(None, False, 4) is None
    assert count_problem(3, False, 3) is None
    problem = count_problem(2, False, 3)
    assert problem is not None
    assert "--workers 2, not 3" in problem and "start it with --workers 2" in problem and "new --data-dir" in problem


def test_a_directory_a_single_node_ran_on_takes_no_workers_but_still_starts_without():
    assert count_problem(None, True, 1) is None
    problem = count_problem(None, True, 2)
    assert problem is not None and "--workers 1, not 2" in problem and "shards/" in problem


def test_the_recorded_count_reads_back_and_a_damaged_record_is_refused(tmp_path):
    assert read_count(str(tmp_path)) is None
    record_count(str(tmp_path), 3)
    assert read_count(str(tmp_path)) == 3
    assert not (tmp_path / (COUNT_FILE + ".partial")).exists()
    for text in ("", "{", '{"workers": 0}', '{"workers": true}', '{"workers": "2"}', "[2]"):
        (tmp_path / COUNT_FILE).write_text(text)
        with pytest.raises(ValueError, match="does not say how many workers"):
            read_count(str(tmp_path))


def test_a_worker_that_ran_a_while_starts_again_at_once():
    restart = restart_after(DIED_AT_ONCE_S + 1, -9, 8.0)
    assert restart.delay_s == 0 and "killed by signal 9" in restart.reason


def test_a_worker_that_dies_at_once_waits_twice_as_long_each_time_up_to_the_maximum():
    delays, last = [], 0.0
    for _ in range(8):
        restart = restart_after(0.2, 1, last)
        delays.append(restart.delay_s)
        last = restart.delay_s
    assert delays == [1, 2, 4, 8, 16, MAX_DELAY_S, MAX_DELAY_S, MAX_DELAY_S]
    assert "exited with code 1 0.2 s after its start" in restart_after(0.2, 1, 0).reason


def test_a_worker_runs_the_supervisors_flow_parameters_and_settings_with_its_index(tmp_path):
    args = argparse.Namespace(
        flow="flow.yaml",
        data_dir=str(tmp_path),
        threads=3,
        status_interval=0.0,
        name="edge",
        spark_master="local[*]",
        param=["input=/in", "output=/out"],
        spark_conf=[],
        accept_wal_damage=True,
        python_extensions=[],
        python_index_url="",
        python_find_links=[],
        python_no_index=False,
        verbose=False,
        admin=None,
        admin_tokens="",
        admin_allowed_host=[],
    )
    command = worker_command(args, 1, 2)
    assert command[command.index("--worker") + 1] == "1/2"
    assert command[command.index("--data-dir") + 1] == str(tmp_path)
    assert command[command.index("--threads") + 1] == "3"
    assert [command[i + 1] for i, word in enumerate(command) if word == "--param"] == ["input=/in", "output=/out"]
    assert "--accept-wal-damage" in command and "--workers" not in command and "--admin" not in command


@pytest.mark.parametrize(
    "options,words",
    [
        (["--workers", "0"], "--workers must be from 1 to 64 (the node's worker processes), not 0"),
        (["--workers", "65"], "--workers must be from 1 to 64"),
    ],
)
def test_custody_run_refuses_a_worker_count_out_of_range(options, words):
    from cluster.cli import build_parser
    from cluster.commands.run import argument_problem

    args = build_parser().parse_args(["run", "--flow", "f.yaml", "--data-dir", "d", *options])
    problem = argument_problem(args)
    assert problem is not None and words in problem
    for accepted in (["--workers", "2"], ["--workers", "2", "--admin", "127.0.0.1:0"]):
        assert argument_problem(build_parser().parse_args(["run", "--flow", "f", "--data-dir", "d", *accepted])) is None
