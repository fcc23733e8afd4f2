"""Finding NiFi-style Python processors in a directory, before importing anything.

As NiFi's framework does, the source is read first (Python's `ast`): each `.py` module
and each package (a directory with `__init__.py`) of the directory is searched for
classes whose bases name `FlowFileTransform`, `RecordTransform` or `FlowFileSource` (or
newer NiFi's `FlowFileTransformMultipleOutput` and `MultipleFlowFileSource`),
and for their inner `ProcessorDetails` (`version`, `description`, `tags`,
`dependencies`, literals). The dependencies must be known before the module is
imported, since it may import them at its top. A processor class without
ProcessorDetails, or with details that are not literals, is refused naming the file.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from .errors import PythonExtensionError

KINDS = {
    "FlowFileTransform": "transform",
    "RecordTransform": "record",
    "FlowFileSource": "source",
    "FlowFileTransformMultipleOutput": "transforms",  # newer NiFi: a list of results per FlowFile
    "MultipleFlowFileSource": "sources",  # newer NiFi: a list of new FlowFiles per run
}
SOURCE_KINDS = ("source", "sources")


@dataclass(frozen=True)
class ProcessorSource:
    """One processor class found in source: its class name (the flow's `type:`), what it
    derives from (`transform`, `record`, `source`, `transforms`, `sources`), the file it
    is in, the module (a
    `.py` file, or a package's directory) that holds it, and its ProcessorDetails."""

    class_name: str
    kind: str
    path: str
    module_path: str
    version: str
    description: str
    tags: tuple[str, ...]
    dependencies: tuple[str, ...]


def module_paths(directory: str) -> list[str]:
    """The modules of `directory`, by name: each `name.py` and each package `name/`.
    Hidden and private names (`.x`, `_x`) are left alone."""
    if not os.path.isdir(directory):
        raise PythonExtensionError(f"python extensions {directory}: no such directory")
    found = []
    for name in sorted(os.listdir(directory)):
        if name.startswith((".", "_")):
            continue
        path = os.path.join(directory, name)
        if name.endswith(".py") and os.path.isfile(path):
            found.append(path)
        elif os.path.isfile(os.path.join(path, "__init__.py")):
            found.append(path)
    return found


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _details(node: ast.ClassDef, path: str) -> dict[str, object] | None:
    for item in node.body:
        if isinstance(item, ast.ClassDef) and item.name == "ProcessorDetails":
            values: dict[str, object] = {}
            for statement in item.body:
                if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                    target = statement.targets[0]
                    if isinstance(target, ast.Name):
                        try:
                            values[target.id] = ast.literal_eval(statement.value)
                        except ValueError:
                            raise PythonExtensionError(
                                f"python extension {path}: {node.name}.ProcessorDetails.{target.id} must be a "
                                "literal (text, or a list of text), as NiFi reads it without running the module"
                            ) from None
            return values
    return None


def _text_list(value: object, what: str, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise PythonExtensionError(f"python extension {path}: {what} must be a list of text, not {value!r}")
    return tuple(value)


def processors_in_file(path: str, module_path: str) -> list[ProcessorSource]:
    """The processor classes defined in the Python file at `path`."""
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (OSError, UnicodeDecodeError, SyntaxError) as error:
        raise PythonExtensionError(f"python extension {path}: cannot be read as Python: {error}") from None
    found = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        kinds = [KINDS[_base_name(base)] for base in node.bases if _base_name(base) in KINDS]
        if not kinds:
            continue
        details = _details(node, path)
        if details is None:
            raise PythonExtensionError(
                f"python extension {path}: class {node.name} derives from a NiFi processor API class but has no "
                "inner class ProcessorDetails (with at least `version`); add one as NiFi requires"
            )
        found.append(
            ProcessorSource(
                class_name=node.name,
                kind=kinds[0],
                path=path,
                module_path=module_path,
                version=str(details.get("version", "")),
                description=str(details.get("description", "") or "").strip(),
                tags=_text_list(details.get("tags"), f"{node.name}.ProcessorDetails.tags", path),
                dependencies=_text_list(
                    details.get("dependencies"), f"{node.name}.ProcessorDetails.dependencies", path
                ),
            )
        )
    return found


def processors_in_module(module_path: str) -> list[ProcessorSource]:
    """The processor classes of a module: a `.py` file, or every file of a package."""
    if os.path.isfile(module_path):
        return processors_in_file(module_path, module_path)
    found = []
    for root, directories, files in os.walk(module_path):
        directories[:] = sorted(d for d in directories if not d.startswith((".", "__pycache__")))
        for name in sorted(files):
            if name.endswith(".py"):
                found += processors_in_file(os.path.join(root, name), module_path)
    return found
