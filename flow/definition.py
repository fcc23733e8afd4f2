"""Flow definitions in YAML (or JSON, or a dict): processors, connections, ports.

    name: hello
    parameters: {out: /tmp/out}             # referenced as #{out}; the node adds #{data_dir}
    processors:
      - id: generate
        type: GenerateFlowFile
        properties: {batch_size: 10, file_size: 1 KB}
        scheduling: {run_schedule: 1 sec, concurrent_tasks: 1,
                     yield_duration: 1 sec, penalty_duration: 30 sec}
        auto_terminate: [failure]
    connections:
      - source: generate
        relationships: [success]
        destination: put
        prioritizers: [fifo]                # oldest_first, newest_first, priority_attribute
        back_pressure: {object_count: 10000, data_size: 1 GB}
        swap_threshold: 20000               # swap_batch: 10000
        expiration: 0 sec
    ports:                                  # for stateless flows
      - {id: in, type: input}
      - {id: out, type: output}
      - {id: failed, type: failure}

Every problem raises `FlowDefinitionError` naming the file and the place: the processor
and its property (`processor 'generate': property 'scheduling.run_schedule'`), or the
path from the top of the document (`connections[2].back_pressure.object_count`), and
what is expected there. Validation is complete before anything runs.

Limits, so that no document, however malformed or hostile, takes long to load or refuse
(a document at the limits takes one to three seconds on two busy cores):

  MAX_DOCUMENT_BYTES   a flow file (or text) of at most 1 MiB: thousands of processors
  MAX_NESTING          values nested at most 32 levels deep (a flow needs 5)
  MAX_VALUES           at most 200,000 values (each key, item, text, number, list and
                       mapping) once every YAML alias is written out in full
  MAX_EXPANDED_CHARS   at most 2 Mi characters of text and keys, aliases written out; and
                       as many characters added by substituting parameters. An alias bomb
                       ("billion laughs") is refused at the alias that crosses a limit
  MAX_PROPERTY_CHARS   a property's value, parameters substituted, of at most 64 Ki characters

A document is a mapping whose keys are text and whose values are text (no lone UTF-16
surrogate), numbers (finite, integers within 64 bits), true/false, null, dates, lists
and mappings; a YAML alias may not be inside the node it names, and a mapping may not
repeat a key.

A definition is parsed against the processor registry it is given (`registry`: type
name -> `Processor` class, usually a `flow.registry.ProcessorRegistry`); this module
never imports the processors. `flow.loading` parses against the standard registry.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from .errors import ExpressionError, FlowDefinitionError
from .expression import compile_expression
from .prioritizers import key_function
from .queue import DEFAULT_BACK_PRESSURE_COUNT, DEFAULT_BACK_PRESSURE_SIZE
from .swap_policy import DEFAULT_SWAP_BATCH, DEFAULT_SWAP_THRESHOLD
from .units import parse_duration, parse_size

try:  # libyaml: the same events as the pure-Python parser, several times faster
    from yaml._yaml import CParser as _YamlEvents
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _YamlEvents = None

MAX_DOCUMENT_BYTES = 1 << 20
MAX_NESTING = 32
MAX_VALUES = 200_000
MAX_EXPANDED_CHARS = 2 << 20
MAX_PROPERTY_CHARS = 64 << 10
# Beyond what any count or size in a flow needs; keeps numbers printable and arithmetic cheap.
_MAX_INTEGER = 1 << 63

_PARAMETER = re.compile(r"#\{([A-Za-z0-9_.\-]+)\}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")
PORT_KINDS = ("input", "output", "failure")
_TOP_KEYS = ("name", "description", "parameters", "processors", "connections", "ports")
_PROCESSOR_KEYS = ("id", "type", "name", "properties", "scheduling", "auto_terminate", "comment")
_CONNECTION_KEYS = ("id", "name", "source", "destination", "relationships", "prioritizers", "back_pressure",
                    "swap_threshold", "swap_batch", "expiration")
_SCHEDULING_KEYS = {"run_schedule": "run_schedule_s", "yield_duration": "yield_s",
                    "penalty_duration": "penalty_s", "concurrent_tasks": "concurrent_tasks"}
_BACK_PRESSURE_KEYS = ("object_count", "data_size")


@dataclass(frozen=True)
class SchedulingDefinition:
    run_schedule_s: float = 0.0
    concurrent_tasks: int = 1
    yield_s: float = 1.0
    penalty_s: float = 30.0


@dataclass(frozen=True)
class ProcessorDefinition:
    id: str
    type: str
    processor_class: type
    properties: dict
    dynamic: dict
    scheduling: SchedulingDefinition
    auto_terminate: tuple[str, ...]
    relationships: tuple[str, ...]

    def create(self):
        return self.processor_class(self.id)


@dataclass(frozen=True)
class ConnectionDefinition:
    id: str
    source: str
    relationships: tuple[str, ...]
    destination: str
    prioritizers: tuple[str, ...] = ()
    back_pressure_count: int = DEFAULT_BACK_PRESSURE_COUNT
    back_pressure_size: int = DEFAULT_BACK_PRESSURE_SIZE
    swap_threshold: int = DEFAULT_SWAP_THRESHOLD
    swap_batch: int = DEFAULT_SWAP_BATCH
    expiration_ms: int = 0


@dataclass(frozen=True)
class PortDefinition:
    id: str
    kind: str


@dataclass(frozen=True)
class FlowDefinition:
    name: str
    processors: dict
    connections: tuple
    ports: dict
    parameters: dict = field(default_factory=dict)
    source: str = "<flow>"
    # The processor types it was parsed against: the stateless flows it embeds are parsed against them too.
    registry: Mapping[str, type] | None = field(default=None, compare=False, repr=False)

    def incoming(self, component_id: str) -> list[ConnectionDefinition]:
        return [c for c in self.connections if c.destination == component_id]

    def outgoing(self, component_id: str) -> list[ConnectionDefinition]:
        return [c for c in self.connections if c.source == component_id]

    def ports_of(self, kind: str) -> list[str]:
        return [p.id for p in self.ports.values() if p.kind == kind]


def load_flow(path: str, parameters: dict | None = None, *, registry: Mapping[str, type]) -> FlowDefinition:
    """Read and validate a flow file (.yaml, .yml or .json) against the processor types of
    `registry`; `parameters` override the file's own. Raises `FlowDefinitionError`."""
    document = read_flow_document(path)
    return _FlowParser(document, registry, str(path), parameters).parse()


