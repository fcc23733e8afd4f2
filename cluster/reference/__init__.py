"""The reference pages of the documentation, generated from the code so that they
cannot go stale: the processors (from the processor registry), the record services (from their
catalog), the command line
(from argparse), the REST API (from the admin API's OpenAPI document), the
metrics (from the admin API's Prometheus collectors), NODE.toml (from its schema) and
a shard's ownership transitions (from the table `cluster.core.transitions` keeps).

    python -m cluster.reference docs/reference     # write them; the pages are checked in

`tests/unit/test_docs_reference.py` regenerates them and fails when the checked-in
pages differ, and checks that every processor, command, path, series, NODE.toml key and
ownership transition has an entry.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .cli import cli_page
from .metrics import metrics_page
from .node_toml import node_toml_page
from .ownership import ownership_page
from .processors import processors_page
from .rest_api import rest_api_page
from .services import services_page

# File name -> the function that renders it, in the order of the site's navigation.
PAGES: dict[str, Callable[[], str]] = {
    "processors.md": processors_page,
    "services.md": services_page,
    "cli.md": cli_page,
    "rest-api.md": rest_api_page,
    "metrics.md": metrics_page,
    "node-toml.md": node_toml_page,
    "ownership-transitions.md": ownership_page,
}
REGENERATE = "python -m cluster.reference docs/reference"


def render_pages() -> dict[str, str]:
    """File name -> the Markdown text of every reference page."""
    return {name: render() for name, render in PAGES.items()}


def write_pages(directory: str) -> list[str]:
    """Write every page into `directory` (made if missing); the names of those whose
    text changed."""
    os.makedirs(directory, exist_ok=True)
    changed = []
    for name, text in render_pages().items():
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8") as file:
                if file.read() == text:
                    continue
        except FileNotFoundError:
            pass
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        changed.append(name)
    return changed
