"""`custody bench admin --pages N` loads a node with what N open status pages ask:
its list of the page's requests is the one the page's script polls."""

from __future__ import annotations

import re

from benchmarks.admin import PAGE_POLL
from cluster.admin.page import SCRIPT


def polled_paths(script: str) -> set[str]:
    """The `api("...")` paths of the script's poll() (up to the function's end)."""
    body = script[script.index("async function poll()") :]
    body = body[: body.index("\n}\n")]
    return {"/" + path for path in re.findall(r'api\("([^"]+)"\)', body)}


def test_the_benchmark_asks_what_a_standalone_page_polls():
    standalone = {path for path in polled_paths(SCRIPT) if not path.startswith("/api/v1/cluster")}
    assert standalone == set(PAGE_POLL)
