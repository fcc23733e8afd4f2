"""LogMessage: logs a message made of each FlowFile's attributes, then passes the FlowFile
on to `success` unchanged, as NiFi's LogMessage.

`log_level`, `log_prefix` and `log_message` are expressions, evaluated for each
FlowFile. The level, lower-cased, is one of trace, debug, info, warn and error (trace
is Python's level 5, below debug); the prefix and the message are evaluated only when
the processor's logger (`flow.processor.<id>`, LogAttribute's) logs at that level, and
the line is the prefix (left out when blank) followed by the message.

Ours: a constant level that is none of the five is refused when the flow is loaded
(NiFi fails each FlowFile at run time); an unset message logs as "" (NiFi writes
"null"). A level that an expression makes wrong, or an expression that fails, sets the
FlowFile aside as `expression_failure` says (`expression_failures`): NiFi rolls it
back into its queue, which is what the default, `retry`, does too.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..errors import ExpressionError
from ..expression import Expression, ExpressionEvaluationError
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .expression_failures import (
    EXPRESSION_FAILURE,
    ExpressionFailures,
    PropertyFailed,
    routes_to_failure,
    with_failure,
)

if TYPE_CHECKING:
    from ..session import ProcessSession

TRACE = logging.DEBUG - 5  # as the Python API's NiFi logger (`flow.python_api.nifiapi.logging`)
LEVELS = {"trace": TRACE, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}
BATCH = 1000


def log_level(text: str) -> int | None:
    """The Python logging level NiFi's level `text` names (any case), None if none."""
    return LEVELS.get(text.lower())


def log_line(prefix: str | None, message: str | None) -> str:
    """The line logged: `prefix` (unless blank) then `message`."""
    message = message or ""
    return message if prefix is None or not prefix.strip() else prefix + message


class LogMessage(Processor):
    type_name = "LogMessage"
    description = "Logs a message (an expression) for each FlowFile at a level (an expression)."
    properties = (
        PropertyDescriptor(
            "log_level", "expression", required=True, default="info", description=f"one of {', '.join(LEVELS)}"
        ),
        PropertyDescriptor("log_prefix", "expression", description="put before the message (when not blank)"),
        PropertyDescriptor("log_message", "expression", description="the message"),
        EXPRESSION_FAILURE,
    )
    relationships_note = "and `failure` when `expression_failure` routes there"

    @classmethod
    def relationships_for(cls, properties, dynamic):
        return with_failure(cls.relationships, properties)

    @classmethod
    def validate(cls, properties, dynamic):
        level = properties.get("log_level")
        if isinstance(level, Expression) and level.is_literal and log_level(level.text) is None:
            return [("log_level", f"expected one of {', '.join(LEVELS)}, got {level.text!r}")]
        return []

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        logger = context.logger
        level_expression: Expression = context["log_level"]
        prefix: Expression | None = context.get("log_prefix")
        message: Expression | None = context.get("log_message")
        failures = ExpressionFailures(self.id, context, session, to_failure=routes_to_failure(context))
        for flowfile in session.get_batch(BATCH):
            try:
                level = _level(level_expression, flowfile)
                if logger.isEnabledFor(level):
                    head = _evaluate("log_prefix", prefix, flowfile)
                    logger.log(level, "%s", log_line(head, _evaluate("log_message", message, flowfile)))
            except PropertyFailed as failed:
                failures.set_aside(flowfile, failed.prop, failed.error)
                continue
            session.transfer(flowfile, "success")
        failures.log()


def _level(expression: Expression, flowfile) -> int:
    text = _evaluate("log_level", expression, flowfile) or ""
    level = log_level(text)
    if level is None:
        reason = f"{text!r} is not a log level (one of {', '.join(LEVELS)})"
        raise PropertyFailed("log_level", ExpressionEvaluationError(expression.text, reason))
    return level


def _evaluate(prop: str, expression: Expression | None, flowfile) -> str | None:
    if expression is None:
        return None
    try:
        return expression.evaluate(flowfile)
    except ExpressionError as error:
        raise PropertyFailed(prop, error) from None
