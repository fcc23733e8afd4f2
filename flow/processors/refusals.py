"""What a sink does with a FlowFile it cannot deliver for a reason of the FlowFile's own.

A path that leaves PutFile's allowed root, a record Kafka refuses as too large: no
retry changes that, and a processor that rolled back would meet the same FlowFile at
the head of its queue on every run. So, as NiFi's processors route what they cannot
process, it is penalized and routed to `failure` with the reason in an attribute the
processor names (`path.refused`, `kafka.error`), and the rest of the batch goes on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..processor import ProcessContext

if TYPE_CHECKING:
    from ..session import ProcessSession


class Refusals:
    """The FlowFiles of one run refused for a reason of their own: each to failure,
    penalized, the reason in `attribute`; one log line for the run, at most one a
    minute (`ProcessContext.limited_log`)."""

    def __init__(self, processor_id: str, context: ProcessContext, session: ProcessSession, attribute: str):
        self._id, self._context, self._session = processor_id, context, session
        self._attribute = attribute
        self._count = 0
        self._first: str | None = None

    def refuse(self, flowfile, reason: str) -> None:
        session = self._session
        session.transfer(session.penalize(session.put_attribute(flowfile, self._attribute, reason)), "failure")
        self._count += 1
        self._first = self._first or f"FlowFile {flowfile.id}: {reason}"

    def log(self) -> None:
        if self._count:
            self._context.limited_log.warning(
                f"{self._id}:refused",
                "%s: %d FlowFile(s) refused, penalized and routed to failure, the reason in %s; first: %s",
                self._id,
                self._count,
                self._attribute,
                self._first,
            )
