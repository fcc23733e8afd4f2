"""`custody bench flow`, run as a user types it, on a short run: every flow delivers
every FlowFile (the benchmark raises otherwise), and the keys the throughput goals
are read from are there, beside their anchors measured in the same run. The figures
themselves are not asserted: performance is measured, never asserted in a test."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cluster.drills.harness import PROJECT_ROOT


def test_bench_flow_reports_the_engine_sink_and_1mb_figures_beside_their_anchors(tmp_path):
    argv = [
        sys.executable,
        "-m",
        "cluster.cli",
        "bench",
        "flow",
        "--quick",
        "--engine",
        "3000",
        "--small",
        "1000",
        "--large",
        "3",
        "--single",
        "200",
        "--dir",
        str(tmp_path),
        "--json",
    ]
    done = subprocess.run(argv, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    for key in (
        "engine_flowfiles_per_sec",
        "flowfiles_per_sec",
        "mb_per_sec_1mb",
        "raw_wal_engine_flowfiles_per_sec",
        "raw_wal_flowfiles_per_sec",
        "raw_files_per_sec",
        "raw_disk_mb_per_sec",
        "single_flowfiles_per_sec",
        "single_cpu_us_per_flowfile",
    ):
        assert result[key] > 0, key
    assert result["engine_flowfiles"] == 3000 and result["small_flowfiles"] == 1000
    assert result["single_flowfiles"] == 200 and len(list((tmp_path / "single" / "out").iterdir())) == 200
    assert result["back_pressure"] == 10_000  # NiFi's default: the flows NiFi runs out of the box
    # The ratios come from the unrounded rates; the rates are printed to 0.1/s.
    assert result["ratio_engine_to_wal"] == pytest.approx(
        result["engine_flowfiles_per_sec"] / result["raw_wal_engine_flowfiles_per_sec"], abs=0.0015
    )
    assert result["ratio_putfile_to_raw_files"] == pytest.approx(
        result["flowfiles_per_sec"] / result["raw_files_per_sec"], abs=0.0015
    )
    # Every bundle of 1,000 reached the sink: 3 files, each of 1,000 contents of 100 bytes.
    bundles = sorted((tmp_path / "engine" / "out").iterdir())
    assert len(bundles) == 3 and all(path.stat().st_size == 100_000 for path in bundles)
