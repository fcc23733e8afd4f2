"""`custody bench NAME [OPTIONS]`: run one benchmark of `benchmarks/` and print its result.

The benchmark modules are found without importing them (their one-line summaries
are read from their source), so that no other `custody` command pays for loading
the benchmarks and what they import; the module named is imported when it runs,
and parses its own options (`custody bench NAME --help`).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import os
import pkgutil

PACKAGE = "benchmarks"


def available() -> dict[str, str]:
    """Benchmark name (its module's, `_` written `-`) -> the first line of its module
    docstring, read from source."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return {}
    found = {}
    for module_info in sorted(pkgutil.iter_modules(spec.submodule_search_locations), key=lambda m: m.name):
        if module_info.name.startswith("_") or module_info.ispkg:
            continue
        path = os.path.join(module_info.module_finder.path, f"{module_info.name}.py")
        try:
            with open(path, encoding="utf-8") as source:
                docstring = ast.get_docstring(ast.parse(source.read())) or ""
        except (OSError, SyntaxError):
            docstring = ""
        # A module's name with hyphens for underscores: `custody bench python-processors`.
        found[module_info.name.replace("_", "-")] = docstring.strip().splitlines()[0] if docstring.strip() else ""
    return found


def module_name(benchmark: str) -> str:
    """The module of benchmark `benchmark` (a name of `available`)."""
    return f"{PACKAGE}.{benchmark.replace('-', '_')}"


def register(subparsers) -> None:
    names = available()
    summary = "; ".join(f"{name}: {line}" for name, line in names.items())
    parser = subparsers.add_parser(
        "bench", help="run a benchmark against its anchor", description=f"Benchmarks: {summary}" if summary else None
    )
    parser.add_argument("benchmark", metavar="NAME", choices=sorted(names), help=f"one of {', '.join(sorted(names))}")
    parser.add_argument("options", nargs=argparse.REMAINDER, help="the benchmark's own options (NAME --help)")
    parser.set_defaults(func=run)


def benchmark_parser(name: str, module) -> argparse.ArgumentParser:
    summary = (module.__doc__ or "").strip().splitlines()
    parser = argparse.ArgumentParser(prog=f"custody bench {name}", description=summary[0] if summary else None)
    parser.add_argument("--quick", action="store_true", help="a short run, for smoke tests")
    parser.add_argument("--json", action="store_true", help="print only the JSON result")
    module.add_arguments(parser)
    return parser


def run(args) -> int:
    module = importlib.import_module(module_name(args.benchmark))
    options = benchmark_parser(args.benchmark, module).parse_args(args.options)
    result = module.run(options)
    if options.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(format_table(result))
        print(json.dumps(result, sort_keys=True))
    return 0


def format_table(result: dict) -> str:
    """A readable two-column table of the flat numeric and text fields of a result."""
    rows = [(key, value) for key, value in sorted(result.items()) if not isinstance(value, (dict, list))]
    width = max((len(key) for key, _ in rows), default=0)
    lines = []
    for key, value in rows:
        shown = f"{value:,.3f}" if isinstance(value, float) else str(value)
        lines.append(f"{key.ljust(width)}  {shown}")
    return "\n".join(lines)
