"""The generated reference pages (`docs/reference/`, `python -m cluster.reference`):
what is checked in is what the code generates now, and every processor, command,
REST path, metric series, NODE.toml key and ownership transition has its entry there.

The completeness checks list what the code has without the generator's own loops
(the registry, argparse's tree, the OpenAPI document, the metric families named in
the admin API's source, NODE.toml's schema, the transition table) and look for each in
the page text, so a processor, command, path, series, key or transition added without
regenerating fails here even if the generator skipped it.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import re

import pytest

from cluster.core.transitions import ShardState
from cluster.reference import PAGES, REGENERATE, render_pages, write_pages

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE = os.path.join(REPO, "docs", "reference")


def checked_in(name: str) -> str:
    with open(os.path.join(REFERENCE, name), encoding="utf-8") as file:
        return file.read()


def sections(text: str, level: str) -> dict[str, str]:
    """Heading text -> the text under it, for the headings of one level (`##`, `###`)."""
    found: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        if line.startswith(level + " "):
            current = line[len(level) + 1 :].strip()
            found[current] = ""
        elif line.startswith("#") and len(line) - len(line.lstrip("#")) <= len(level):
            current = None
        elif current is not None:
            found[current] += line + "\n"
    return found


# --- the checked-in pages are the generated ones ----------------------------------------


def markdown_files(directory) -> list[str]:
    """Every page under `directory`, as a path relative to it."""
    found = []
    for root, _, files in os.walk(directory):
        found += [os.path.relpath(os.path.join(root, name), directory) for name in files if name.endswith(".md")]
    return sorted(found)


def test_the_checked_in_reference_is_what_the_code_generates(tmp_path):
    write_pages(str(tmp_path))
    generated = markdown_files(tmp_path)
    assert generated == sorted(render_pages()) and set(PAGES) <= set(generated)
    present = markdown_files(REFERENCE)
    assert present == generated, (
        f"docs/reference holds {present}, the generator writes {generated}: remove the "
        f"stale pages and run `{REGENERATE}`"
    )
    stale = [name for name in generated if (tmp_path / name).read_text(encoding="utf-8") != checked_in(name)]
    assert not stale, f"docs/reference/{', '.join(stale)} is stale: run `{REGENERATE}` and check the result in"


def test_generating_twice_gives_the_same_pages():
    assert render_pages() == render_pages()


def test_write_pages_says_which_pages_it_changed_and_removes_those_of_types_gone(tmp_path):
    assert sorted(write_pages(str(tmp_path))) == sorted(render_pages())
    (tmp_path / "cli.md").write_text("stale\n", encoding="utf-8")
    (tmp_path / "processors" / "Gone.md").write_text("a processor since removed\n", encoding="utf-8")
    assert write_pages(str(tmp_path)) == ["cli.md", "processors/Gone.md"]
    assert not (tmp_path / "processors" / "Gone.md").exists()
    assert write_pages(str(tmp_path)) == []


# --- processors ----------------------------------------------------------------------------


def page_of(name: str) -> str | None:
    """The checked-in text of docs/reference/`name`, None when there is none."""
    try:
        return checked_in(name)
    except FileNotFoundError:
        return None


def missing_processors(index: str, registry) -> list[str]:
    """Each type of `registry` without its page (or its line in the `index`), each
    property and relationship missing from its page, as `Type` or `Type.name`."""
    missing = []
    for type_name in sorted(registry):
        section = page_of(f"processors/{type_name}.md")
        if section is None or f"[{type_name}](processors/{type_name}.md)" not in index:
            missing.append(type_name)
            continue
        cls = registry[type_name]
        names = [descriptor.name for descriptor in cls.properties] + list(cls.relationships)
        missing += [f"{type_name}.{name}" for name in names if f"`{name}`" not in section]
    return missing


def test_every_registered_processor_has_its_properties_and_relationships_on_the_page():
    from flow.loading import standard_registry
    from flow.processors import STANDARD_PROCESSORS

    registry = standard_registry(entry_points=lambda **_: ())  # what custody ships
    assert {cls.type_name for cls in STANDARD_PROCESSORS} <= set(registry)
    missing = missing_processors(checked_in("processors.md"), registry)
    assert not missing, f"docs/reference/processors lacks {missing}: run `{REGENERATE}`"


def test_every_record_service_has_its_kind_and_properties_on_the_page():
    from flow.records.catalog import RECORD_SERVICE_TYPES

    index = checked_in("services.md")
    missing = []
    for type_name, cls in RECORD_SERVICE_TYPES.items():
        section = page_of(f"services/{type_name}.md")
        if section is None or f"[{type_name}](services/{type_name}.md)" not in index:
            missing.append(type_name)
            continue
        names = [descriptor.name for descriptor in cls.properties]
        missing += [f"{type_name}.{name}" for name in names if f"`{name}`" not in section]
        if f"**Kind:** {cls.kind}" not in section:
            missing.append(f"{type_name} (its kind)")
    assert not missing, f"docs/reference/services lacks {missing}: run `{REGENERATE}`"


def test_a_processor_added_without_regenerating_is_reported():
    from flow.loading import standard_registry
    from flow.processor import Processor, PropertyDescriptor
    from flow.registry import ProcessorRegistry

    class CountWords(Processor):
        type_name = "CountWords"
        properties = (PropertyDescriptor("separator"),)

    registry = ProcessorRegistry([*standard_registry(entry_points=lambda **_: ()).values(), CountWords])
    assert missing_processors(checked_in("processors.md"), registry) == ["CountWords"]


# --- the command line -----------------------------------------------------------------------


def every_command(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """prog -> parser, for the parser and every subparser under it."""
    found = {parser.prog: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found.update(every_command(child))
    return found


def missing_commands(page: str, commands: dict[str, argparse.ArgumentParser]) -> list[str]:
    found = sections(page, "##")
    missing = []
    for prog, parser in sorted(commands.items()):
        if prog not in found:
            missing.append(prog)
            continue
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
                continue
            if action.option_strings:
                names = action.option_strings
            elif action.metavar is None and action.choices is not None:
                names = list(action.choices)  # shown as {run,offload,...}
            else:
                names = [str(action.metavar or action.dest)]
            missing += [
                f"{prog} {name}" for name in names if name != "-h" and name != "--help" and name not in found[prog]
            ]
    return missing


def test_every_command_subcommand_and_argument_is_on_the_page():
    from cluster.cli import build_parser
    from cluster.commands import bench

    commands = every_command(build_parser())
    assert {"custody run", "custody node", "custody wal fsck", "custody cluster status"} <= set(commands)
    for name in bench.available():
        benchmark = bench.benchmark_parser(name, importlib.import_module(bench.module_name(name)))
        commands[benchmark.prog] = benchmark
    missing = missing_commands(checked_in("cli.md"), commands)
    assert not missing, f"docs/reference/cli.md lacks {missing}: run `{REGENERATE}`"


def test_a_command_added_without_regenerating_is_reported():
    from cluster.cli import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    subparsers.add_parser("compact").add_argument("--dry-run", action="store_true")
    commands = every_command(parser)
    assert missing_commands(checked_in("cli.md"), commands) == ["custody compact"]


# --- the REST API ----------------------------------------------------------------------------


def openapi() -> dict:
    from cluster.admin.app import create_app

    class NamedNode:
        name = "n1"

    return create_app(NamedNode()).openapi()


def missing_operations(page: str, spec: dict) -> list[str]:
    headings = set(sections(page, "###"))
    return [
        f"{method.upper()} {path}"
        for path, operations in spec["paths"].items()
        for method in operations
        if f"{method.upper()} {path}" not in headings
    ]


def test_every_openapi_path_and_model_is_on_the_page():
    spec = openapi()
    page = checked_in("rest-api.md")
    assert "/api/v1/node/offload" in spec["paths"]
    missing = missing_operations(page, spec)
    missing += [name for name in spec["components"]["schemas"] if f"### {name}\n" not in page]
    assert not missing, f"docs/reference/rest-api.md lacks {missing}: run `{REGENERATE}`"


def test_a_path_added_without_regenerating_is_reported():
    spec = openapi()
    spec["paths"]["/api/v1/node/compact"] = {"post": {"responses": {}}}
    assert missing_operations(checked_in("rest-api.md"), spec) == ["POST /api/v1/node/compact"]


# --- metrics -------------------------------------------------------------------------------------


def series_in_source() -> set[str]:
    """The name of every metric family the admin API builds, as exposed (counters with
    `_total`), read from the source: each `...MetricFamily("custody_...", ...)` call."""
    names = set()
    admin = os.path.join(REPO, "cluster", "admin")
    for file_name in sorted(os.listdir(admin)):
        if not file_name.endswith(".py"):
            continue
        with open(os.path.join(admin, file_name), encoding="utf-8") as file:
            tree = ast.parse(file.read())
        for node in ast.walk(tree):
            # A call, or a (Family, "name", ...) tuple of series the collectors loop over.
            parts = (
                [node.func, *node.args]
                if isinstance(node, ast.Call)
                else node.elts
                if isinstance(node, ast.Tuple)
                else []
            )
            if len(parts) < 2 or not isinstance(parts[1], ast.Constant) or not isinstance(parts[1].value, str):
                continue
            family = parts[0].id if isinstance(parts[0], ast.Name) else ""
            if family.endswith("MetricFamily") and parts[1].value.startswith("custody_"):
                names.add(parts[1].value + ("_total" if family == "CounterMetricFamily" else ""))
    return names


def test_every_metric_series_is_on_the_page():
    names = series_in_source()
    assert len(names) >= 20 and "custody_commits_total" in names and "custody_queue_flowfiles" in names
    listed = set(re.findall(r"^\| `(custody_\w+)` \|", checked_in("metrics.md"), re.MULTILINE))
    assert names <= listed, f"docs/reference/metrics.md lacks {sorted(names - listed)}: run `{REGENERATE}`"


# --- NODE.toml -----------------------------------------------------------------------------------


def missing_node_toml_keys(page: str, schema) -> list[str]:
    """Each section of `schema` without its heading, each key without its row there, as
    `[section]` or `[section] key`."""
    found = sections(page, "##")
    missing = []
    for section in schema.sections:
        heading = f"[{section.name}]" if section.name else "The top level"
        if heading not in found:
            missing.append(heading)
            continue
        missing += [f"{heading} {key.name}" for key in section.keys if f"| `{key.name}` |" not in found[heading]]
    return missing


def test_every_node_toml_key_is_on_the_page_with_its_default():
    from cluster.node.config_schema import NODE_TOML

    page = checked_in("node-toml.md")
    assert len(list(NODE_TOML.keys())) >= 40
    missing = missing_node_toml_keys(page, NODE_TOML)
    assert not missing, f"docs/reference/node-toml.md lacks {missing}: run `{REGENERATE}`"
    assert "| `rollover_age` | number, at least 0.1 | `10.0` | seconds |" in page


def test_a_node_toml_key_added_without_regenerating_is_reported():
    from cluster.node.config_schema import NODE_TOML
    from cluster.node.toml_schema import Flag, Key, Schema, Section

    node = next(section for section in NODE_TOML.sections if section.name == "node")
    grown = Section(node.name, (*node.keys, Key("drain_first", Flag(), "drain before leaving", default=False)))
    schema = Schema(tuple(grown if section is node else section for section in NODE_TOML.sections))
    assert missing_node_toml_keys(checked_in("node-toml.md"), schema) == ["[node] drain_first"]


# --- ownership transitions --------------------------------------------------------------------


def missing_transitions(page: str, transitions) -> list[str]:
    """Each state without its row under States, each transition without its row (from,
    to, the `ownership` function), as `state` or `from -> to`."""
    states = sections(page, "##").get("States", "")
    missing = [state.value for state in ShardState if f"| `{state.value}` |" not in states]
    rows = set(re.findall(r"^\| (.+?) \| (\w+) \| `ownership\.(\w+)` \|", page, re.MULTILINE))
    for row in transitions:
        before = row.before.value if row.before is not None else "(no record)"
        if (before, row.after.value, row.action) not in rows:
            missing.append(f"{before} -> {row.after.value}")
    return missing


def test_every_state_and_ownership_transition_is_on_the_page():
    from cluster.core.transitions import TRANSITIONS

    page = checked_in("ownership-transitions.md")
    assert len(TRANSITIONS) >= 18 and "| held | held | `ownership.hold` |" in page
    missing = missing_transitions(page, TRANSITIONS)
    assert not missing, f"docs/reference/ownership-transitions.md lacks {missing}: run `{REGENERATE}`"


def test_an_ownership_transition_added_without_regenerating_is_reported():
    from cluster.core.transitions import TRANSITIONS, EpochRule, OwnerRule, Transition

    shortcut = Transition(ShardState.HELD, ShardState.RETIRED, "retire", EpochRule.KEEPS, OwnerRule.KEEPS, "x")
    assert missing_transitions(checked_in("ownership-transitions.md"), (*TRANSITIONS, shortcut)) == ["held -> retired"]


@pytest.mark.parametrize("name", sorted(PAGES))
def test_each_page_says_it_is_generated_and_how(name):
    assert checked_in(name).startswith(f"<!-- Generated by `{REGENERATE}`")


def test_text_from_the_code_cannot_break_a_table_or_hide_as_html():
    import markdown

    from cluster.reference import markdown as md

    cell = md.text("send `Bearer <token>` or `a|b`, as <this> | or * twice *")
    html = markdown.markdown("\n".join(md.table(("x", "y"), [(md.code("p|q"), cell)])), extensions=["tables"])
    assert html.count("<td>") == 2
    assert "<code>p|q</code>" in html and "<code>Bearer &lt;token&gt;</code>" in html and "<code>a|b</code>" in html
    assert "as &lt;this&gt; | or * twice *" in html
