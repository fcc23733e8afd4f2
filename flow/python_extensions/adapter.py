"""A NiFi 2 Python processor class as a Custody `Processor`: `processor_class(source, cls)`.

The Custody class is named for the NiFi class (the flow's `type:`), declares the NiFi
properties under their NiFi names (a RecordTransform also `Record Reader` and
`Record Writer`, the flow's record services, as NiFi's framework adds them) and NiFi's
relationships (a transform: those of `getRelationships()`, else `success`, plus
`failure` and `original`; a source: `success` plus those of `getRelationships()`).
Each Custody processor makes one instance of the NiFi class, gives it `identifier` and
`logger`, calls `onScheduled` and `onStopped` with a `ProcessContext`, and does its
work in `on_trigger` inside the engine's session (`flow.python_extensions.work`), so
that what it makes is committed exactly once, like any processor's.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from ..controller_service import RECORD_READER, RECORD_WRITER
from ..processor import ProcessContext, Processor, PropertyDescriptor
from ..python_api.nifiapi.componentstate import StateException, StateManager, no_state_here
from ..python_api.nifiapi.logging import Logger
from ..python_api.nifiapi.properties import ProcessContext as NifiContext
from ..python_api.nifiapi.properties import PropertyDescriptor as NifiDescriptor
from . import properties as nifi_properties
from .discovery import SOURCE_KINDS, ProcessorSource
from .errors import PythonExtensionError
from .work import READER_NAME, WORK, WRITER_NAME

if TYPE_CHECKING:
    from ..session import ProcessSession

FRAMEWORK_RELATIONSHIPS = ("failure", "original")


class SessionState:
    """The state manager's view of the session a thread is running the processor in:
    `transform` and `create` read and write the shard's processor state, committed
    with that session's FlowFiles; outside one, `StateException`."""

    def __init__(self) -> None:
        self._local = threading.local()

    def bind(self, session: ProcessSession | None) -> None:
        self._local.session = session

    def _session(self) -> ProcessSession:
        session = getattr(self._local, "session", None)
        if session is None:
            raise StateException("state is read and written in transform() or create(), inside a session")
        return session

    def manager(self) -> StateManager:
        return StateManager(lambda: self._session().get_state(), lambda values: self._session().set_state(values))


class NifiProcessor(Processor):
    """The Custody side of one NiFi Python processor class (made by `processor_class`)."""

    nifi_class: ClassVar[type]
    nifi_kind: ClassVar[str]
    source: ClassVar[ProcessorSource]
    nifi_descriptors: ClassVar[tuple[NifiDescriptor, ...]] = ()
    nifi_probe: ClassVar[object]

    def __init__(self, processor_id: str):
        super().__init__(processor_id)
        self.nifi = construct(self.nifi_class)
        self.nifi.identifier = processor_id
        self.nifi.logger = Logger(logging.getLogger(f"flow.python.{self.type_name}.{processor_id}"))
        self.state = SessionState()
        self.nifi_context: NifiContext | None = None

    @classmethod
    def _dynamic_descriptor(cls):
        method = getattr(cls.nifi_probe, "getDynamicPropertyDescriptor", None)
        return method

    @classmethod
    def validate(cls, properties: Mapping, dynamic: Mapping) -> list[tuple[str, str]]:
        found = nifi_properties.problems(cls.nifi_descriptors, cls._dynamic_descriptor(), properties, dynamic)
        custom = getattr(cls.nifi_probe, "customValidate", None)
        if found or custom is None:
            return found
        values, by_name = nifi_properties.property_values(
            cls.nifi_descriptors, cls._dynamic_descriptor(), properties, dynamic
        )
        for result in custom(nifi_properties.validation_context(values, by_name)) or ():
            if not getattr(result, "valid", True):
                subject = getattr(result, "subject", "") or (
                    cls.nifi_descriptors[0].name if cls.nifi_descriptors else ""
                )
                found.append((subject, str(getattr(result, "explanation", "") or "invalid")))
        return found

    def on_scheduled(self, context: ProcessContext) -> None:
        values, by_name = nifi_properties.property_values(
            self.nifi_descriptors, self._dynamic_descriptor(), context.properties, context.dynamic
        )
        self.nifi_context = NifiContext(self.id, values, by_name, self.state.manager(), context.yield_)
        on_scheduled = getattr(self.nifi, "onScheduled", None)
        if on_scheduled is not None:
            on_scheduled(NifiContext(self.id, values, by_name, no_state_here("onScheduled"), context.yield_))

    def on_stopped(self, context: ProcessContext) -> None:
        on_stopped = getattr(self.nifi, "onStopped", None)
        if on_stopped is not None and self.nifi_context is not None:
            ctx = self.nifi_context
            on_stopped(
                NifiContext(
                    self.id, ctx.property_values, ctx._descriptors, no_state_here("onStopped"), ctx.yield_resources
                )
            )

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        if self.nifi_context is None:
            self.on_scheduled(context)
        assert self.nifi_context is not None
        self.state.bind(session)
        try:
            WORK[self.nifi_kind](self, context, session)
        finally:
            self.state.bind(None)


