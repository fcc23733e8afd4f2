"""What stops a NiFi flow definition from becoming a Custody flow, or the other way:
each `Problem` names its place (a JSON path in the NiFi document, or the Custody
processor and property) and what is wrong; `NiFiFlowError` carries all of them at once,
so that one run lists every change a flow needs."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FlowError


@dataclass(frozen=True)
class Problem:
    path: str  # `flowContents.processors[2].properties."Keep Source File"`, or `processor 'put': property 'sync'`
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class NiFiFlowError(FlowError):
    """The document cannot be imported (or the flow exported): every problem found, in
    document order."""

    def __init__(self, source: str, problems: list[Problem]):
        self.source = source
        self.problems = list(problems)
        listing = "\n".join(f"  {problem}" for problem in self.problems)
        super().__init__(f"{source}: {len(self.problems)} problem(s):\n{listing}")


def json_path(*parts: str | int) -> str:
    """`flowContents.processors[2].properties."Keep Source File"` from its parts: an
    index in brackets, a plain name after a dot, any other name quoted."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part.isidentifier():
            text += f".{part}" if text else part
        else:
            quoted = part.replace("\\", "\\\\").replace('"', '\\"')
            text += f'."{quoted}"' if text else f'"{quoted}"'
    return text


def extend(path: str, *parts: str | int) -> str:
    """`path` (a JSON path already) with `parts` appended as `json_path` writes them."""
    suffix = json_path("_", *parts)[1:]
    return path + suffix
