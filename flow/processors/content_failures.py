"""What a processor does with a FlowFile whose content cannot be read.

`ProcessSession.read` raises `UnreadableContent` when a FlowFile's claim is damaged, cut
short or gone, or so are the checksums that would vouch for it: a flipped bit on the
only copy, a truncated or deleted content file, a flipped or deleted `.crc` file. No
retry mends that, and a processor that let it roll back its session would meet the
same FlowFile at the head of its queue on every run. So, as NiFi's processors do with
a FlowFile they cannot process, it is penalized and routed to `failure` with the reason
in `content.error`, and the rest of the batch goes on. The FlowFile keeps its claim:
nothing is dropped, and once the file is restored it can be routed back.

Storage that cannot be reached (`ContentUnavailable`) is not the FlowFile's fault: the
session raises the repository's own error, rolls back, and the run is retried.

Every processor that reads content routes such FlowFiles to `failure`: PutFile,
MergeContent, SplitText, ReplaceText, ExecuteStateless, ExecuteSparkSQL,
SparkTransform and PutParquet. LogAttribute has no `failure` relationship and only
shows the head of the content: it logs that the content cannot be read and passes the
FlowFile on unchanged. A processor that does not catch `UnreadableContent` is still
covered by the engine, which penalizes the FlowFile it names at once
(`flow.rollbacks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import UnreadableContent
from ..processor import ProcessContext

if TYPE_CHECKING:
    from ..session import ProcessSession

ERROR_ATTRIBUTE = "content.error"
FAILURE = "failure"


class ContentFailures:
    """Sets aside, during one run, the FlowFiles whose content cannot be read
    (`set_aside`: penalized, `content.error`, to `failure`), then says so (`log`) in
    one line per run, at most one a minute for the processor (`ProcessContext.limited_log`)."""

    def __init__(self, processor_id: str, context: ProcessContext, session: ProcessSession):
        self._id = processor_id
        self._context = context
        self._session = session
        self.count = 0
        self._first: str | None = None

    def set_aside(self, flowfile, error: UnreadableContent) -> None:
        """Route `flowfile` (the latest version this session holds of `error.flowfile`)."""
        session = self._session
        flowfile = session.penalize(session.put_attribute(flowfile, ERROR_ATTRIBUTE, error.reason))
        session.transfer(flowfile, FAILURE)
        self.count += 1
        if self._first is None:
            self._first = f"FlowFile {flowfile.id}: {error.reason}"

    def log(self) -> None:
        if not self.count:
            return
        self._context.limited_log.error(
            f"{self._id}:unreadable-content",
            "%s: %d FlowFile(s) whose content cannot be read were penalized and routed to failure, the reason in "
            "%s; first: %s. Their content is damaged or gone on this node: `custody content fsck` names the bad "
            "files; restore them and route the FlowFiles back, or drop them",
            self._id,
            self.count,
            ERROR_ATTRIBUTE,
            self._first,
        )
