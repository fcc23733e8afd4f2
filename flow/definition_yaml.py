"""YAML text to data within the limits: a loader with yaml.SafeLoader's tags and types
whose composer refuses, as it reads, a document too deeply nested or too large once
its aliases are written out, a recursive alias, and a key given twice."""

from __future__ import annotations

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from .definition_limits import MAX_NESTING, _beyond_limits
from .definition_places import _short
from .errors import FlowDefinitionError

_YamlEvents: type | None
try:  # libyaml: the same events as the pure-Python parser, several times faster
    from yaml._yaml import CParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _YamlEvents = None
else:
    _YamlEvents = CParser


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
            raise ComposerError(
                None,
                None,
                f"alias *{_short(event.anchor)} is inside the node it names: a flow cannot contain itself",
                event.start_mark,
            )
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
                    raise ComposerError(
                        None, None, f"key {_short(key.value)!r} is given twice: give each key once", key.start_mark
                    )
                seen.add((key.tag, key.value))
        return node


class _FlowConstructor(SafeConstructor):
    def construct_object(self, node, deep=False):
        if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:int" and len(node.value) > 100:
            raise ConstructorError(
                None, None, f"an integer of {len(node.value)} digits: numbers in a flow fit in 64 bits", node.start_mark
            )
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
