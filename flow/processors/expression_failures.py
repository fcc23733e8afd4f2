"""What a processor does with a FlowFile whose expression fails on it.

An expression fails on one FlowFile (`${n:plus(1)}` with n=abc), not on the batch: that
FlowFile is set aside, with the error in its `expression.error` attribute (the property,
the expression and the reason), penalized as in NiFi (the queue holds it back for the
processor's penalty_duration), and the rest of the batch goes on. Where it goes:

- to the processor's `failure` relationship, when it has one (FetchFile, PutFile), or
  when its `expression_failure` property is `route_to_failure` (UpdateAttribute,
  RouteOnAttribute, GenerateFlowFile): the relationship then exists and, like any
  other, must be connected or auto-terminated;
- otherwise (`expression_failure: retry`, the default, so that flows written before
  the relationship existed load unchanged), back into the queue it came from, retried
  once its penalty is over, and found there by queue inspection with its
  `expression.error`. In a stateless flow, where nothing can wait, the trigger fails;
  a source (GenerateFlowFile) has no queue to keep it in, so its run fails, rolled
  back, and runs again after the processor's yield.

The processor logs one line per run that set FlowFiles aside, with the first error, at
most one a minute (`ProcessContext.limited_log`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import ExpressionError
from ..expression import Expression
from ..processor import ProcessContext, PropertyDescriptor

if TYPE_CHECKING:
    from ..session import ProcessSession

ERROR_ATTRIBUTE = "expression.error"
FAILURE = "failure"
ROUTE_TO_FAILURE = "route_to_failure"

EXPRESSION_FAILURE = PropertyDescriptor(
    "expression_failure",
    "choice",
    default="retry",
    choices=("retry", ROUTE_TO_FAILURE),
    description="a FlowFile whose expression fails: retry (back to its queue, penalized) or route_to_failure "
    "(to the failure relationship, penalized); either way with the error in expression.error",
)


def with_failure(relationships: tuple[str, ...], properties: Mapping) -> tuple[str, ...]:
    """`relationships`, with `failure` when `expression_failure` routes there."""
    if properties.get("expression_failure") == ROUTE_TO_FAILURE and FAILURE not in relationships:
        return tuple(relationships) + (FAILURE,)
    return tuple(relationships)


def routes_to_failure(context: ProcessContext) -> bool:
    return context.get("expression_failure") == ROUTE_TO_FAILURE


class PropertyFailed(Exception):
    """The expression of property `prop` failed with `error` (an `ExpressionError`)."""

    def __init__(self, prop: str, error: ExpressionError):
        super().__init__(f"property {prop!r}: {error}")
        self.prop = prop
        self.error = error


def evaluate_all(expressions: Mapping[str, Expression], flowfile) -> dict[str, str]:
    """Each property's expression evaluated for `flowfile`. Raises `PropertyFailed`."""
    values = {}
    for prop, expression in expressions.items():
        try:
            values[prop] = expression.evaluate(flowfile)
        except ExpressionError as error:
            raise PropertyFailed(prop, error) from None
    return values


class ExpressionFailures:
    """Sets aside, during one run, the FlowFiles whose expression failed (`set_aside`),
    then says so in one log line (`log`). `to_failure`: the processor routes them to its
    failure relationship; else they go back to their queue."""

    def __init__(self, processor_id: str, context: ProcessContext, session: ProcessSession, *, to_failure: bool):
        self._id = processor_id
        self._context = context
        self._session = session
        self._to_failure = to_failure
        self._count = 0
        self._first: str | None = None

    def set_aside(self, flowfile, prop: str, error: ExpressionError) -> None:
        """Route `flowfile`, on which the expression of property `prop` failed with `error`.
        Raises `error` in a stateless flow that has nowhere to keep it."""
        if not self._to_failure and self._context.stateless:
            raise error
        message = f"property {prop!r}: {error}"
        session = self._session
        flowfile = session.penalize(session.put_attribute(flowfile, ERROR_ATTRIBUTE, message))
        if self._to_failure:
            session.transfer(flowfile, FAILURE)
        else:
            session.transfer(flowfile)  # back to its queue, held back for the penalty
        self._count += 1
        if self._first is None:
            self._first = f"FlowFile {flowfile.id}: {message}"

    def log(self) -> None:
        if not self._count:
            return
        where = (
            "routed to failure"
            if self._to_failure
            else "left in their queue, retried after the penalty (expression_failure: route_to_failure routes them)"
        )
        self._context.limited_log.warning(
            f"{self._id}:expression",
            "%s: %d FlowFile(s) whose expression failed were penalized and %s; first: %s",
            self._id,
            self._count,
            where,
            self._first,
        )
