"""Where an imported file processor may reach. NiFi lets a FlowFile's attributes steer
PutFile's directory, and FetchFile's deletes and moves, to any path; Custody refuses
such a processor unless it names an `allowed_root` (or says `allow_any_path`). The
import sets the root where the NiFi flow itself implies it, so that the usual flows
import as they are:

- PutFile whose directory starts with a fixed path (`/data/out/${now():format('yyyy')}`,
  `#{out_dir}/${kind}`): that fixed part, up to its last `/`;
- FetchFile that deletes or moves, fed only by ListFile processors listing one and the
  same directory: that directory.

Anything else (a directory that starts with an expression, a FetchFile fed by other
processors) is left to Custody's refusal, which says what to set. Each root set is a
line of the import's report."""

from __future__ import annotations

from collections.abc import Iterable


def fixed_directory(directory: str) -> str | None:
    """The fixed leading directory of a path built with expressions, or None."""
    at = directory.find("${")
    if at < 0:
        return None
    prefix = directory[:at]
    root = prefix.rstrip("/") if prefix.endswith("/") else prefix.rpartition("/")[0]
    return root if root.strip("/") else None


def confine(processors: list[dict], edges: Iterable[tuple[str, str]]) -> list[str]:
    """Set `allowed_root` on the processors (Custody flow entries) where the flow implies
    it; `edges` are (source id, destination id) of the flow's connections. Returns the
    report's lines."""
    by_id = {processor["id"]: processor for processor in processors}
    feeders: dict[str, set[str]] = {}
    for source, destination in edges:
        feeders.setdefault(destination, set()).add(source)
    report = []
    for processor in processors:
        properties = processor.get("properties") or {}
        if properties.get("allowed_root") or properties.get("allow_any_path"):
            continue
        root, why = None, ""
        if processor["type"] == "PutFile":
            directory = str(properties.get("directory", ""))
            root = fixed_directory(directory)
            why = f"the fixed part of directory {directory!r}"
        elif processor["type"] == "FetchFile" and properties.get("completion_strategy") in ("delete", "move"):
            sources = [by_id.get(source) for source in feeders.get(processor["id"], ())]
            listed = {
                str((source.get("properties") or {}).get("input_directory", ""))
                for source in sources
                if source is not None and source["type"] == "ListFile"
            }
            if sources and len(listed) == 1 and all(s is not None and s["type"] == "ListFile" for s in sources):
                root = listed.pop() or None
                why = "the directory the ListFile feeding it lists"
        if root is None:
            continue
        processor.setdefault("properties", {})["allowed_root"] = root
        report.append(
            f"processor {processor['id']!r}: allowed_root {root!r} ({why}): NiFi lets FlowFile attributes "
            "steer the path anywhere; Custody keeps it under this directory"
        )
    return report
