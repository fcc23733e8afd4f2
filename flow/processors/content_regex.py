"""ExtractText and RouteOnContent: regular expressions over the head of a FlowFile's content.

ExtractText follows NiFi's ExtractText: each dynamic property names an attribute and
holds a pattern; the pattern is searched for in the content, and its groups become
attributes (`name`, `name.0`, `name.1`, ...; `name.<group>` with named groups). A
FlowFile that gained an attribute goes to `matched`, any other to `unmatched`.
RouteOnContent follows NiFi's RouteOnContent: each dynamic property names a
relationship and holds a pattern; the FlowFile goes to every relationship whose pattern
matches (the first gets the FlowFile, each other one a clone), with the relationship
in `RouteOnContent.Route`, or to `unmatched`.

Patterns are Python regular expressions (`re`), not Java's; a named group may be
written as in Java, `(?<name>...)` (and `\\k<name>`), or as in Python, `(?P<name>...)`
(`flow.bounded_regex.python_syntax`). Both processors read at most their buffer size of the content
(`maximum_buffer_size`, `content_buffer_size`; 1 MB by default) and ignore the rest, as
NiFi does, and decode it with `character_set`, bytes that do not decode becoming U+FFFD.
As with Java's defaults, `\\w`, `\\d`, `\\s` and `\\b` are ASCII and case-insensitive
matching folds ASCII letters only: patterns run with `re.ASCII`, so one cannot turn on
`(?u)` itself.

Where Custody deliberately differs from NiFi:

- A pattern's backtracking is bounded before it runs (`flow.bounded_regex`): one whose
  worst case on the content at hand is over `CONTENT_REGEX_STEPS` steps or
  `REGEX_STACK_DEPTH` stack entries (nested or adjacent quantifiers, or a search for a
  quantified pattern over a long content) is refused, not run for minutes on an engine
  thread. NiFi has no `failure` relationship here, so the FlowFile goes to `unmatched`
  unchanged but for `regex.error`, which says which pattern was refused and why,
  whatever the other patterns would have done (a partial extraction or routing would
  pass for a complete one); the processor logs it, at most once a minute. Anchoring
  the pattern, or a smaller buffer size, lets it run.
- Content that cannot be read (`UnreadableContent`) sends nobody to `unmatched`, which
  would say the content was read and did not match: the FlowFile goes back to its
  queue, penalized, with the reason in `content.error`, as an expression failure does
  under `expression_failure: retry` (`expression_failures`); a stateless flow, which
  has nowhere to keep it, fails its trigger.
- ExtractText: Java's canonical equivalence and Unicode predefined character classes
  have no Python counterpart, so both take only `false`, refused otherwise when the
  flow is loaded. Unicode-aware case folding is honoured by leaving `re.ASCII` off,
  which would make `\\w`, `\\d`, `\\s` and `\\b` Unicode too: a pattern using them is
  refused with it. Python ends lines at `\\n` only, as Java does in Unix lines mode, so
  `unix_lines` changes nothing (with it off, Java also ends lines at `\\r`).
  With named groups, the whole match set as `name` is cut to
  `maximum_capture_group_length` like every other value (NiFi sets it uncut).
- RouteOnContent: a pattern may embed expressions (`${attribute}`); as in NiFi their
  values are matched literally. One whose expression fails on the FlowFile sends it to
  `unmatched` with `regex.error`, as a refused pattern does.
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..bounded_regex import REGEX_STACK_DEPTH, UNBOUNDED, PatternRefused, bounded
from ..errors import ExpressionError, UnreadableContent
from ..expression import Expression, compile_expression, escaped_dollars
from ..processor import ProcessContext, Processor, PropertyDescriptor

if TYPE_CHECKING:  # typeshed types re's parser under the names it had before 3.11, the same modules
    import sre_constants as sre
    import sre_parse

    from ..session import ProcessSession
else:
    from re import _constants as sre  # the parser's node names; stable since Python 3.11
    from re import _parser as sre_parse

BATCH = 100
# The worst case one pattern may take on one FlowFile's content: about a tenth of a
# second of an engine thread (Python's matcher runs some 700 million estimated steps a
# second). The expression language's budget (5 million) would refuse a search for
# `id=(\d+)` in anything over two thousand characters.
CONTENT_REGEX_STEPS = 100_000_000
MAX_BUFFER_BYTES = (1 << 31) - 1  # NiFi reads the buffer into one Java array
MAX_GROUPS = 40  # NiFi's ExtractText refuses a pattern of more capturing groups
ERROR_ATTRIBUTE = "regex.error"
CONTENT_ERROR_ATTRIBUTE = "content.error"
ROUTE_ATTRIBUTE = "RouteOnContent.Route"
UNMATCHED = "unmatched"
MATCH_EXACTLY = "content_must_match_exactly"
CONTAIN_MATCH = "content_must_contain_match"


def _flag(name: str, description: str, default: bool = False) -> PropertyDescriptor:
    return PropertyDescriptor(name, "boolean", default=default, description=description)


def _character_set(default: str = "UTF-8") -> PropertyDescriptor:
    return PropertyDescriptor("character_set", default=default, description="the encoding the content is read in")


def _buffer(name: str) -> PropertyDescriptor:
    return PropertyDescriptor(
        name,
        "size",
        default="1 MB",
        minimum=0,
        maximum=MAX_BUFFER_BYTES,
        description="how much of the content the patterns see; the rest is ignored",
    )


def _character_set_problem(properties: Mapping) -> list[tuple[str, str]]:
    name = properties.get("character_set", "UTF-8")
    try:
        codecs.lookup(name)
    except LookupError:
        return [("character_set", f"unknown character set {name!r}")]
    return []


class _Refused(Exception):
    """A pattern will not run on this FlowFile: `reason` says which and why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def fitted(source: str, subject: str, *, search: bool) -> re.Pattern:
    """`source` compiled, once its worst case on `subject` fits the budget (`search`:
    tried at every position). Raises `PatternRefused` saying why not."""
    guarded = bounded(source)
    estimate = guarded.estimate(len(subject), search=search)
    if estimate.depth > REGEX_STACK_DEPTH:
        raise PatternRefused(
            f"pattern {source!r} could hold {estimate.depth:,} backtracking entries at once on {len(subject):,} "
            f"characters, past the limit of {REGEX_STACK_DEPTH:,}: repeat a character class rather than a group"
        )
    if estimate.steps > CONTENT_REGEX_STEPS:
        many = f"{estimate.steps:,}" if estimate.steps < UNBOUNDED else "more than 10**24"
        raise PatternRefused(
            f"pattern {source!r} could backtrack for {many} steps on {len(subject):,} characters of content, past "
            f"the budget of {CONTENT_REGEX_STEPS:,}: anchor it, avoid nested or adjacent quantifiers that can "
            "match the same text, or lower the buffer size"
        )
    return guarded.compiled


