"""The CLI page: every `custody` command and subcommand with its arguments, read from
the argparse parser the command itself builds (`cluster.cli.build_parser`), and each
benchmark's options from the parser `custody bench NAME` builds when it runs one
(`cluster.commands.bench.benchmark_parser`).

argparse keeps its tree in private attributes (`_actions`, `_SubParsersAction`); its
own help formatter reads them the same way, and so does this page."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from . import markdown as md

TITLE = "Command line"
INTRO = (
    "Every `custody` command and subcommand, with its arguments, as `custody ... --help` prints them, and "
    "the options of each benchmark (`custody bench NAME --help`). `custody -v COMMAND` logs at DEBUG level; "
    "arguments it cannot parse exit with 2."
)
# Usage lines wrapped at a fixed width, not the terminal's, so the page is the same everywhere.
USAGE_WIDTH = 100


def walk(parser: argparse.ArgumentParser, help_text: str = "") -> Iterator[tuple[argparse.ArgumentParser, str]]:
    """(parser, the help its parent gave it) for `parser` and every subparser below it,
    depth first, in the order they were added."""
    yield parser, help_text
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            seen = set()
            for name, child in action.choices.items():
                if id(child) in seen:  # an alias names the same parser again
                    continue
                seen.add(id(child))
                yield from walk(child, helps.get(name, ""))


def usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def argument_name(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The argument as `--help` names it (`--role {read,admin}`, `-v, --verbose`, `PATH`)."""
    return argparse.HelpFormatter(parser.prog, width=USAGE_WIDTH)._format_action_invocation(action)


def argument_facts(action: argparse.Action) -> str:
    facts = []
    if action.option_strings and action.required:
        facts.append("required")
    if action.nargs in ("*", "+"):
        facts.append("one or more" if action.nargs == "+" else "any number")
    elif action.nargs == "?":
        facts.append("optional")
    if isinstance(action, argparse._AppendAction):
        facts.append("repeatable")
    if action.option_strings and action.nargs != 0 and action.default not in (None, [], "", argparse.SUPPRESS):
        facts.append(f"default {md.code(action.default)}")
    return "; ".join(facts)


def command_section(parser: argparse.ArgumentParser, help_text: str) -> list[str]:
    lines = [f"## {parser.prog}", ""]
    if help_text:
        lines += [md.text(help_text[0].upper() + help_text[1:]) + ("" if help_text.endswith(".") else "."), ""]
    if parser.description and parser.description != help_text:
        lines += [md.text(parser.description), ""]
    lines += ["```", usage(parser), "```", ""]
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                child = action.choices[choice.dest]
                rows.append((f"[{md.code(choice.dest)}](#{md.anchor(child.prog)})", md.text(choice.help or ""), ""))
            continue
        rows.append((md.code(argument_name(parser, action)), md.text(action.help or ""), argument_facts(action)))
    if rows:
        lines += md.table(("argument", "what it is", "notes"), rows) + [""]
    return lines


def benchmark_parsers() -> Iterator[tuple[argparse.ArgumentParser, str]]:
    """The parser of each benchmark, which `custody bench NAME` builds when it runs it."""
    import importlib

    from cluster.commands import bench

    for name, summary in bench.available().items():
        module = importlib.import_module(bench.module_name(name))
        yield bench.benchmark_parser(name, module), summary


def cli_page(parser: argparse.ArgumentParser | None = None) -> str:
    from_code = parser is None
    if from_code:
        from cluster.cli import build_parser

        parser = build_parser()
    body = []
    for child, help_text in walk(parser):
        body += command_section(child, help_text)
        if from_code and child.prog == "custody bench":
            for benchmark, summary in benchmark_parsers():
                body += command_section(benchmark, summary)
    return md.page(TITLE, INTRO, body)
