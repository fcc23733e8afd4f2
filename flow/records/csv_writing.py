"""Writing CSV as NiFi's CSVRecordSetWriter does (Apache Commons CSV's printer).

A value is quoted by the quote mode:

    minimal      (NiFi's default) only a value that needs it: one that holds a line
                 break, the quote, the escape character or the separator; one whose first
                 character is at most `#` (a space, `!`, `"`, `#` or a control character:
                 Commons CSV is conservative about a parser reading these) or whose last
                 is at most a space; and an empty text that is a line's first value (or
                 a line of one empty value would be an empty line)
    all          every value but a null
    non_numeric  every value but a null and a number

Inside quotes a quote or an escape character is preceded by the escape character; with
no escape character (RFC 4180, Custody's default) a quote is doubled. NiFi's default
escape character is a backslash: `say "hi"` is written `"say \\"hi\\""`. A null is the null
string (empty by default), never quoted. With `trim_fields` (NiFi's default, not
Custody's) a value loses its leading and trailing characters at or below a space
before it is quoted. Lines end with a line feed; the header line (the field names)
follows the same rules.

`quote_text` is the rule for one text, `quote_column` the same for a column (Arrow's
compute, no Python per value); the tests hold them to each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc

from .. import java_text
from .errors import RecordError
from .writers import RecordSetWriter

QUOTE_MODES = ("minimal", "all", "non_numeric")
# Commons CSV's trim and its "at or below a space": the characters, and as a regex class
_TRIMMED_CHARACTERS = "".join(chr(code) for code in range(0x21))
_TRIMMED = "\\x00-\\x20"


@dataclass(frozen=True)
class CsvStyle:
    separator: str = ","
    quote: str = '"'
    escape: str = ""  # none: a quote is doubled
    quote_mode: str = "minimal"
    null_string: str = ""
    trim: bool = False

    @property
    def escaping(self) -> str:
        return self.escape or self.quote

    def _special(self) -> str:
        return _characters("\n\r" + self.quote + self.escaping + self.separator)


def quote_text(text: str, first: bool, style: CsvStyle, numeric: bool = False) -> str:
    """One non-null value's text as written, the first of its line or not."""
    if style.trim:
        text = text.strip(_TRIMMED_CHARACTERS)
    if style.quote_mode == "minimal":
        needed = (
            (not text and first)
            or (bool(text) and text[0] <= "#")
            or any(c in text for c in "\n\r" + style.quote + style.escaping + style.separator)
            or (bool(text) and text[-1] <= " ")
        )
    else:
        needed = not (style.quote_mode == "non_numeric" and numeric)
    if not needed:
        return text
    escaped = "".join(style.escaping + c if c in (style.quote, style.escaping) else c for c in text)
    return style.quote + escaped + style.quote


def quote_column(column: pa.Array, first: bool, style: CsvStyle, numeric: bool = False) -> pa.Array:
    """`quote_text` of each value of a text column; nulls stay null."""
    if style.trim:
        column = pc.replace_substring_regex(column, f"^[{_TRIMMED}]+|[{_TRIMMED}]+$", "")
    if style.quote_mode == "minimal":
        pattern = f"^[\\x00-\\x23]|[{style._special()}]|[{_TRIMMED}]$"
        needed = pc.match_substring_regex(column, pattern)
        if first:
            needed = pc.or_(needed, pc.equal(pc.utf8_length(column), 0))
    elif style.quote_mode == "non_numeric" and numeric:
        return column
    else:
        needed = pa.array([True] * len(column), pa.bool_())
    if not pc.any(needed).as_py():
        return column
    escaped = pc.replace_substring_regex(
        column, f"([{_characters(style.quote + style.escaping)}])", _replacement(style.escaping) + "\\1"
    )
    quoted = pc.binary_join_element_wise(style.quote, escaped, style.quote, "")
    return pc.if_else(needed, quoted, column)


def _characters(characters: str) -> str:
    """`characters` inside an RE2 character class, each as its code point."""
    return "".join(f"\\x{{{ord(c):x}}}" for c in dict.fromkeys(characters))


def _replacement(character: str) -> str:
    """`character` as RE2's replacement text takes it (a backslash is written twice)."""
    return "\\\\" if character == "\\" else character


def _numeric(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)


def _text(column: pa.Array) -> pa.Array:
    """A column's values as the text NiFi writes: Java's for decimals and nested values
    (`flow.java_text`), Arrow's cast to text for the rest."""
    if pa.types.is_nested(column.type):
        return java_text.nested_column(column)
    if pa.types.is_floating(column.type):
        return java_text.double_column(column)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return column
    return pc.cast(column, pa.string())


class CsvSetWriter(RecordSetWriter):
    """One CSV document: the header line (unless told not to), then each batch's lines."""

    def __init__(self, sink: BinaryIO, schema: pa.Schema, style: CsvStyle, header: bool):
        self.sink, self.schema, self.style = sink, schema, style
        self.numeric = [_numeric(field.type) for field in schema]
        self.header_due = header

    def _header(self) -> None:
        if self.header_due:
            self.header_due = False
            names = [quote_text(name, index == 0, self.style) for index, name in enumerate(self.schema.names)]
            self.sink.write((self.style.separator.join(names) + "\n").encode())

    def write(self, batch: pa.RecordBatch) -> None:
        self._header()
        if batch.num_rows == 0:
            return
        if batch.num_columns == 0:
            self.sink.write(b"\n" * batch.num_rows)
            return
        try:
            cells = [
                pc.fill_null(
                    quote_column(_text(column), index == 0, self.style, self.numeric[index]), self.style.null_string
                )
                for index, column in enumerate(batch.columns)
            ]
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
            raise RecordError(f"cannot be written as CSV: {error}") from None
        lines = pc.binary_join_element_wise(*cells, self.style.separator)
        text = pc.binary_join_element_wise(lines, "\n", "")  # each line and its line feed
        self.sink.write(_contiguous(text))

    def close(self) -> None:
        self._header()


def _contiguous(text: pa.Array) -> memoryview | bytes:
    """The bytes of a text column without nulls, one value after another."""
    if text.offset == 0 and not text.null_count:
        offsets = text.buffers()[1]
        data = text.buffers()[2]
        if offsets is not None and data is not None:
            ends = pa.Array.from_buffers(pa.int32(), len(text) + 1, [None, offsets])
            return memoryview(data)[ends[0].as_py() : ends[len(text)].as_py()]
    return b"".join(value.encode() for value in text.to_pylist())