def read_flow_document(path: str) -> dict:
    """The flow file at `path` (.yaml, .yml or .json) as data, before any parameter is
    substituted or any processor looked at: a mapping within the limits the module
    documents. Raises `FlowDefinitionError` naming the file when it cannot be read,
    parsed, or is beyond a limit."""
    source = str(path)
    try:
        with open(path, "rb") as handle:
            content = handle.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as error:
        raise FlowDefinitionError(f"cannot read the flow file: {error.strerror or error}", source=source) from None
    return decode_flow_document(content, source=source, as_json=source.endswith(".json"))


def decode_flow_document(content: str | bytes, *, source: str = "<flow>", as_json: bool = False) -> dict:
    """`read_flow_document` for a document already in hand: YAML, or JSON when `as_json`."""
    text = _decode(content, source)
    data = _parse_json(text, source) if as_json else _parse_yaml(text, source)
    if not isinstance(data, dict):
        raise FlowDefinitionError(f"a flow is a mapping with 'processors' and 'connections', got {_kind(data)}",
                                  source=source)
    _check_document(data, source)
    return data


def parse_flow(data, *, registry: Mapping[str, type], source: str = "<flow>",
               parameters: dict | None = None) -> FlowDefinition:
    """Validate a flow given as a mapping (parsed YAML or JSON) against the processor
    types of `registry`; `source` names it in errors. Raises `FlowDefinitionError`."""
    if not isinstance(data, dict):
        raise FlowDefinitionError(f"a flow is a mapping with 'processors' and 'connections', got {_kind(data)}",
                                  source=source)
    _check_document(data, source)
    return _FlowParser(data, registry, source, parameters).parse()


# --- Text to data ------------------------------------------------------------------------------------------------


def _decode(content: str | bytes, source: str) -> str:
    if isinstance(content, str):
        try:
            content = content.encode("utf-8")
        except UnicodeEncodeError as error:
            raise FlowDefinitionError(f"the flow is not valid text (character {error.start + 1}: {error.reason})",
                                      source=source) from None
    if len(content) > MAX_DOCUMENT_BYTES:
        raise FlowDefinitionError(f"the flow is larger than {MAX_DOCUMENT_BYTES} bytes, the most a flow may be: "
                                  f"split it into stateless flows, or shorten long values", source=source)
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FlowDefinitionError(f"the flow is not UTF-8 text (byte {error.start + 1}: {error.reason})",
                                  source=source) from None