def head_text(session: ProcessSession, flowfile, limit: int, character_set: str) -> str:
    """The first `limit` bytes of the content as text, bytes that do not decode U+FFFD."""
    return read_head(session, flowfile, limit).decode(character_set, errors="replace")


def read_head(session: ProcessSession, flowfile, limit: int) -> bytes:
    """The first `limit` bytes of the content, reading no further."""
    with session.read(flowfile) as source:
        head = b""
        while len(head) < limit and (chunk := source.read(limit - len(head))):
            head += chunk
        return head


class _SetAside:
    """What one run did not match normally: FlowFiles whose pattern was refused (to
    `unmatched`, with `regex.error`) and FlowFiles whose content cannot be read (back to
    their queue, penalized, with `content.error`); one log line per kind and run, at most
    one a minute (`ProcessContext.limited_log`)."""

    def __init__(self, processor_id: str, context: ProcessContext, session: ProcessSession):
        self._id = processor_id
        self._context = context
        self._session = session
        self._refused: list[str] = []
        self._unreadable: list[str] = []

    def refused(self, flowfile, reason: str, extra: Mapping[str, str] | None = None) -> None:
        session = self._session
        flowfile = session.put_all_attributes(flowfile, {ERROR_ATTRIBUTE: reason, **(extra or {})})
        session.route(flowfile, UNMATCHED, reason)
        session.transfer(flowfile, UNMATCHED)
        self._refused.append(f"FlowFile {flowfile.id}: {reason}")

    def unreadable(self, flowfile, error: UnreadableContent) -> None:
        if self._context.stateless:
            raise error
        session = self._session
        flowfile = session.penalize(session.put_attribute(flowfile, CONTENT_ERROR_ATTRIBUTE, error.reason))
        session.transfer(flowfile)  # back to its queue: unmatched would say it was read
        self._unreadable.append(f"FlowFile {flowfile.id}: {error.reason}")

    def log(self) -> None:
        limited = self._context.limited_log
        if self._refused:
            limited.warning(
                f"{self._id}:refused-pattern",
                "%s: %d FlowFile(s) routed to unmatched because a pattern was refused on their content, the "
                "reason in %s; first: %s",
                self._id,
                len(self._refused),
                ERROR_ATTRIBUTE,
                self._refused[0],
            )
        if self._unreadable:
            limited.error(
                f"{self._id}:unreadable-content",
                "%s: %d FlowFile(s) whose content cannot be read were penalized and left in their queue, the "
                "reason in %s; first: %s. `custody content fsck` names the bad files; restore them, or drop the "
                "FlowFiles",
                self._id,
                len(self._unreadable),
                CONTENT_ERROR_ATTRIBUTE,
                self._unreadable[0],
            )


