"""ExecuteStateless: runs a stateless sub-flow inside a traditional flow, as NiFi's
stateless execution design embeds one.

For each incoming FlowFile (or once per run when it has no input) the sub-flow is
triggered as one transaction. Its outputs become FlowFiles on `output`; the input goes
to `original`. The sub-flow's processor states (`stateless_format`) are committed in
this processor's session, with those FlowFiles. The sub-flow's held `on_success`
callbacks run only after this processor's own session is durable, and its held
`on_failure` callbacks when that commit fails (its sources then offer their data
again). When the sub-flow itself fails, its input goes to `failure` (penalized), and
so does an input whose content cannot be read, with `content.error`
(`content_failures`), before the sub-flow is triggered.

The sub-flow comes from `context.load_stateless_flow`: the engine running this
processor knows how to parse it (against the same processor types) and run it. Its
triggers run one at a time, each to the end of this processor's commit.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..errors import UnreadableContent
from ..processor import ProcessContext, Processor, PropertyDescriptor
from . import stateless_format
from .content_failures import ContentFailures

if TYPE_CHECKING:
    from ..session import ProcessSession


class ExecuteStateless(Processor):
    type_name = "ExecuteStateless"
    description = "Runs a flow definition with the stateless engine, as one transaction per trigger."
    is_source = True  # it may also run without input (its sub-flow has sources)
    properties = (
        PropertyDescriptor("flow", "string", required=True, description="path of the sub-flow definition"),
        PropertyDescriptor("input_port", "string"),
    )
    relationships = ("output", "original", "failure")

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self._flow = None
        self._restored = False  # the sub-flow started from the committed state
        self._lock = threading.Lock()  # one sub-flow trigger at a time, through this processor's commit

    def on_scheduled(self, context: ProcessContext) -> None:
        self._flow = context.load_stateless_flow(context["flow"])
        self._restored = False

    def on_stopped(self, context: ProcessContext) -> None:
        if self._flow is not None:
            self._flow.close()

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        with self._lock:
            self._trigger(context, session)

    def _trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        original = session.get() if context.has_incoming else None
        if context.has_incoming and original is None:
            return
        flow = self._flow
        if not self._restored:
            flow.restore_states(stateless_format.unpack(session.get_state(), self.id))
            self._restored = True
        inputs = []
        if original is not None:
            try:
                inputs = [(dict(original.attributes), session.read_bytes(original))]
            except UnreadableContent as error:
                unreadable = ContentFailures(self.id, context, session)
                unreadable.set_aside(original, error)
                session.commit()
                unreadable.log()
                return
        result = flow.trigger(inputs, input_port=context.get("input_port"))
        if not result.success:
            context.logger.warning("%s: stateless flow failed: %s", self.id, result.failure)
            if original is None:
                context.yield_()
                session.rollback()
                return
            failed = session.put_attribute(original, "stateless.failure", result.failure or "")
            session.transfer(session.penalize(failed), "failure")
            session.commit()
            return
        try:
            for port, attributes, data in result.outputs:
                child = (
                    session.create(original, attributes)
                    if original is not None
                    else session.create(attributes=attributes)
                )
                child = session.put_attribute(child, "stateless.output.port", port)
                if data:
                    child = session.write_bytes(child, data)
                session.transfer(child, "output")
            if original is not None:
                session.transfer(original, "original")
            if result.states != flow.states:
                session.set_state(stateless_format.pack(result.states))
        except BaseException as error:
            result.fail(error)
            raise
        if not session.touched:
            result.acknowledge()
            session.rollback()
            return
        failures: list[BaseException] = []

        def failed(error: BaseException) -> None:
            result.fail(error)
            failures.append(error)

        session.commit_async(result.acknowledge, failed)
        if failures:
            raise failures[0]
