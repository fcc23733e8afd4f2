"""Read a /metrics answer as Prometheus does, and hold its names to Prometheus'
conventions (https://prometheus.io/docs/practices/naming/)."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
NOT_BASE_UNITS = (
    "_ms",
    "_milliseconds",
    "_microseconds",
    "_minutes",
    "_hours",
    "_kb",
    "_kilobytes",
    "_mb",
    "_megabytes",
    "_percent",
)


def families(text: str) -> dict:
    """name -> family (the parser strips a counter's `_total`)."""
    return {family.name: family for family in text_string_to_metric_families(text)}


def naming_problems(found: dict) -> list[str]:
    problems = []
    for name, family in found.items():
        if not METRIC_NAME.match(name) or not name.startswith("custody_"):
            problems.append(f"{name}: not a custody_ Prometheus name")
        if any(name.endswith(suffix) or f"{suffix}_" in name for suffix in NOT_BASE_UNITS):
            problems.append(f"{name}: not in base units")
        if family.type == "histogram" and not name.endswith(("_seconds", "_bytes")):
            problems.append(f"{name}: a histogram without its base unit (_seconds, _bytes)")
        for sample in family.samples:
            if family.type == "counter" and not sample.name.endswith(("_total", "_created")):
                problems.append(f"{sample.name}: a counter's sample must end in _total")
            problems += [
                f"{sample.name}: label {label!r} is not a valid name"
                for label in sample.labels
                if not LABEL_NAME.match(label) or label.startswith("__")
            ]
    return problems


def value(found: dict, name: str, suffix: str = "", **labels) -> float:
    """The one sample `name + suffix` whose labels include `labels`."""
    matching = [
        sample.value
        for sample in found[name].samples
        if sample.name == name + suffix and all(sample.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(matching) == 1, (name, suffix, labels, found[name].samples)
    return matching[0]