# -- ExtractText ------------------------------------------------------------------


def _sub_patterns(value):
    """The parsed sub-patterns anywhere in a node's argument."""
    if isinstance(value, sre_parse.SubPattern):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _sub_patterns(item)


def uses_predefined_classes(tree) -> bool:
    """True when the parsed pattern holds \\w, \\d, \\s (or their negations) or \\b, \\B:
    what `re.ASCII` changes besides case folding."""
    for op, argument in tree:
        if op is sre.CATEGORY or (op is sre.AT and argument in (sre.AT_BOUNDARY, sre.AT_NON_BOUNDARY)):
            return True
        if op is sre.IN and any(item_op is sre.CATEGORY for item_op, _ in argument):
            return True
        if any(uses_predefined_classes(child) for child in _sub_patterns(argument)):
            return True
    return False


def extract_text_source(text: str, properties: Mapping) -> str:
    """The Python pattern ExtractText runs for the dynamic property `text`: the flags
    properties as inline flags before it (the escaped text with `literal`)."""
    flags = "" if properties.get("unicode_case") else "a"
    flags += "i" if properties.get("case_insensitive") else ""
    flags += "s" if properties.get("dotall") else ""
    flags += "m" if properties.get("multiline") else ""
    if properties.get("literal"):
        # Java's literal mode keeps only case folding; the other flags mean nothing to an escaped text.
        flags = flags.replace("s", "").replace("m", "")
        text = re.escape(text)
    elif properties.get("comments"):
        flags += "x"
    return f"(?{flags}){text}" if flags else text


def extracted(
    name: str,
    matches,
    *,
    include_zero: bool,
    repeating: bool,
    named: bool,
    longest: int,
) -> dict[str, str]:
    """The attributes ExtractText sets from `matches` (the pattern's matches, in order)
    for the dynamic property `name`, as NiFi's does: without named groups, group i of
    the first match as `name.i` (from 0 with `include_zero`) and group 1 as `name`;
    each later match numbered on (`name.(i + groups before it)`, from group 1). With
    named groups, `name.<group>` (`name.<group>.k` for the k-th later match) and the
    whole first match as `name` with `include_zero`. A group that matched nothing is
    left out; every value is cut to `longest` characters."""
    results: dict[str, str] = {}
    taken = 0
    for match in matches:
        groups = match.re.groups
        if named:
            for group in sorted(match.re.groupindex, key=match.re.groupindex.__getitem__):
                value = match.group(group)
                if value:
                    results[f"{name}.{group}" + (f".{taken}" if taken else "")] = value[:longest]
            if include_zero and not taken:
                results[name] = match.group(0)[:longest]
            taken += 1
        else:
            for index in range(0 if include_zero and not taken else 1, groups + 1):
                value = match.group(index)
                if value:
                    results[f"{name}.{index + taken}"] = value[:longest]
                    if index == 1 and not taken:
                        results[name] = value[:longest]
            taken += groups
            if not groups:  # later matches of a pattern without groups add nothing
                break
        if not repeating:
            break
    return results


