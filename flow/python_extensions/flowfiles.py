"""What a NiFi Python processor sees of a Custody FlowFile: NiFi's `InputFlowFile`
(`getContentsAsBytes`, `getContentsAsReader`, `getSize`, `getAttribute`,
`getAttributes`) and the attribute map a RecordTransform is given."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..flowfile import FlowFile
    from ..session import ProcessSession


def _attributes(flowfile: FlowFile) -> dict[str, str]:
    attributes = dict(flowfile.attributes)
    attributes.setdefault("uuid", flowfile.id)
    return attributes


class AttributeMap:
    """`getAttribute(name)` and `getAttributes()` of one FlowFile; `custody_flowfile` is
    what Custody's expressions are evaluated on."""

    __slots__ = ("custody_flowfile",)

    def __init__(self, flowfile: FlowFile):
        self.custody_flowfile = flowfile

    def getAttribute(self, name: str) -> str | None:
        if name == "uuid":
            return self.custody_flowfile.id
        return self.custody_flowfile.attributes.get(name)

    def getAttributes(self) -> dict[str, str]:
        return _attributes(self.custody_flowfile)


class InputFlowFile(AttributeMap):
    """A FlowFile given to `transform`; its content is read from the session when asked."""

    __slots__ = ("_session",)

    def __init__(self, session: ProcessSession, flowfile: FlowFile):
        super().__init__(flowfile)
        self._session = session

    def getContentsAsBytes(self) -> bytes:
        return self._session.read_bytes(self.custody_flowfile)

    def getContentsAsReader(self) -> io.TextIOBase:
        """The content as text, line by line (NiFi gives a Java BufferedReader)."""
        return io.TextIOWrapper(io.BufferedReader(self._session.read(self.custody_flowfile)), encoding="utf-8")

    def getSize(self) -> int:
        return self.custody_flowfile.size

    def __repr__(self) -> str:
        return f"InputFlowFile({self.custody_flowfile.id})"
