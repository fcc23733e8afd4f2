"""`custody` loads what the command needs: building the parser imports no benchmark
(nor kazoo, hdfs-native or pyspark); `custody bench NAME` loads that one benchmark."""

import importlib
import subprocess
import sys

from cluster.cli import build_parser
from cluster.commands.bench import available, benchmark_parser


def test_building_the_cli_imports_no_benchmark_and_no_client_library():
    probe = (
        "import sys; from cluster.cli import build_parser; build_parser(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('benchmarks', 'kazoo', 'hdfs_native', 'pyspark', 'pyarrow')))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


def test_bench_lists_the_benchmarks_from_their_source_and_passes_options_to_the_one_named():
    names = available()
    assert {"wal", "content", "flow", "provenance"} <= set(names)
    assert names["wal"].startswith("FlowFile WAL")
    args = build_parser().parse_args(["bench", "wal", "--quick", "--json"])
    assert (args.benchmark, args.options) == ("wal", ["--quick", "--json"])
    options = benchmark_parser("wal", importlib.import_module("benchmarks.wal")).parse_args(args.options)
    assert options.quick and options.json