class ExtractText(Processor):
    """Each dynamic property is an attribute name whose value is a Python regular
    expression, searched for in the content (see the module's docstring)."""

    type_name = "ExtractText"
    description = "Sets attributes from the groups of regular expressions searched for in the content."
    properties = (
        _character_set(),
        _buffer("maximum_buffer_size"),
        PropertyDescriptor(
            "maximum_capture_group_length",
            "integer",
            default=1024,
            minimum=1,
            description="the most characters an attribute set from a group holds; the rest is cut",
        ),
        _flag("canonical_equivalence", "Java's CANON_EQ; Python has none, so only false"),
        _flag("case_insensitive", "match letters of either case (re.IGNORECASE)"),
        _flag("comments", "whitespace and # comments in the pattern are ignored (re.VERBOSE)"),
        _flag("dotall", "'.' matches a line end too (re.DOTALL)"),
        _flag("literal", "the pattern is matched as plain text"),
        _flag("multiline", "'^' and '$' match at line ends too (re.MULTILINE)"),
        _flag("unicode_case", "case-insensitive matching folds non-ASCII letters too"),
        _flag("unicode_character_class", "Java's UNICODE_CHARACTER_CLASS; no Python equivalent, so only false"),
        _flag("unix_lines", "only \\n ends a line; Python's behaviour either way"),
        _flag("include_capture_group_0", "set name.0 to the whole match", default=True),
        _flag("repeating_capture_group", "capture every match, numbered on, not just the first"),
        _flag("named_groups", "set name.<group> for named groups (every group must be named)"),
    )
    relationships = ("matched", UNMATCHED)
    dynamic_properties = True

    @classmethod
    def validate(cls, properties, dynamic):
        problems = _character_set_problem(properties)
        for name, reason in (
            ("canonical_equivalence", "Python's re has no canonical equivalence"),
            ("unicode_character_class", "Python's Unicode \\w, \\d, \\s and \\b differ from Java's"),
        ):
            if properties.get(name):
                problems.append((name, f"only false is supported: {reason}"))
        for name, expression in dynamic.items():
            problem = cls._pattern_problem(expression.text, properties)
            if problem is not None:
                problems.append((name, problem))
        return problems

    @staticmethod
    def _pattern_problem(text: str, properties: Mapping) -> str | None:
        try:
            guarded = bounded(extract_text_source(text, properties))
        except PatternRefused as error:
            return str(error)
        compiled = guarded.compiled
        if compiled.groups > MAX_GROUPS:
            return f"the pattern has {compiled.groups} capturing groups; at most {MAX_GROUPS} are allowed"
        if not compiled.groups and not properties.get("include_capture_group_0", True):
            return "the pattern has no capturing group, and include_capture_group_0 is false: it could set nothing"
        if properties.get("named_groups") and len(compiled.groupindex) != compiled.groups:
            return (
                f"named_groups is true but only {len(compiled.groupindex)} of the pattern's {compiled.groups} "
                "groups are named (?P<name>...)"
            )
        if properties.get("unicode_case") and uses_predefined_classes(guarded.tree):
            return (
                "with unicode_case, Python would match \\w, \\d, \\s and \\b on Unicode where Java keeps them "
                "ASCII: spell them as classes ([A-Za-z0-9_], [0-9], ...) or turn unicode_case off"
            )
        return None

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        sources = {name: extract_text_source(e.text, context.properties) for name, e in context.dynamic.items()}
        batch = session.get_batch(BATCH)
        session.prefetch(batch)
        aside = _SetAside(self.id, context, session)
        for flowfile in batch:
            try:
                text = head_text(session, flowfile, context["maximum_buffer_size"], context["character_set"])
            except UnreadableContent as error:
                aside.unreadable(flowfile, error)
                continue
            try:
                results = self._extract(context, sources, text)
            except _Refused as refused:
                aside.refused(flowfile, refused.reason)
                continue
            if results:
                session.transfer(session.put_all_attributes(flowfile, results), "matched")
            else:
                session.transfer(flowfile, UNMATCHED)
        aside.log()

    @staticmethod
    def _extract(context: ProcessContext, sources: Mapping[str, str], text: str) -> dict[str, str]:
        """Every property's attributes; `_Refused` when a pattern may not run on `text`."""
        results: dict[str, str] = {}
        for name, source in sources.items():
            try:
                pattern = fitted(source, text, search=True)
            except PatternRefused as error:
                raise _Refused(f"property {name!r}: {error}") from None
            results.update(
                extracted(
                    name,
                    pattern.finditer(text),
                    include_zero=context["include_capture_group_0"],
                    repeating=context["repeating_capture_group"],
                    named=context["named_groups"],
                    longest=context["maximum_capture_group_length"],
                )
            )
        return results


# -- RouteOnContent ---------------------------------------------------------------


def _expression_end(text: str, start: int) -> int:
    """Where the expression `${...}` at `start` of `text` (a valid template) ends: the
    first closing brace that completes it."""
    for end in range(start + 3, len(text) + 1):
        if text[end - 1] != "}":
            continue
        try:
            compile_expression(text[start:end])
        except ExpressionError:
            continue
        return end
    raise ExpressionError(f"unterminated expression at position {start} of {text!r}")


