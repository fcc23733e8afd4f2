"""Which dockerd pid files the harness treats as left over from a daemon that is gone."""

from __future__ import annotations

import os

from cluster.services.docker_engine import command_name, pid_file_is_stale, remove_stale_pid_file


def commands(table: dict[int, str]):
    return table.get


def test_a_pid_file_naming_a_running_dockerd_is_kept():
    assert not pid_file_is_stale("412\n", commands({412: "dockerd"}))


def test_a_pid_file_whose_number_another_process_now_has_is_stale():
    assert pid_file_is_stale("412\n", commands({412: "python3"}))


def test_a_pid_file_naming_no_process_or_no_number_is_stale():
    assert pid_file_is_stale("412", commands({}))
    assert pid_file_is_stale("", commands({}))
    assert pid_file_is_stale("not a pid", commands({}))
    assert pid_file_is_stale("0", commands({0: "dockerd"}))


def test_command_name_reads_the_running_process_and_none_for_a_missing_one():
    assert command_name(os.getpid()) is not None
    assert command_name(2**22 + 7) is None


def test_remove_stale_pid_file_removes_only_a_left_over_file(tmp_path):
    left_over = tmp_path / "docker.pid"
    left_over.write_text(str(os.getpid()))  # this test's own process: not dockerd
    remove_stale_pid_file(left_over)
    assert not left_over.exists()
    remove_stale_pid_file(tmp_path / "missing.pid")  # no file: nothing to do
