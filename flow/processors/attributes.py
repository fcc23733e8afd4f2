"""UpdateAttribute, RouteOnAttribute and LogAttribute: decisions on attributes alone."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..errors import UnreadableContent
from ..expression import is_true
from ..processor import ProcessContext, Processor, PropertyDescriptor
from .expression_failures import (
    EXPRESSION_FAILURE,
    FAILURE,
    ROUTE_TO_FAILURE,
    ExpressionFailures,
    PropertyFailed,
    evaluate_all,
    routes_to_failure,
    with_failure,
)

if TYPE_CHECKING:
    from ..session import ProcessSession

BATCH = 1000
PAYLOAD_SHOWN = 4096  # bytes of content LogAttribute logs (and reads)


class UpdateAttribute(Processor):
    type_name = "UpdateAttribute"
    description = "Sets each dynamic property as an attribute (expressions allowed); deletes by regex."
    properties = (
        PropertyDescriptor("delete_attributes", "regex", description="attributes to delete"),
        EXPRESSION_FAILURE,
    )
    dynamic_properties = True

    relationships_note = "and `failure` when `expression_failure` routes there"

    @classmethod
    def relationships_for(cls, properties, dynamic):
        return with_failure(cls.relationships, properties)

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        updates = context.dynamic
        delete = context.get("delete_attributes")
        failures = ExpressionFailures(self.id, context, session, to_failure=routes_to_failure(context))
        for flowfile in session.get_batch(BATCH):
            if updates:
                try:
                    values = evaluate_all(updates, flowfile)
                except PropertyFailed as failed:
                    failures.set_aside(flowfile, failed.prop, failed.error)
                    continue
                flowfile = session.put_all_attributes(flowfile, values)
            if delete is not None:
                for key in [k for k in flowfile.attributes if delete.fullmatch(k)]:
                    flowfile = session.remove_attribute(flowfile, key)
            session.transfer(flowfile, "success")
        failures.log()


class RouteOnAttribute(Processor):
    type_name = "RouteOnAttribute"
    description = "Routes by boolean expressions: one relationship per dynamic property, or matched/unmatched."
    properties = (
        PropertyDescriptor(
            "routing_strategy",
            "choice",
            default="route_to_property_name",
            choices=("route_to_property_name", "route_to_matched_if_all_match", "route_to_matched_if_any_matches"),
        ),
        EXPRESSION_FAILURE,
    )
    dynamic_properties = True
    relationships = ("unmatched",)
    relationships_note = (
        "with `route_to_property_name`, one per dynamic property; else `matched`; and `failure` when "
        "`expression_failure` routes there"
    )

    @classmethod
    def relationships_for(cls, properties, dynamic):
        if properties.get("routing_strategy", "route_to_property_name") == "route_to_property_name":
            return with_failure(tuple(dynamic) + ("unmatched",), properties)
        return with_failure(("matched", "unmatched"), properties)

    @classmethod
    def validate(cls, properties, dynamic):
        if not dynamic:
            return [("routing_strategy", "RouteOnAttribute needs at least one dynamic property (a route)")]
        if (
            FAILURE in dynamic
            and properties.get("expression_failure") == ROUTE_TO_FAILURE
            and properties.get("routing_strategy") == "route_to_property_name"
        ):
            return [
                (
                    FAILURE,
                    "a route cannot be called failure when expression_failure is route_to_failure (rename the route)",
                )
            ]
        return []

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        routes = context.dynamic
        strategy = context["routing_strategy"]
        failures = ExpressionFailures(self.id, context, session, to_failure=routes_to_failure(context))
        for flowfile in session.get_batch(BATCH):
            try:
                values = evaluate_all(routes, flowfile)
            except PropertyFailed as failed:
                failures.set_aside(flowfile, failed.prop, failed.error)
                continue
            matched = [name for name, value in values.items() if is_true(value)]
            if strategy == "route_to_property_name":
                targets = matched or ["unmatched"]
            elif strategy == "route_to_matched_if_all_match":
                targets = ["matched" if len(matched) == len(routes) else "unmatched"]
            else:
                targets = ["matched" if matched else "unmatched"]
            for extra in targets[1:]:
                copy = session.clone(flowfile)
                session.route(copy, extra)
                session.transfer(copy, extra)
            session.route(flowfile, targets[0])
            session.transfer(flowfile, targets[0])
        failures.log()


class LogAttribute(Processor):
    """Passes every FlowFile on to `success`, unchanged. It has no `failure` (as NiFi's
    LogAttribute has none; adding one would make every flow that uses it invalid until
    the relationship is connected): content it cannot read is logged as such, and left
    to whoever reads it next, which routes the FlowFile to its failure."""

    type_name = "LogAttribute"
    description = "Logs each FlowFile's attributes (and optionally its content)."
    properties = (
        PropertyDescriptor("log_level", "choice", default="info", choices=("debug", "info", "warning")),
        PropertyDescriptor("log_payload", "boolean", default=False),
        PropertyDescriptor("attributes_to_log", "regex", description="only attributes whose name matches"),
    )

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        level = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}[context["log_level"]]
        wanted = context.get("attributes_to_log")
        logger = context.logger
        for flowfile in session.get_batch(BATCH):
            if logger.isEnabledFor(level):
                shown = {k: v for k, v in sorted(flowfile.attributes.items()) if wanted is None or wanted.fullmatch(k)}
                message = f"FlowFile {flowfile.id} ({flowfile.size} bytes) {shown}"
                if context["log_payload"]:
                    try:
                        message += f" payload={_head(session, flowfile)!r}"
                    except UnreadableContent as error:
                        message += f" payload unreadable ({error.reason})"
                logger.log(level, message)
            session.transfer(flowfile, "success")


def _head(session: ProcessSession, flowfile) -> bytes:
    """The first `PAYLOAD_SHOWN` bytes of the content, reading no further."""
    with session.read(flowfile) as source:
        head = b""
        while len(head) < PAYLOAD_SHOWN and (chunk := source.read(PAYLOAD_SHOWN - len(head))):
            head += chunk
        return head
