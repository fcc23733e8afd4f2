"""GenerateFlowFile: creates FlowFiles on its schedule (a source)."""

from __future__ import annotations

import os

from ..processor import ProcessContext, Processor, PropertyDescriptor


class GenerateFlowFile(Processor):
    type_name = "GenerateFlowFile"
    description = "Creates FlowFiles of random or given content, with an optional sequence number."
    is_source = True
    properties = (
        PropertyDescriptor("batch_size", "integer", default=1, description="FlowFiles per run"),
        PropertyDescriptor("file_size", "size", default=0, description="bytes of content when no custom_text"),
        PropertyDescriptor("custom_text", "expression", description="content, may use attributes"),
        PropertyDescriptor("unique_flowfiles", "boolean", default=False,
                           description="new random content for each FlowFile (else one block reused)"),
        PropertyDescriptor("max_count", "integer", default=0,
                           description="stop after this many FlowFiles in total (0: never); kept in state"),
        PropertyDescriptor("sequence_attribute", "string",
                           description="attribute that gets a sequence number unique over restarts"),
    )
    relationships = ("success",)
    dynamic_properties = True  # each dynamic property becomes an attribute

    @classmethod
    def validate(cls, properties, dynamic):
        if properties["batch_size"] < 1:
            return [("batch_size", "must be at least 1")]
        if properties["max_count"] < 0:
            return [("max_count", "cannot be negative")]
        return []

    def on_scheduled(self, context: ProcessContext) -> None:
        self._block = os.urandom(context["file_size"])

    def on_trigger(self, context: ProcessContext, session) -> None:
        batch = context["batch_size"]
        max_count = context["max_count"]
        sequence_attribute = context.get("sequence_attribute")
        counted = bool(max_count or sequence_attribute)
        start = 0
        if counted:
            start = int(session.get_state().get("next", "0"))
            if max_count:
                batch = min(batch, max_count - start)
            if batch <= 0:
                context.yield_()
                return
        text = context.get("custom_text")
        unique = context["unique_flowfiles"]
        size = context["file_size"]
        for index in range(batch):
            flowfile = session.create()
            if sequence_attribute:
                flowfile = session.put_attribute(flowfile, sequence_attribute, str(start + index))
            if context.dynamic:
                flowfile = session.put_all_attributes(
                    flowfile, {name: expression.evaluate(flowfile) for name, expression in context.dynamic.items()})
            if text is not None:
                data = text.evaluate(flowfile).encode("utf-8")
            else:
                data = os.urandom(size) if unique else self._block
            if data:
                flowfile = session.write_bytes(flowfile, data)
            session.transfer(flowfile, "success")
        if counted:
            session.set_state({"next": str(start + batch)})
