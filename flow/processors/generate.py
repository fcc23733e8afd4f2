"""GenerateFlowFile: creates FlowFiles on its schedule (a source).

On a node of several workers every worker generates, as NiFi's concurrent tasks do:
worker I of N makes its share of `max_count` (they add up to it exactly) and numbers
its FlowFiles I, I+N, I+2N... (`flow.workers`).

With `max_count` or `sequence_attribute` the count so far is processor state, read
and written by each run; concurrent tasks of one processor would read the same count
and make the same numbers (and more than `max_count`), so a counted run holds the
processor's lock from reading the count to its session's commit, as NiFi's
TriggerSerially would have it. Uncounted runs go on at once, as many as its
`concurrent_tasks`.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

from ..processor import ProcessContext, Processor, PropertyDescriptor
from .expression_failures import (
    EXPRESSION_FAILURE,
    ExpressionFailures,
    PropertyFailed,
    evaluate_all,
    routes_to_failure,
    with_failure,
)

if TYPE_CHECKING:
    from ..session import ProcessSession


class GenerateFlowFile(Processor):
    type_name = "GenerateFlowFile"
    description = "Creates FlowFiles of random or given content, with an optional sequence number."
    is_source = True
    properties = (
        PropertyDescriptor("batch_size", "integer", default=1, description="FlowFiles per run"),
        PropertyDescriptor("file_size", "size", default=0, description="bytes of content when no custom_text"),
        PropertyDescriptor("custom_text", "expression", description="content, may use attributes"),
        PropertyDescriptor(
            "unique_flowfiles",
            "boolean",
            default=False,
            description="new random content for each FlowFile (else one block reused)",
        ),
        PropertyDescriptor(
            "max_count",
            "integer",
            default=0,
            description="stop after this many FlowFiles in total (0: never); kept in state",
        ),
        PropertyDescriptor(
            "sequence_attribute", "string", description="attribute that gets a sequence number unique over restarts"
        ),
        EXPRESSION_FAILURE,
    )
    relationships = ("success",)
    dynamic_properties = True  # each dynamic property becomes an attribute

    relationships_note = "and `failure` when `expression_failure` routes there"

    @classmethod
    def relationships_for(cls, properties, dynamic):
        return with_failure(cls.relationships, properties)

    @classmethod
    def validate(cls, properties, dynamic):
        if properties["batch_size"] < 1:
            return [("batch_size", "must be at least 1")]
        if properties["max_count"] < 0:
            return [("max_count", "cannot be negative")]
        return []

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._counting = threading.Lock()  # a counted run's, from reading the count to its commit

    def on_scheduled(self, context: ProcessContext) -> None:
        self._block = os.urandom(context["file_size"])

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        if not (context["max_count"] or context.get("sequence_attribute")):
            self._generate(context, session)
            return
        with self._counting:
            self._generate(context, session)
            if not session.is_closed and session.touched:
                session.commit()

    def _generate(self, context: ProcessContext, session: ProcessSession) -> None:
        batch = context["batch_size"]
        max_count = context["max_count"]
        sequence_attribute = context.get("sequence_attribute")
        counted = bool(max_count or sequence_attribute)
        # Each of a node's workers makes its share of max_count, and numbers its FlowFiles
        # so that the workers' numbers never meet (`flow.workers`).
        worker = context.worker
        start = 0
        if counted:
            start = int(session.get_state().get("next", "0"))
            if max_count:
                batch = min(batch, worker.share(max_count) - start)
            if batch <= 0:
                context.yield_()
                return
        text = context.get("custom_text")
        unique = context["unique_flowfiles"]
        size = context["file_size"]
        # Nothing waits behind a source: unless they are routed to failure, a failed
        # expression fails the run (rolled back, retried after the yield).
        to_failure = routes_to_failure(context)
        failures = ExpressionFailures(self.id, context, session, to_failure=to_failure)
        made, contents = [], []
        for index in range(batch):
            flowfile = session.create()
            if sequence_attribute:
                flowfile = session.put_attribute(flowfile, sequence_attribute, str(worker.sequence(start + index)))
            try:
                flowfile, data = self._fill(context, session, flowfile, text, unique, size)
            except PropertyFailed as failed:
                if not to_failure:
                    raise failed.error from None
                failures.set_aside(flowfile, failed.prop, failed.error)
                continue
            if data:
                made.append(flowfile)
                contents.append(data)
            else:
                session.transfer(flowfile, "success")
        # The contents of the batch, written side by side at once.
        for flowfile in session.write_bytes_many(made, contents):
            session.transfer(flowfile, "success")
        if counted:
            session.set_state({"next": str(start + batch)})
        failures.log()

    def _fill(self, context, session: ProcessSession, flowfile, text, unique: bool, size: int):
        """The FlowFile with its dynamic attributes, and its content. Raises `PropertyFailed`."""
        if context.dynamic:
            flowfile = session.put_all_attributes(flowfile, evaluate_all(context.dynamic, flowfile))
        if text is not None:
            return flowfile, evaluate_all({"custom_text": text}, flowfile)["custom_text"].encode("utf-8")
        return flowfile, os.urandom(size) if unique else self._block