@functools.lru_cache(maxsize=256)
def template_parts(text: str) -> tuple[str | Expression, ...]:
    """`text` (a route's value) as its literal pieces, escaped dollars read as the
    expression language reads them, and its expressions, each compiled on its own so
    that its value can be quoted."""
    parts: list[str | Expression] = []
    literal: list[str] = []
    position = 0
    while position < len(text):
        if text[position] == "$":
            dollars, position, expression_follows = escaped_dollars(text, position)
            literal.append(dollars)
            if not expression_follows:
                continue
            end = _expression_end(text, position)
            if "".join(literal):
                parts.append("".join(literal))
                literal = []
            parts.append(compile_expression(text[position:end]))
            position = end
        else:
            literal.append(text[position])
            position += 1
    if literal:
        parts.append("".join(literal))
    return tuple(parts)


def route_source(expression: Expression, flowfile) -> str:
    """The Python pattern of a route for `flowfile`: its expressions' values escaped, as
    NiFi quotes them, and `re.ASCII` for Java's ASCII classes. Raises `ExpressionError`."""
    if expression.is_literal:
        return "(?a)" + expression.evaluate()
    return "(?a)" + "".join(
        part if isinstance(part, str) else re.escape(part.evaluate(flowfile))
        for part in template_parts(expression.text)
    )


class RouteOnContent(Processor):
    """Each dynamic property is a relationship whose value is a Python regular
    expression over the content (see the module's docstring)."""

    type_name = "RouteOnContent"
    description = "Routes to every relationship whose regular expression matches the content, or to unmatched."
    properties = (
        PropertyDescriptor(
            "match_requirement",
            "choice",
            default=MATCH_EXACTLY,
            choices=(MATCH_EXACTLY, CONTAIN_MATCH),
            description="the whole content (up to the buffer size) must match, or a part of it",
        ),
        _character_set(),
        _buffer("content_buffer_size"),
    )
    relationships = (UNMATCHED,)
    dynamic_properties = True
    relationships_note = "and one per dynamic property, named after it"

    @classmethod
    def relationships_for(cls, properties, dynamic):
        return tuple(dynamic) + (UNMATCHED,)

    @classmethod
    def validate(cls, properties, dynamic):
        problems = _character_set_problem(properties)
        for name, expression in dynamic.items():
            if name == UNMATCHED:
                problems.append((name, "a route cannot be called unmatched (rename the route)"))
            elif expression.is_literal:
                try:
                    bounded(route_source(expression, None))
                except PatternRefused as error:
                    problems.append((name, str(error)))
        return problems

    def on_trigger(self, context: ProcessContext, session: ProcessSession) -> None:
        search = context["match_requirement"] == CONTAIN_MATCH
        batch = session.get_batch(BATCH)
        session.prefetch(batch)
        aside = _SetAside(self.id, context, session)
        for flowfile in batch:
            try:
                text = head_text(session, flowfile, context["content_buffer_size"], context["character_set"])
            except UnreadableContent as error:
                aside.unreadable(flowfile, error)
                continue
            try:
                targets = self._targets(context.dynamic, flowfile, text, search=search)
            except _Refused as refused:
                aside.refused(flowfile, refused.reason, {ROUTE_ATTRIBUTE: UNMATCHED})
                continue
            for extra in targets[1:]:
                copy = session.put_attribute(session.clone(flowfile), ROUTE_ATTRIBUTE, extra)
                session.route(copy, extra)
                session.transfer(copy, extra)
            flowfile = session.put_attribute(flowfile, ROUTE_ATTRIBUTE, targets[0])
            session.route(flowfile, targets[0])
            session.transfer(flowfile, targets[0])
        aside.log()

    @staticmethod
    def _targets(routes: Mapping[str, Expression], flowfile, text: str, *, search: bool) -> list[str]:
        """The relationships `flowfile` goes to, in the routes' order; `_Refused` when a
        route's pattern may not run on `text`."""
        matched = []
        for name, expression in routes.items():
            try:
                pattern = fitted(route_source(expression, flowfile), text, search=search)
            except (PatternRefused, ExpressionError) as error:
                raise _Refused(f"route {name!r}: {error}") from None
            if (pattern.search(text) if search else pattern.fullmatch(text)) is not None:
                matched.append(name)
        return matched or [UNMATCHED]