def _parse_json(text: str, source: str):
    try:
        return json.loads(text, object_pairs_hook=_json_object, parse_int=_json_integer)
    except json.JSONDecodeError as error:
        raise FlowDefinitionError(f"malformed JSON at line {error.lineno}, column {error.colno}: {error.msg}",
                                  source=source) from None
    except RecursionError:
        raise FlowDefinitionError(f"malformed JSON: nested more than {MAX_NESTING} levels deep",
                                  source=source) from None
    except ValueError as error:  # a duplicate key, or an integer of thousands of digits
        raise FlowDefinitionError(f"malformed JSON: {_short(str(error), 200)}", source=source) from None


def _json_object(pairs: list) -> dict:
    result = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {_short(key)!r} in an object: give each key once")
        result[key] = value
    return result


def _json_integer(text: str) -> int:
    if len(text) > 100:
        raise ValueError(f"an integer of {len(text)} digits: numbers in a flow fit in 64 bits")
    return int(text)


def _parse_yaml(text: str, source: str):
    try:
        loader = _FlowYamlLoader(text)  # the pure-Python reader checks the characters here
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        raise FlowDefinitionError(f"malformed YAML{_yaml_problem(error)}", source=source) from None


def _yaml_problem(error: yaml.YAMLError) -> str:
    if isinstance(error, yaml.reader.ReaderError):  # no line and column: a character the reader refuses
        first_line = str(error).partition("\n")[0]
        return f" at character {error.position + 1}: {_short(first_line, 300)}"
    mark = getattr(error, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(error, "problem", None) or str(error)
    context = getattr(error, "context", None)
    problem = f"{context}, {problem}" if context else problem
    return f"{where}: {_short(problem, 300)}"


class _BoundedComposer(Composer):
    """Composes YAML nodes, refusing a document nested deeper than `MAX_NESTING`, one
    beyond `MAX_VALUES` or `MAX_EXPANDED_CHARS` once its aliases are written out (an
    alias shares the node it names, so counting it as the whole of that node catches an
    alias bomb before anything walks it), a recursive alias, and a key given twice."""

    def __init__(self):
        Composer.__init__(self)
        self._depth = 0
        self._values = 0
        self._chars = 0
        self._aliases = 0
        self._sizes: dict[int, tuple[int, int]] = {}  # id of each finished node -> (values, chars) it holds

    def compose_node(self, parent, index):
        if self.check_event(AliasEvent):
            return self._compose_alias(parent, index)
        event = self.peek_event()
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise ComposerError(None, None, f"nested more than {MAX_NESTING} levels deep", event.start_mark)
        values, chars = self._values, self._chars
        node = Composer.compose_node(self, parent, index)
        self._depth -= 1
        self._grow(1, len(node.value) if isinstance(node, ScalarNode) else 0, node.start_mark)
        self._sizes[id(node)] = (self._values - values, self._chars - chars)
        return node

    def _compose_alias(self, parent, index):
        event = self.peek_event()
        target = self.anchors.get(event.anchor)
        if target is not None and id(target) not in self._sizes:
            raise ComposerError(None, None, f"alias *{_short(event.anchor)} is inside the node it names: "
                                f"a flow cannot contain itself", event.start_mark)
        node = Composer.compose_node(self, parent, index)
        self._aliases += 1
        self._grow(*self._sizes[id(node)], event.start_mark)
        return node

    def _grow(self, values: int, chars: int, mark) -> None:
        self._values += values
        self._chars += chars
        problem = _beyond_limits(self._values, self._chars)
        if problem:
            how = " with its aliases written out" if self._aliases else ""
            raise ComposerError(None, None, f"the flow{how} {problem}", mark)

    def compose_mapping_node(self, anchor):
        node = Composer.compose_mapping_node(self, anchor)
        seen = set()
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if (key.tag, key.value) in seen:
                    raise ComposerError(None, None,
                                        f"key {_short(key.value)!r} is given twice: give each key once",
                                        key.start_mark)
                seen.add((key.tag, key.value))
        return node


class _FlowConstructor(SafeConstructor):
    def construct_object(self, node, deep=False):
        if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:int" and len(node.value) > 100:
            raise ConstructorError(None, None, f"an integer of {len(node.value)} digits: numbers in a flow fit "
                                   f"in 64 bits", node.start_mark)
        try:
            return SafeConstructor.construct_object(self, node, deep)
        except (ValueError, OverflowError) as error:  # a 30th of February
            problem = f"cannot read this value: {_short(str(error), 120)}"
        # PyYAML's constructors fail so on a value that does not fit its explicit tag (!!int '', !!bool x)
        except (IndexError, KeyError, AttributeError, TypeError):
            problem = f"{_short(repr(node.value))} is not a valid {node.tag.rpartition(':')[2]}"
        raise ConstructorError(None, None, problem, node.start_mark)


class _PythonYamlEvents(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    def __init__(self, stream):
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


def _flow_yaml_loader(events: type) -> type:
    """A loader with yaml.SafeLoader's tags and types, reading `events` and composing
    them with `_BoundedComposer`."""

    class Loader(_BoundedComposer, events, _FlowConstructor, Resolver):
        def __init__(self, stream):
            events.__init__(self, stream)
            _BoundedComposer.__init__(self)
            _FlowConstructor.__init__(self)
            Resolver.__init__(self)

    return Loader


_PythonFlowYamlLoader = _flow_yaml_loader(_PythonYamlEvents)
_FlowYamlLoader = _flow_yaml_loader(_YamlEvents) if _YamlEvents else _PythonFlowYamlLoader


# --- The shape of any document ----------------------------------------------------------------------------------


def _check_document(data: dict, source: str) -> None:
    """Refuse, naming the path, what no flow holds wherever it is: a key that is not
    text, a value of another type than JSON's (or a date), a number that is not finite or
    beyond 64 bits, nesting beyond `MAX_NESTING` (so a structure that contains itself
    too), and a document beyond `MAX_VALUES` or `MAX_EXPANDED_CHARS`, a value held in
    several places counted in each."""
    values = chars = 0
    stack = [(data, ())]
    while stack:
        value, path = stack.pop()
        values += 1
        if len(path) >= MAX_NESTING:
            raise _Place(source, path).error(f"nested more than {MAX_NESTING} levels deep")
        if isinstance(value, str):
            chars += _check_text(value, "text", source, path)
        elif isinstance(value, dict):
            chars += _check_keys(value, source, path)
            values += len(value)
            stack.extend((value[key], path + (key,)) for key in reversed(value))
        elif isinstance(value, list):
            stack.extend((value[index], path + (index,)) for index in range(len(value) - 1, -1, -1))
        else:
            _check_scalar(value, source, path)
        problem = _beyond_limits(values, chars)
        if problem:
            raise _Place(source, path).error(f"here the flow {problem}")


def _beyond_limits(values: int, chars: int) -> str | None:
    if values > MAX_VALUES:
        return f"holds more than {MAX_VALUES} values, the most a flow may hold"
    if chars > MAX_EXPANDED_CHARS:
        return f"holds more than {MAX_EXPANDED_CHARS} characters of text, the most a flow may hold"
    return None


def _check_keys(mapping: dict, source: str, path: tuple) -> int:
    size = 0
    for key in mapping:
        if not isinstance(key, str):
            raise _Place(source, path).error(f"key {_short(repr(key))} is {_kind(key)}, not text: quote it")
        size += _check_text(key, "key", source, path)
    return size


def _check_text(text: str, what: str, source: str, path: tuple) -> int:
    """The length of `text`; refuses a lone surrogate (JSON's "\\ud800"), which no file,
    log or message can hold."""
    if not text.isascii() and _SURROGATE.search(text):
        raise _Place(source, path).error(f"{what} {_short(text)!r} holds a lone surrogate (half of a UTF-16 "
                                         f"pair), which is not text: remove it")
    return len(text)


def _check_scalar(value, source: str, path: tuple) -> None:
    if value is None or isinstance(value, (bool, datetime.date)):
        return
    if isinstance(value, int):
        if not -_MAX_INTEGER <= value < _MAX_INTEGER:
            raise _Place(source, path).error(f"expected a number within 64 bits (below {_MAX_INTEGER}), "
                                             f"got {value.bit_length()} bits")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _Place(source, path).error(f"expected a finite number, got {value!r}")
    else:
        raise _Place(source, path).error(f"expected text, a number, true/false, a list or a mapping, "
                                         f"got {_kind(value)}")


# --- Places and values -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Place:
    """Where a value was read: every error names it. Within a processor whose id is
    known, errors name the processor and the path inside it (as the property); elsewhere
    the path from the top of the document."""
    source: str
    path: tuple = ()
    processor: str | None = None

    def at(self, *parts) -> _Place:
        return _Place(self.source, self.path + parts, self.processor)

    def error(self, message: str) -> FlowDefinitionError:
        where = _format_path(self.path)
        if self.processor is not None:
            return FlowDefinitionError(message, source=self.source, processor=self.processor, property=where or None)
        return FlowDefinitionError(f"{where}: {message}" if where else message, source=self.source)


def _format_path(path: tuple) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not text:
            text = _short(part, 60)
        elif _PLAIN_KEY.match(part):
            text += f".{part}"
        else:
            text += f"[{_short(part, 60)!r}]"
    return text


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}...({len(text)} characters)"


def _listing(names) -> str:
    return _short(", ".join(map(repr, names)), 200) or "none"


def _kind(value) -> str:
    """What a value is, for an error message: its type, and the value itself if short."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}" if abs(value) < 1 << 64 else "a huge integer"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {_short(value)!r}" if value else "empty text"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return f"a mapping of {len(value)}"
    if isinstance(value, datetime.date):
        return f"the date {value.isoformat()}"
    return f"a {type(value).__name__}"


def _quote_hint(value) -> str:
    return " (quote it to make it text)" if isinstance(value, (int, float, datetime.date)) else ""


def _text(value, place: _Place, what: str = "text", *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise place.error(f"expected {what}, got {_kind(value)}{_quote_hint(value)}")
    return value


def _mapping(value, place: _Place, what: str = "a mapping") -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise place.error(f"expected {what}, got {_kind(value)}")
    return value


def _list(value, place: _Place, what: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise place.error(f"expected {what}, got {_kind(value)}")
    return value


def _names(value, place: _Place, what: str) -> list[str]:
    """A list of names, or one name alone; `what` names one."""
    if isinstance(value, str):
        return [value]
    items = _list(value, place, f"a list of {what}s")
    return [_text(item, place.at(index), f"text ({_article(what)})") for index, item in enumerate(items)]


def _refuse_unknown_keys(raw: dict, known, place: _Place) -> None:
    unknown = [key for key in raw if key not in known]
    if unknown:
        raise place.error(f"unknown key(s) {_short(str(sorted(unknown)), 200)} (known: {', '.join(known)})")


def _count(value, place: _Place, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = "a positive integer" if minimum == 1 else "a non-negative integer"
        raise place.error(f"expected {what}, got {_kind(value)}")
    return value


def _duration(value, place: _Place) -> float:
    try:
        seconds = parse_duration(_scalar(value, place, "a duration such as '500 ms' or '2 sec'"))
    except (ValueError, OverflowError) as error:
        raise place.error(_short(str(error), 200)) from None
    if not math.isfinite(seconds) or seconds > _MAX_INTEGER / 1000:
        raise place.error(f"the duration {_short(str(value))!r} is too long")
    return seconds


def _size(value, place: _Place) -> int:
    try:
        size = parse_size(_scalar(value, place, "a data size such as '10 KB' or '1 GB'"))
    except (ValueError, OverflowError) as error:
        raise place.error(_short(str(error), 200)) from None
    if size >= _MAX_INTEGER:
        raise place.error(f"the data size {_short(str(value))!r} is too large")
    return size


def _scalar(value, place: _Place, what: str):
    """A single value (not a list or mapping), of a length its parser reads quickly."""
    if isinstance(value, (list, dict)) or value is None:
        raise place.error(f"expected {what}, got {_kind(value)}")
    if isinstance(value, str) and len(value) > 100:
        raise place.error(f"expected {what}, got {_kind(value)}")
    return value


def _article(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


# --- The flow ------------------------------------------------------------------------------------------------------


class _FlowParser:
    """One document parsed against one registry: each method reads one part of it, checks
    the type of every value it reads and raises `FlowDefinitionError` naming the place."""

    def __init__(self, data: dict, registry: Mapping[str, type], source: str, parameters: dict | None):
        self.data, self.registry, self.source = data, registry, source
        self.overrides = parameters or {}
        self.parameters: dict = {}
        self.substituted = 0  # characters that substituting parameters added, across the document

    def parse(self) -> FlowDefinition:
        top = _Place(self.source)
        _refuse_unknown_keys(self.data, _TOP_KEYS, top)
        name = _text(self.data.get("name"), top.at("name"), "text (the flow's name)", required=False)
        _text(self.data.get("description"), top.at("description"), required=False)
        self.parameters = self._parameters(self.data.get("parameters"), top.at("parameters"))
        processors = self._processors(self.data.get("processors"), top.at("processors"))
        ports = self._ports(self.data.get("ports"), top.at("ports"), processors)
        connections = self._connections(self.data.get("connections"), top.at("connections"), processors, ports)
        _check_every_relationship_goes_somewhere(processors, connections, top)
        return FlowDefinition(name or os.path.basename(self.source), processors, connections, ports,
                              self.parameters, self.source, self.registry)

    def _parameters(self, raw, place: _Place) -> dict:
        parameters = {}
        for name, value in _mapping(raw, place, "a mapping of parameter names to values").items():
            if isinstance(value, (list, dict)) or value is None:
                raise place.at(name).error(f"expected text or a number (a parameter's value), got {_kind(value)}")
            parameters[name] = value
        parameters.update(self.overrides)
        return parameters

    # processors

    def _processors(self, raw, place: _Place) -> dict[str, ProcessorDefinition]:
        items = _list(raw, place, "a list of processors")
        if not items:
            raise place.error("expected a non-empty list of processors, got "
                              f"{_kind(raw) if raw is not None else 'none'}")
        processors: dict[str, ProcessorDefinition] = {}
        for index, item in enumerate(items):
            definition = self._processor(item, place.at(index))
            if definition.id in processors:
                raise _Place(self.source, processor=definition.id).error(
                    f"duplicate processor id (processors[{index}] repeats it): give each processor its own id")
            processors[definition.id] = definition
        return processors

    def _processor(self, raw, place: _Place) -> ProcessorDefinition:
        raw = _mapping(raw, place, "a mapping (a processor with an id and a type)")
        processor_id = _text(raw.get("id"), place.at("id"), "text (the processor's id)")
        place = _Place(self.source, processor=processor_id)
        _refuse_unknown_keys(raw, _PROCESSOR_KEYS, place)
        _text(raw.get("name"), place.at("name"), required=False)
        _text(raw.get("comment"), place.at("comment"), required=False)
        type_name = _text(raw.get("type"), place.at("type"), "text (a processor type)")
        cls = self.registry.get(type_name)
        if cls is None:
            raise place.error(f"unknown processor type {_short(type_name)!r}; "
                              f"known types: {', '.join(sorted(self.registry))}")
        properties, dynamic = self._properties(cls, raw.get("properties"), place)
        for name, message in cls.validate(properties, dynamic):
            raise place.at(name).error(message)
        scheduling = _scheduling(raw.get("scheduling"), place.at("scheduling"))
        relationships = tuple(cls.relationships_for(properties, dynamic))
        auto_terminate = _auto_terminate(raw.get("auto_terminate"), relationships, place)
        return ProcessorDefinition(processor_id, type_name, cls, properties, dynamic, scheduling, auto_terminate,
                                   relationships)

    def _properties(self, cls, raw, place: _Place) -> tuple[dict, dict]:
        properties, dynamic = {}, {}
        for name, value in _mapping(raw, place.at("properties"), "a mapping of property names to values").items():
            value = self._property_value(value, place.at(name))
            descriptor = cls.descriptor(name)
            if descriptor is None:
                dynamic[name] = _dynamic_property(cls, value, place.at(name))
            elif value is not None:
                properties[name] = _convert(descriptor, value, place.at(name))
        for descriptor in cls.properties:
            if descriptor.name in properties:
                continue
            if descriptor.default is not None:
                properties[descriptor.name] = descriptor.convert(descriptor.default)
            elif descriptor.required:
                raise place.at(descriptor.name).error("required property is missing")
            else:
                properties[descriptor.name] = None
        return properties, dynamic

    def _property_value(self, value, place: _Place):
        if isinstance(value, (list, dict)):
            raise place.error(f"expected a single value (text, a number or true/false), got {_kind(value)}")
        if isinstance(value, str) and len(value) > MAX_PROPERTY_CHARS:
            raise place.error(f"the value is {len(value)} characters long, more than the {MAX_PROPERTY_CHARS} "
                              f"a property may hold")
        return self._substitute(value, place)

    def _substitute(self, value, place: _Place):
        if not isinstance(value, str):
            return value
        added = 0

        def replace(match):
            nonlocal added
            name = match.group(1)
            if name not in self.parameters:
                defined = _short(", ".join(sorted(map(str, self.parameters))), 200) or "none"
                raise place.error(f"unknown parameter #{{{name}}} (defined: {defined})")
            text = str(self.parameters[name])
            added += len(text) - len(match.group(0))
            if len(value) + added > MAX_PROPERTY_CHARS:
                raise place.error(f"with its parameters substituted the value is longer than the "
                                  f"{MAX_PROPERTY_CHARS} characters a property may hold")
            return text

        result = _PARAMETER.sub(replace, value)
        self.substituted += max(added, 0)
        if self.substituted > MAX_EXPANDED_CHARS:
            raise place.error(f"substituting parameters adds more than {MAX_EXPANDED_CHARS} characters "
                              f"to the flow, the most it may grow")
        return result

    # ports and connections

    def _ports(self, raw, place: _Place, processors: dict) -> dict[str, PortDefinition]:
        ports: dict[str, PortDefinition] = {}
        for index, item in enumerate(_list(raw, place, "a list of ports")):
            here = place.at(index)
            item = _mapping(item, here, f"a mapping (a port with an id and a type in {PORT_KINDS})")
            port_id = _text(item.get("id"), here.at("id"), "text (the port's id)")
            kind = item.get("type")
            if kind not in PORT_KINDS:
                raise here.at("type").error(f"expected one of {', '.join(PORT_KINDS)}, got {_kind(kind)}")
            if port_id in processors or port_id in ports:
                raise here.at("id").error(f"id {_short(port_id)!r} is already used by a processor or port: "
                                          f"give each its own")
            ports[port_id] = PortDefinition(port_id, kind)
        return ports

    def _connections(self, raw, place: _Place, processors: dict, ports: dict) -> tuple:
        connections = []
        seen = set()
        for index, item in enumerate(_list(raw, place, "a list of connections")):
            connection = self._connection(item, place.at(index), processors, ports)
            if connection.id in seen:
                raise place.at(index).error(f"duplicate connection id {_short(connection.id)!r}: give each "
                                            f"connection its own id")
            seen.add(connection.id)
            connections.append(connection)
        return tuple(connections)

    def _connection(self, raw, place: _Place, processors: dict, ports: dict) -> ConnectionDefinition:
        raw = _mapping(raw, place, "a mapping (a connection with a source and a destination)")
        _refuse_unknown_keys(raw, _CONNECTION_KEYS, place)
        _text(raw.get("name"), place.at("name"), required=False)
        src = _connection_end(raw.get("source"), "source", place, processors, ports)
        dst = _connection_end(raw.get("destination"), "destination", place, processors, ports)
        if src in ports and ports[src].kind != "input":
            raise place.at("source").error(f"only an input port can be a connection's source; {_short(src)!r} is "
                                           f"an {ports[src].kind} port")
        if dst in ports and ports[dst].kind == "input":
            raise place.at("destination").error(f"an input port cannot be a connection's destination ({_short(dst)!r})")
        relationships = _connected_relationships(raw.get("relationships"), processors.get(src),
                                                 place.at("relationships"))
        default_id = f"{src}/{'+'.join(relationships)}/{dst}".replace("//", "/")
        connection_id = _text(raw.get("id"), place.at("id"), "text (the connection's id)", required=False)
        values = {"prioritizers": _prioritizers(raw.get("prioritizers"), place.at("prioritizers"))}
        values.update(self._back_pressure(raw.get("back_pressure"), place.at("back_pressure")))
        values.update(_swap(raw, place))
        if "expiration" in raw:
            values["expiration_ms"] = int(_duration(raw["expiration"], place.at("expiration")) * 1000)
        return ConnectionDefinition(connection_id or default_id, src, relationships, dst, **values)

    def _back_pressure(self, raw, place: _Place) -> dict:
        pressure = _mapping(raw, place, "a mapping with object_count and/or data_size")
        _refuse_unknown_keys(pressure, _BACK_PRESSURE_KEYS, place)
        values = {}
        if "object_count" in pressure:
            values["back_pressure_count"] = _count(pressure["object_count"], place.at("object_count"), 0)
        if "data_size" in pressure:
            here = place.at("data_size")
            values["back_pressure_size"] = _size(self._substitute(pressure["data_size"], here), here)
        return values


def _dynamic_property(cls, value, place: _Place):
    if not cls.dynamic_properties:
        known = ", ".join(d.name for d in cls.properties) or "none"
        raise place.error(f"{cls.type_name or cls.__name__} has no such property (it has: {known})")
    if value is None:
        raise place.error("expected a value (text or an expression), got nothing (null)")
    try:
        return compile_expression(str(value))
    except (ExpressionError, ValueError) as error:
        raise place.error(_short(str(error), 300)) from None
    except RecursionError:
        raise place.error("the expression is nested too deeply to read") from None


def _convert(descriptor, value, place: _Place):
    kind = descriptor.kind
    try:
        converted = descriptor.convert(value)
    except (ValueError, ExpressionError) as error:
        raise place.error(f"wrong value for {_article(kind)} property: {_short(str(error), 300)}") from None
    except OverflowError:
        raise place.error(f"wrong value for {_article(kind)} property: {_kind(value)} is too large") from None
    except RecursionError:
        raise place.error(f"wrong value for {_article(kind)} property: nested too deeply to read") from None
    if isinstance(converted, float) and not math.isfinite(converted):
        raise place.error(f"wrong value for {_article(kind)} property: expected a finite number, got {_kind(value)}")
    if isinstance(converted, int) and not isinstance(converted, bool) and abs(converted) >= _MAX_INTEGER:
        raise place.error(f"wrong value for {_article(kind)} property: expected a number within 64 bits")
    return converted


def _scheduling(raw, place: _Place) -> SchedulingDefinition:
    values = {}
    for key, value in _mapping(raw, place, "a mapping of scheduling settings").items():
        if key not in _SCHEDULING_KEYS:
            raise place.at(key).error(f"unknown scheduling key (known: {', '.join(_SCHEDULING_KEYS)})")
        if key == "concurrent_tasks":
            values["concurrent_tasks"] = _count(value, place.at(key), 1)
        else:
            values[_SCHEDULING_KEYS[key]] = _duration(value, place.at(key))
    return SchedulingDefinition(**values)


def _auto_terminate(raw, relationships: tuple, place: _Place) -> tuple[str, ...]:
    names = _list(raw, place.at("auto_terminate"), "a list of relationships")
    for index, name in enumerate(names):
        _text(name, place.at("auto_terminate", index), "text (a relationship)")
        if name not in relationships:
            raise place.error(f"auto_terminate names unknown relationship {_short(name)!r} "
                              f"(it has {_listing(relationships)})")
    return tuple(names)


def _connection_end(value, end: str, place: _Place, processors: dict, ports: dict) -> str:
    value = _text(value, place.at(end), "text (a processor's or port's id)")
    if value not in processors and value not in ports:
        raise place.error(f"{end} {_short(value)!r} is neither a processor nor a port")
    return value


def _connected_relationships(raw, source, place: _Place) -> tuple[str, ...]:
    """The relationships of `source` (None: a port) that a connection takes: those named,
    or `success` when none are and it has one."""
    names = _names(raw, place, "relationship") if raw is not None else []
    if source is None:
        return ("",)
    if not names:
        if "success" not in source.relationships:
            raise place.error(f"name the relationships of {_short(source.id)!r} to connect (it has "
                              f"{_listing(source.relationships)})")
        names = ["success"]
    for index, name in enumerate(names):
        if name not in source.relationships:
            raise place.at(index).error(f"unknown relationship {_short(name)!r} of {_short(source.id)!r} (it has "
                                        f"{_listing(source.relationships)})")
    return tuple(names)


def _prioritizers(raw, place: _Place) -> tuple[str, ...]:
    names = tuple(_names(raw, place, "prioritizer name"))
    try:
        key_function(names)
    except ValueError as error:
        raise place.error(_short(str(error), 200)) from None
    return names


def _swap(raw: dict, place: _Place) -> dict:
    values = {key: _count(raw[key], place.at(key), 1) for key in ("swap_threshold", "swap_batch") if key in raw}
    threshold = values.get("swap_threshold", DEFAULT_SWAP_THRESHOLD)
    batch = values.get("swap_batch", min(DEFAULT_SWAP_BATCH, threshold))
    if batch > threshold:
        raise place.at("swap_batch").error(f"swap_batch ({batch}) cannot exceed swap_threshold ({threshold})")
    values["swap_batch"] = batch
    return values


def _check_every_relationship_goes_somewhere(processors: dict, connections: tuple, place: _Place) -> None:
    connected: dict[str, set] = {}
    for connection in connections:
        connected.setdefault(connection.source, set()).update(connection.relationships)
    for definition in processors.values():
        for relationship in definition.relationships:
            if relationship not in connected.get(definition.id, ()) and relationship not in definition.auto_terminate:
                raise _Place(place.source, processor=definition.id).error(
                    f"relationship {_short(relationship)!r} is neither connected nor auto-terminated "
                    f"(add a connection, or list it under auto_terminate)")
