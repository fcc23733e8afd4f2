"""DuplicateFlowFile: sends each FlowFile to `success` with `number_of_copies` clones of it,
as NiFi's DuplicateFlowFile (made for load tests).

The clones share the original's content (no byte is copied) and attributes; each gets
`copy.index` 1, 2, ... and the original gets 0. `number_of_copies` is an expression,
evaluated for each FlowFile; its text, trimmed, must be an integer NiFi would read
(optional sign, decimal digits, within a Java int). A negative count makes no clone,
as in NiFi, where the loop then never runs.

Ours: a FlowFile gets at most `MAX_COPIES` clones (NiFi: up to 2^31-1), because one
run holds every clone it makes in memory until its commit; a constant count over
that, or negative, is refused when the flow is loaded. For the same reason a run
takes no further FlowFile once it has made `COPIES_PER_RUN` clones. A count that is
not such an integer, or an expression that fails, sets the FlowFile aside as
`expression_failure` says (`expression_failures`); NiFi rolls it back into its queue,
which is what the default, `retry`, does too.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import ExpressionError
from ..expression import Expression, ExpressionEvaluationError
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .expression_failures import EXPRESSION_FAILURE, ExpressionFailures, routes_to_failure, with_failure

if TYPE_CHECKING:
    from ..session import ProcessSession

COPY_INDEX = "copy.index"
MAX_COPIES = 10_000
COPIES_PER_RUN = 10_000
JAVA_INT_MAX = 2**31 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")
MAX_COUNT_TEXT = 64  # leading zeros allowed, as Java reads them; int() of a longer text is refused


class NotACount(ValueError):
    """A number of copies NiFi would not read, or over `MAX_COPIES`; the message says why."""


def copies(text: str) -> int:
    """How many clones a FlowFile gets for the count `text`. Raises `NotACount`."""
    trimmed = text.strip()
    valid = len(trimmed) <= MAX_COUNT_TEXT and _INTEGER.fullmatch(trimmed) is not None
    if not valid or not -JAVA_INT_MAX - 1 <= int(trimmed) <= JAVA_INT_MAX:
        shown = trimmed if len(trimmed) <= 40 else trimmed[:40] + "..."
        raise NotACount(f"expected an integer number of copies, got {shown!r}")
    count = max(0, int(trimmed))
    if count > MAX_COPIES:
        raise NotACount(f"{count:,} copies is over the limit of {MAX_COPIES:,} per FlowFile")
    return count


class DuplicateFlowFile(Processor):
    type_name = "DuplicateFlowFile"
    description = "Sends each FlowFile to success with a number of clones, each numbered in copy.index."
    properties = (
        PropertyDescriptor(
            "number_of_copies",
            "expression",
            required=True,
            default="100",
            description=f"clones of each FlowFile besides itself (an expression; at most {MAX_COPIES:,})",
        ),
        EXPRESSION_FAILURE,
    )
    relationships_note = "and `failure` when `expression_failure` routes there"

    @classmethod
    def relationships_for(cls, properties, dynamic):
        return with_failure(cls.relationships, properties)

    @classmethod
    def validate(cls, properties, dynamic):
        count = properties.get("number_of_copies")
        if isinstance(count, Expression) and count.is_literal:
            try:
                copies(count.text)
            except NotACount as error:
                return [("number_of_copies", str(error))]
            if count.text.strip().startswith("-"):
                return [("number_of_copies", f"cannot be negative, got {count.text.strip()!r}")]
        return []

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        count: Expression = context["number_of_copies"]
        failures = ExpressionFailures(self.id, context, session, to_failure=routes_to_failure(context))
        made = 0
        while made < COPIES_PER_RUN and (flowfile := session.get()) is not None:
            try:
                text = count.evaluate(flowfile)
                wanted = copies(text)
            except ExpressionError as error:
                failures.set_aside(flowfile, "number_of_copies", error)
                continue
            except NotACount as error:
                failures.set_aside(flowfile, "number_of_copies", ExpressionEvaluationError(count.text, str(error)))
                continue
            for index in range(1, wanted + 1):
                copy = session.clone(flowfile)
                session.transfer(session.put_attribute(copy, COPY_INDEX, str(index)), "success")
            session.transfer(session.put_attribute(flowfile, COPY_INDEX, "0"), "success")
            made += wanted
        failures.log()
