"""NiFi 2 Python processors, run unmodified inside Custody's sessions.

    from flow.python_extensions import PythonExtensions, extension_registry
    registry = extension_registry(PythonExtensions(("/opt/nifi-python",), cache_directory="/data"))
    definition = flow.loading.load_flow("flow.yaml", registry=registry)

Each directory is read whole (`flow.python_extensions.discovery`): every processor class
of each module or package, its dependencies installed with pip into an environment of
its own (`dependencies`), the module imported with Custody's `nifiapi` importable
(`flow.python_api`), and the class made a Custody processor under its class name
(`adapter`). Two versions of one class (ProcessorDetails.version), as NiFi keeps
them side by side: the latest is the processor of the class's name, and each other one
is `Name@version` (`versioned_name`), which a flow names to pin it and which the
import of a NiFi flow chooses by the processor's bundle version. All or nothing: a
module that does not import, a class without ProcessorDetails, a name taken by another
processor, one version of a class defined twice, a dependency pip cannot install, each
fails the load with one `PythonExtensionError` naming the file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
from dataclasses import dataclass, field

from ..processor import Processor
from ..python_api import install_alias
from ..registry import ProcessorRegistry
from .adapter import processor_class
from .dependencies import PipIndex, ensure_environment
from .discovery import ProcessorSource, module_paths, processors_in_module
from .errors import DependenciesUnavailable, PythonExtensionError

__all__ = [
    "DependenciesUnavailable",
    "PipIndex",
    "PythonExtensionError",
    "PythonExtensions",
    "extension_registry",
    "load_extensions",
    "version_key",
    "versioned_name",
]


@dataclass(frozen=True)
class PythonExtensions:
    """Where a node finds NiFi Python processors (`directories`), where their
    dependencies are installed (`cache_directory`/python-extensions) and from which
    package index (`index`)."""

    directories: tuple[str, ...] = ()
    cache_directory: str = ""
    index: PipIndex = field(default_factory=PipIndex)


def _module_name(module_path: str) -> str:
    digest = hashlib.sha256(os.path.abspath(module_path).encode("utf-8")).hexdigest()[:10]
    stem = os.path.splitext(os.path.basename(module_path))[0]
    return f"_custody_nifi_extension_{digest}_{''.join(c if c.isalnum() else '_' for c in stem)}"


def _import(module_path: str):
    """The module (a `.py` file, or a package directory) under a name of its own, so
    that two directories' `processors.py` never meet in `sys.modules`."""
    name = _module_name(module_path)
    if os.path.isdir(module_path):
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(module_path, "__init__.py"), submodule_search_locations=[module_path]
        )
    else:
        spec = importlib.util.spec_from_file_location(name, module_path)
    if spec is None or spec.loader is None:
        raise PythonExtensionError(f"python extension {module_path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as error:
        sys.modules.pop(name, None)
        if not isinstance(error, Exception):
            raise
        raise PythonExtensionError(
            f"python extension {module_path}: cannot be imported: {type(error).__name__}: {error}"
        ) from None
    return module


def _class_of(module, source: ProcessorSource) -> type:
    from ..python_api.nifiapi.flowfilesource import FlowFileSource
    from ..python_api.nifiapi.flowfiletransform import FlowFileTransform
    from ..python_api.nifiapi.flowfiletransformmultipleoutput import FlowFileTransformMultipleOutput
    from ..python_api.nifiapi.multipleflowfilesource import MultipleFlowFileSource
    from ..python_api.nifiapi.recordtransform import RecordTransform

    base = {
        "transform": FlowFileTransform,
        "record": RecordTransform,
        "source": FlowFileSource,
        "transforms": FlowFileTransformMultipleOutput,
        "sources": MultipleFlowFileSource,
    }[source.kind]
    holder = module
    if source.path != source.module_path:  # a class in a module of a package
        relative = os.path.relpath(os.path.splitext(source.path)[0], source.module_path).replace(os.sep, ".")
        if relative != "__init__":
            try:
                holder = importlib.import_module(f"{module.__name__}.{relative.removesuffix('.__init__')}")
            except Exception as error:  # noqa: BLE001 - any import failure of a plug-in is reported, named
                raise PythonExtensionError(
                    f"python extension {source.path}: cannot be imported: {type(error).__name__}: {error}"
                ) from None
    cls = getattr(holder, source.class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise PythonExtensionError(
            f"python extension {source.path}: class {source.class_name} is not a subclass of nifiapi's "
            f"{base.__name__} once imported (does the module import it from nifiapi?)"
        )
    return cls


def versioned_name(class_name: str, version: str) -> str:
    """The processor name of one version of a class loaded beside a later one."""
    return f"{class_name}@{version}"


def version_key(version: str) -> list[tuple[float, int | str]]:
    """An order of versions: numbers as numbers, a release after its pre-releases
    (`0.0.2-SNAPSHOT` < `0.0.2` < `0.0.10`)."""
    parts: list[tuple[float, int | str]] = [
        (0, int(part)) if part.isdigit() else (-1, part) for part in re.split(r"[.\-_+]", version) if part
    ]
    return [*parts, (-0.5, "")]


def type_names(sources: list[ProcessorSource]) -> dict[tuple[str, str], str]:
    """The processor name of each (class, version): the class's name for its latest
    version, `versioned_name` for the others."""
    latest: dict[str, str] = {}
    for source in sources:
        known = latest.get(source.class_name)
        if known is None or version_key(source.version) > version_key(known):
            latest[source.class_name] = source.version
    return {
        (s.class_name, s.version): s.class_name
        if latest[s.class_name] == s.version
        else versioned_name(s.class_name, s.version)
        for s in sources
    }


def load_extensions(extensions: PythonExtensions) -> list[type[Processor]]:
    """The Custody processor classes of every NiFi processor in `extensions.directories`,
    all or none. Raises `PythonExtensionError` (`DependenciesUnavailable` with the pip
    command) naming the file."""
    install_alias()
    found: list[tuple[str, list[ProcessorSource]]] = []
    seen: dict[tuple[str, str], str] = {}
    for directory in extensions.directories:
        # A processor imports its helper modules by name from its directory, as NiFi
        # puts the extensions' directory on the path (after Custody's own packages).
        if os.path.abspath(directory) not in sys.path:
            sys.path.append(os.path.abspath(directory))
        for module_path in module_paths(directory):
            sources = processors_in_module(module_path)
            for source in sources:
                key = (source.class_name, source.version)
                if key in seen:
                    raise PythonExtensionError(
                        f"python extension {source.path}: processor {source.class_name} version "
                        f"{source.version!r} is also defined in {seen[key]}; rename one, or give it its own "
                        "ProcessorDetails.version"
                    )
                seen[key] = source.path
                environment = ensure_environment(source, extensions.cache_directory or directory, extensions.index)
                if environment is not None and environment not in sys.path:
                    sys.path.append(environment)
            if sources:
                found.append((module_path, sources))
    names = type_names([source for _, sources in found for source in sources])
    classes: list[type[Processor]] = []
    for module_path, sources in found:
        module = _import(module_path)
        classes += [
            processor_class(source, _class_of(module, source), names[source.class_name, source.version])
            for source in sources
        ]
    return classes


def extension_registry(extensions: PythonExtensions, *, entry_points=None) -> ProcessorRegistry:
    """`flow.loading.standard_registry()` with the processors of `extensions` added: a
    NiFi processor named as a standard (or installed) one is refused, naming its file."""
    from ..loading import standard_registry

    registry = standard_registry(entry_points=entry_points)
    for cls in load_extensions(extensions):
        source = getattr(cls, "source", None)
        if cls.type_name in registry:
            raise PythonExtensionError(
                f"python extension {getattr(source, 'path', '?')}: processor {cls.type_name} has the name of "
                f"{registry.origin(cls.type_name)}; rename the class"
            )
        registry.register(cls, origin=f"python extension {getattr(source, 'path', '?')}")
    return registry
