"""UpdateAttribute, RouteOnAttribute and LogAttribute: decisions on attributes alone."""

from __future__ import annotations

import logging

from ..processor import ProcessContext, Processor, PropertyDescriptor

BATCH = 1000


class UpdateAttribute(Processor):
    type_name = "UpdateAttribute"
    description = "Sets each dynamic property as an attribute (expressions allowed); deletes by regex."
    properties = (PropertyDescriptor("delete_attributes", "regex", description="attributes to delete"),)
    dynamic_properties = True

    def on_trigger(self, context: ProcessContext, session) -> None:
        updates = context.dynamic
        delete = context.get("delete_attributes")
        for flowfile in session.get_batch(BATCH):
            if updates:
                flowfile = session.put_all_attributes(
                    flowfile, {name: expression.evaluate(flowfile) for name, expression in updates.items()})
            if delete is not None:
                for key in [k for k in flowfile.attributes if delete.fullmatch(k)]:
                    flowfile = session.remove_attribute(flowfile, key)
            session.transfer(flowfile, "success")


class RouteOnAttribute(Processor):
    type_name = "RouteOnAttribute"
    description = "Routes by boolean expressions: one relationship per dynamic property, or matched/unmatched."
    properties = (PropertyDescriptor("routing_strategy", "choice", default="route_to_property_name",
                                     choices=("route_to_property_name", "route_to_matched_if_all_match",
                                              "route_to_matched_if_any_matches")),)
    dynamic_properties = True
    relationships = ("unmatched",)

    @classmethod
    def relationships_for(cls, properties, dynamic):
        if properties.get("routing_strategy", "route_to_property_name") == "route_to_property_name":
            return tuple(dynamic) + ("unmatched",)
        return ("matched", "unmatched")

    @classmethod
    def validate(cls, properties, dynamic):
        if not dynamic:
            return [("routing_strategy", "RouteOnAttribute needs at least one dynamic property (a route)")]
        return []

    def on_trigger(self, context: ProcessContext, session) -> None:
        routes = context.dynamic
        strategy = context["routing_strategy"]
        for flowfile in session.get_batch(BATCH):
            matched = [name for name, expression in routes.items() if expression.evaluate_boolean(flowfile)]
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


class LogAttribute(Processor):
    type_name = "LogAttribute"
    description = "Logs each FlowFile's attributes (and optionally its content)."
    properties = (
        PropertyDescriptor("log_level", "choice", default="info", choices=("debug", "info", "warning")),
        PropertyDescriptor("log_payload", "boolean", default=False),
        PropertyDescriptor("attributes_to_log", "regex", description="only attributes whose name matches"),
    )

    def on_trigger(self, context: ProcessContext, session) -> None:
        level = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}[context["log_level"]]
        wanted = context.get("attributes_to_log")
        logger = context.logger
        for flowfile in session.get_batch(BATCH):
            if logger.isEnabledFor(level):
                shown = {k: v for k, v in sorted(flowfile.attributes.items()) if wanted is None or wanted.fullmatch(k)}
                message = f"FlowFile {flowfile.id} ({flowfile.size} bytes) {shown}"
                if context["log_payload"]:
                    message += f" payload={session.read_bytes(flowfile)[:4096]!r}"
                logger.log(level, message)
            session.transfer(flowfile, "success")
