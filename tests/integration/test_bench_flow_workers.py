"""`custody bench flow --workers 2`, run as a user types it, on a short run: the flows
run through `custody run --workers 2` (a process per worker), every FlowFile is
delivered (the benchmark raises otherwise), the counts are the ones asked for, and each
worker merged its own half. The figures themselves are not asserted."""

from __future__ import annotations

import json
import subprocess
import sys

from cluster.drills.harness import PROJECT_ROOT


def test_bench_flow_with_two_workers_splits_the_counts_exactly_and_reports_the_workers(tmp_path):
    argv = [sys.executable, "-m", "cluster.cli", "bench", "flow", "--quick", "--workers", "2"]
    argv += ["--engine", "3000", "--small", "1000", "--large", "3", "--single", "200", "--dir", str(tmp_path), "--json"]
    done = subprocess.run(argv, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["workers"] == 2
    assert (result["engine_flowfiles"], result["small_flowfiles"], result["large_flowfiles"]) == (3000, 1000, 3)
    assert result["single_flowfiles"] == 200
    for key in ("engine_flowfiles_per_sec", "flowfiles_per_sec", "mb_per_sec_1mb", "engine_cpu_us_per_flowfile"):
        assert result[key] > 0, key
    # Each worker generated 1,500 and merged them into a bundle of 1,000 and one of 500.
    sizes = sorted(path.stat().st_size for path in (tmp_path / "engine" / "out").iterdir())
    assert sizes == [50_000, 50_000, 100_000, 100_000]
    assert len(list((tmp_path / "small" / "out").iterdir())) == 1000
    assert sorted(path.name for path in (tmp_path / "small" / "node" / "workers").iterdir()) == ["0", "1"]
