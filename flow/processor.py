"""The processor API: property descriptors, the context a processor runs with, the base class.

A processor declares its properties (`PropertyDescriptor`: name, kind, default,
required) and relationships; the flow definition validates configured values against
them before anything runs, so a wrong type is reported with the processor and the
property named. `on_trigger(context, session)` does one unit of work; if it returns
without committing, the engine commits the session for it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from repositories.log_limits import LimitedLog

from .errors import FlowError, UnknownService
from .expression import Expression, compile_expression
from .services import ServiceRegistry
from .units import parse_duration, parse_size
from .workers import SOLE_WORKER, Worker

if TYPE_CHECKING:
    from .session import ProcessSession

KINDS = ("string", "integer", "float", "boolean", "duration", "size", "choice", "expression", "regex", "service")


@dataclass(frozen=True)
class PropertyDescriptor:
    name: str
    kind: str = "string"
    required: bool = False
    default: object = None
    choices: tuple = ()
    description: str = ""
    # Bounds of an integer, float, size or duration value (None: none), refused by name
    # when the flow is loaded. Without a `minimum`, an integer is still never negative
    # (`problem`): no count, batch or port of a processor is.
    minimum: float | None = None
    maximum: float | None = None
    # Of a "service" property: the kind of controller service it names
    # (`flow.controller_service`: a record reader, a record writer). The parser puts the
    # flow's service of that id in the processor's properties in place of the name.
    service_kind: str = ""

    def convert(self, value):
        """The configured value as the processor uses it; ValueError says what is wrong."""
        kind = self.kind
        if kind == "string":
            if isinstance(value, (dict, list)):
                raise ValueError(f"expected text, got {type(value).__name__}")
            return str(value)
        if kind == "integer":
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise ValueError(f"expected an integer, got {value!r}")
            try:
                number = int(value)
            except ValueError:
                raise ValueError(f"expected an integer, got {value!r}") from None
            return self._bounded(number, self.minimum)
        if kind == "float":
            if isinstance(value, bool):
                raise ValueError(f"expected a number, got {value!r}")
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"expected a number, got {value!r}") from None
            return self._bounded(number, self.minimum)
        if kind == "boolean":
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "yes", "1"):
                return True
            if str(value).lower() in ("false", "no", "0"):
                return False
            raise ValueError(f"expected true or false, got {value!r}")
        if kind == "duration":
            return self._bounded(parse_duration(value), self.minimum)
        if kind == "size":
            return self._bounded(parse_size(value), self.minimum)
        if kind == "choice":
            if str(value) not in self.choices:
                raise ValueError(f"expected one of {', '.join(self.choices)}, got {value!r}")
            return str(value)
        if kind == "expression":
            if isinstance(value, (dict, list)):
                raise ValueError(f"expected an expression, got {type(value).__name__}")
            return compile_expression(str(value))
        if kind == "service":
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"expected the id of one of the flow's services, got {value!r}")
            return value.strip()
        if kind == "regex":
            try:
                return re.compile(str(value))
            except re.error as error:
                raise ValueError(f"invalid regular expression {value!r}: {error}") from None
        raise ValueError(f"unknown property kind {kind!r}")

    def problem(self, value) -> str | None:
        """What is wrong with a converted `value` that the bounds did not say and the
        processor's own `validate` let through (it speaks first, in its own words): a
        negative integer where no `minimum` allows one."""
        if self.kind == "integer" and self.minimum is None and isinstance(value, int) and value < 0:
            return f"cannot be negative, got {value}"
        return None

    def _bounded(self, number, minimum):
        if minimum is not None and number < minimum:
            raise ValueError(f"must be at least {minimum:g}, got {number:g}")
        if self.maximum is not None and number > self.maximum:
            raise ValueError(f"must be at most {self.maximum:g}, got {number:g}")
        return number


def find_descriptor(descriptors: tuple[PropertyDescriptor, ...], name: str) -> PropertyDescriptor | None:
    """The descriptor of `descriptors` named `name`, None when there is none."""
    for descriptor in descriptors:
        if descriptor.name == name:
            return descriptor
    return None


class ProcessContext:
    """What a processor sees of its configuration and of the engine: its properties,
    the node's shared services (`service`), and the loader of the stateless flows it
    may embed (`load_stateless_flow`). The engine that runs the processor builds it."""

    def __init__(
        self,
        processor_id: str,
        properties: Mapping,
        dynamic: Mapping[str, Expression],
        *,
        yield_callback: Callable[[], None] = lambda: None,
        stateless: bool = False,
        has_incoming: bool = False,
        logger: logging.Logger | None = None,
        clock_ms: Callable[[], int] | None = None,
        services: ServiceRegistry | None = None,
        stateless_flows: Callable[[str], object] | None = None,
        worker: Worker = SOLE_WORKER,
    ):
        self.processor_id = processor_id
        # Which of its node's worker processes runs this processor (`flow.workers`): the
        # sources that split their input over the workers take their part by it.
        self.worker = worker
        self.properties = properties
        self.dynamic = dynamic
        self.stateless = stateless
        self.has_incoming = has_incoming
        self.logger = logger or logging.getLogger(f"flow.processor.{processor_id}")
        self._limited_log = LimitedLog(self.logger)
        self._yield = yield_callback
        self.clock_ms = clock_ms
        self.yielded = False
        self._services = services
        self._stateless_flows = stateless_flows

    @property
    def limited_log(self) -> LimitedLog:
        """`logger` for lines that repeat with every FlowFile or run (a damaged claim, a
        full disk): at most one line of a kind a minute, with a count of the rest."""
        return self._limited_log

    def __getitem__(self, name: str):
        return self.properties[name]

    def get(self, name: str, default=None):
        value = self.properties.get(name)
        return default if value is None else value

    def yield_(self) -> None:
        """Nothing to do now: do not schedule this processor again for its yield duration."""
        self.yielded = True
        self._yield()

    def service(self, name: str):
        """The node's shared service `name` (a SparkSession under "spark", ...), started on
        the first lookup anywhere on the node and shared by every processor after that.
        Raises `UnknownService` naming the configured ones when the node has no such
        service, `ServiceError` when it fails to start."""
        if self._services is None:
            raise UnknownService(name, (), self.processor_id)
        return self._services.get(name, asked_by=self.processor_id)

    def discard_service(self, name: str, reason: str) -> None:
        """Stop the node's shared service `name` (one found broken: a SparkSession whose
        cluster lost every executor), so that the next `service(name)` starts a new one."""
        if self._services is not None:
            self._services.discard(name, f"{reason}; by {self.processor_id}")

    def load_stateless_flow(self, path: str):
        """The flow definition at `path` as a stateless flow (`flow.stateless.StatelessFlow`),
        parsed against the processor types of the flow this processor runs in and sharing
        its services. Raises `FlowDefinitionError` for an invalid definition, `FlowError`
        when the engine running this processor cannot embed flows."""
        if self._stateless_flows is None:
            raise FlowError(f"{self.processor_id}: this engine gives its processors no loader of stateless flows")
        return self._stateless_flows(path)


class Processor:
    type_name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    properties: ClassVar[tuple[PropertyDescriptor, ...]] = ()
    relationships: ClassVar[tuple[str, ...]] = ("success",)
    dynamic_properties: ClassVar[bool] = False
    # What `relationships_for` adds to `relationships` as configured, for the reference.
    relationships_note: ClassVar[str] = ""
    # Sources run on their schedule without input; others only when input waits.
    is_source: ClassVar[bool] = False

    def __init__(self, processor_id: str):
        self.id = processor_id

    @classmethod
    def descriptor(cls, name: str) -> PropertyDescriptor | None:
        return find_descriptor(cls.properties, name)

    @classmethod
    def relationships_for(cls, properties: Mapping, dynamic: Mapping[str, Expression]) -> tuple[str, ...]:
        """The relationships of a configured processor (dynamic ones included)."""
        return cls.relationships

    @classmethod
    def validate(cls, properties: Mapping, dynamic: Mapping[str, Expression]) -> list[tuple[str, str]]:
        """Cross-property problems as (property, message); empty when valid."""
        return []

    def on_scheduled(self, context: ProcessContext) -> None:
        pass

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        raise NotImplementedError

    def on_stopped(self, context: ProcessContext) -> None:
        pass

    def prepare_adopted(self, context: ProcessContext, shard_id: str, admit: Callable[[], None]) -> None:
        """For a shard a clustered node is about to run (one it adopts, or its home
        shard as it starts): called once, on a thread of its own, while the shard's WAL
        is being recovered and before any task of it runs, to make ready what the first
        task would otherwise wait for (PublishKafka makes its transactional producer,
        which fences the previous owner's, and reads its progress back). `admit()` raises while the node
        may not act for the shard. What it keeps is given up by `on_stopped` or, when no
        task ever ran, by `release_prepared`. Does nothing by default."""

    def release_prepared(self) -> None:
        """Give up what `prepare_adopted` made (the shard never ran here). Idempotent."""

    @classmethod
    def hand_over_state(cls, previous: Mapping[str, str], current: Mapping[str, str]) -> dict[str, str] | None:
        """The state a clustered node's new incarnation gives this processor on its new
        home shard, from the processor's state in the node's previous incarnation's
        shard (`previous`) and in the new one (`current`, usually empty). None, the
        default: nothing to hand over (a processor's state stays with its shard). Sources
        that record what they took on this machine override it, so that the new
        incarnation finishes the old one's deletes and takes none of its inputs again."""
        return None

    @classmethod
    def holds_state_to_hand_over(cls, state: Mapping[str, str]) -> bool:
        """True when `state` (this processor's, in a shard) holds something a node's next
        incarnation must take over (`hand_over_state`). False by default."""
        return False
