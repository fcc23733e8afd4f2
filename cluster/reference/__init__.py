"""The reference pages of the documentation, generated from the code so that they
cannot go stale: the processors and the record services (an index each, and a page
per type under `processors/` and `services/`), the command line
(from argparse), the REST API (from the admin API's OpenAPI document), the
metrics (from the admin API's Prometheus collectors), NODE.toml (from its schema),
a shard's ownership transitions (from the table `cluster.core.transitions` keeps) and
what NiFi's flow definitions map to (from the tables of `flow.nifi_flow`).

    python -m cluster.reference docs/reference     # write them; the pages are checked in

`tests/unit/test_docs_reference.py` regenerates them and fails when the checked-in
pages differ, and checks that every processor, command, path, series, NODE.toml key and
ownership transition has an entry.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from flow.nifi_flow.reference import render as nifi_import_text

from .cli import cli_page
from .markdown import GENERATED_NOTE
from .metrics import metrics_page
from .node_toml import node_toml_page
from .ownership import ownership_page
from .processors import processor_pages, processors_page
from .rest_api import rest_api_page
from .services import service_pages, services_page


def nifi_import_page() -> str:
    """The NiFi flow import's mapping, rendered from its tables (`flow.nifi_flow.reference`)."""
    return f"{GENERATED_NOTE}\n\n{nifi_import_text()}"


# File name -> the function that renders it, in the order of the site's navigation.
PAGES: dict[str, Callable[[], str]] = {
    "processors.md": processors_page,
    "services.md": services_page,
    "cli.md": cli_page,
    "rest-api.md": rest_api_page,
    "metrics.md": metrics_page,
    "node-toml.md": node_toml_page,
    "ownership-transitions.md": ownership_page,
    "nifi-import.md": nifi_import_page,
}
# Pages of their own, under a directory, for each processor and service type.
PAGE_SETS: tuple[Callable[[], dict[str, str]], ...] = (processor_pages, service_pages)
SUBDIRECTORIES = ("processors", "services")
REGENERATE = "python -m cluster.reference docs/reference"


def render_pages() -> dict[str, str]:
    """File name (relative to the reference directory) -> the Markdown text of every
    reference page."""
    pages = {name: render() for name, render in PAGES.items()}
    for render_set in PAGE_SETS:
        pages.update(render_set())
    return pages


def write_pages(directory: str) -> list[str]:
    """Write every page into `directory` (made if missing), and remove the pages of
    types that are gone; the names of those whose text changed or that were removed."""
    pages = render_pages()
    changed = []
    for name, text in pages.items():
        path = os.path.join(directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            with open(path, encoding="utf-8") as file:
                if file.read() == text:
                    continue
        except FileNotFoundError:
            pass
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        changed.append(name)
    for subdirectory in SUBDIRECTORIES:
        for entry in sorted(os.listdir(os.path.join(directory, subdirectory))):
            name = f"{subdirectory}/{entry}"
            if entry.endswith(".md") and name not in pages:
                os.remove(os.path.join(directory, name))
                changed.append(name)
    return changed