def _relationship_names(probe: object, path: str, class_name: str) -> tuple[str, ...]:
    method = getattr(probe, "getRelationships", None)
    if method is None:
        return ()
    names = []
    for relationship in method() or ():
        name = getattr(relationship, "name", None)
        if not isinstance(name, str) or not name:
            raise PythonExtensionError(
                f"python extension {path}: {class_name}.getRelationships() returned {relationship!r}, "
                "not a nifiapi.relationship.Relationship"
            )
        names.append(name)
    return tuple(names)


def construct(cls: type):
    """An instance of a NiFi processor class made as NiFi makes one, `cls(jvm=...)`: NiFi's
    older processors take `__init__(self, jvm)`. Custody has no JVM, so `jvm` is None
    (NiFi's examples only keep it). A constructor that takes neither `jvm` nor
    `**kwargs` is called without it."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return cls()
    if any(p.name == "jvm" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return cls(jvm=None)
    return cls()


def processor_class(source: ProcessorSource, cls: type, type_name: str = "") -> type[Processor]:
    """The Custody processor class for NiFi processor class `cls` found as `source`,
    under `type_name` (by default the class's name).
    Raises `PythonExtensionError` naming the file when it cannot be made (its
    constructor or `getPropertyDescriptors()` raises, or returns what is not NiFi's)."""
    where = f"python extension {source.path}: {source.class_name}"
    try:
        probe = construct(cls)
        probe.logger = Logger(logging.getLogger(f"flow.python.{source.class_name}"))
        descriptors = tuple(probe.getPropertyDescriptors() or ()) if hasattr(probe, "getPropertyDescriptors") else ()
    except Exception as error:  # noqa: BLE001 - any failure of third-party code is named, with its file
        raise PythonExtensionError(f"{where} cannot be made: {type(error).__name__}: {error}") from None
    for descriptor in descriptors:
        if not isinstance(descriptor, NifiDescriptor):
            raise PythonExtensionError(
                f"{where}.getPropertyDescriptors() returned {descriptor!r}, not a nifiapi.properties.PropertyDescriptor"
            )
    declared = _relationship_names(probe, source.path, source.class_name)
    custody_properties: tuple[PropertyDescriptor, ...] = tuple(
        nifi_properties.custody_descriptor(d) for d in descriptors
    )
    if source.kind == "record":
        custody_properties = (
            PropertyDescriptor(
                READER_NAME,
                "service",
                required=True,
                service_kind=RECORD_READER,
                description="the flow's record reader",
            ),
            PropertyDescriptor(
                WRITER_NAME,
                "service",
                required=True,
                service_kind=RECORD_WRITER,
                description="the flow's record writer",
            ),
            *custody_properties,
        )
    if source.kind in SOURCE_KINDS:
        relationships = ("success", *(name for name in declared if name != "success"))
    else:
        relationships = (*(declared or ("success",)), *(r for r in FRAMEWORK_RELATIONSHIPS if r not in declared))
    names = {d.name for d in custody_properties}
    if len(names) != len(custody_properties):
        raise PythonExtensionError(f"{where} declares two properties of the same name")
    attributes = {
        "type_name": type_name or source.class_name,
        "description": source.description or f"NiFi Python processor {source.class_name} {source.version}",
        "properties": custody_properties,
        "relationships": relationships,
        "dynamic_properties": hasattr(probe, "getDynamicPropertyDescriptor"),
        "is_source": source.kind in SOURCE_KINDS,
        "nifi_class": cls,
        "nifi_kind": source.kind,
        "source": source,
        "nifi_descriptors": descriptors,
        "nifi_probe": probe,
        "__module__": __name__,
        "__doc__": f"{source.class_name} ({source.path}), a NiFi {source.kind} processor run by Custody.",
    }
    return type(source.class_name, (NifiProcessor,), attributes)
