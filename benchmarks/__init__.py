"""Reproducible benchmarks behind `custody bench NAME`.

Each module `benchmarks/<name>.py` defines `add_arguments(parser)` and `run(args) -> dict`.
`run` returns the JSON-ready result; `custody bench` prints it as JSON (`--json`) or
as a readable table, always with the anchor measured side by side in the same run.
"""
