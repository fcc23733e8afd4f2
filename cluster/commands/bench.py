"""`custody bench NAME`: run one benchmark of `benchmarks/` and print its result."""

from __future__ import annotations

import importlib
import json
import pkgutil

import benchmarks


def register(subparsers) -> None:
    parser = subparsers.add_parser("bench", help="run a benchmark against its anchor")
    subparsers_for = parser.add_subparsers(dest="benchmark", metavar="NAME")
    for module_info in sorted(pkgutil.iter_modules(benchmarks.__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{benchmarks.__name__}.{module_info.name}")
        summary = (module.__doc__ or "").strip().splitlines()
        sub = subparsers_for.add_parser(module_info.name, help=summary[0] if summary else None)
        sub.add_argument("--quick", action="store_true", help="a short run, for smoke tests")
        sub.add_argument("--json", action="store_true", help="print only the JSON result")
        module.add_arguments(sub)
        sub.set_defaults(func=_runner(module))


def _runner(module):
    def run(args) -> int:
        result = module.run(args)
        if args.json:
            print(json.dumps(result, indent=2, sort_keys=True))
        else:
            print(format_table(result))
            print(json.dumps(result, sort_keys=True))
        return 0

    return run


def format_table(result: dict) -> str:
    """A readable two-column table of the flat numeric and text fields of a result."""
    rows = [(key, value) for key, value in sorted(result.items()) if not isinstance(value, (dict, list))]
    width = max((len(key) for key, _ in rows), default=0)
    lines = []
    for key, value in rows:
        shown = f"{value:,.3f}" if isinstance(value, float) else str(value)
        lines.append(f"{key.ljust(width)}  {shown}")
    return "\n".join(lines)
