"""The limits on a flow document, as `flow.definition` documents them, and the check of
a document's running count of values and characters against them."""

from __future__ import annotations

MAX_DOCUMENT_BYTES = 1 << 20
MAX_NESTING = 32
MAX_VALUES = 200_000
MAX_EXPANDED_CHARS = 2 << 20
MAX_PROPERTY_CHARS = 64 << 10
# Beyond what any count or size in a flow needs; keeps numbers printable and arithmetic cheap.
_MAX_INTEGER = 1 << 63


def _beyond_limits(values: int, chars: int) -> str | None:
    if values > MAX_VALUES:
        return f"holds more than {MAX_VALUES} values, the most a flow may hold"
    if chars > MAX_EXPANDED_CHARS:
        return f"holds more than {MAX_EXPANDED_CHARS} characters of text, the most a flow may hold"
    return None
