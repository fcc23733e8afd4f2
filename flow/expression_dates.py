"""Dates in the expression language, after NiFi 2's: `format()` and `toDate()` with the
patterns of Java's DateTimeFormatter (NiFi 2 moved its expression language to them from
SimpleDateFormat; the common letters mean the same in both).

A date is a number of milliseconds since the epoch, as `now()` returns it: `format`
writes one as text, `toDate` reads text into one, and arithmetic (`minus(86400000)`)
works on it as on any number. Without a time zone argument both use the machine's
local zone, as NiFi uses its JVM's.

Pattern letters (count is how many times a letter repeats):

| letter | field | text form |
|---|---|---|
| `y`, `u` | year (`yy`: two digits, read as 2000-2099) | |
| `Y` | week-based year (ISO weeks) | |
| `M`, `L` | month: `M` 1, `MM` 01, `MMM` Jan, `MMMM` January, `MMMMM` J | |
| `d`, `D` | day of month, day of year | |
| `Q`, `q` | quarter: `Q` 1, `QQQ` Q1, `QQQQ` 1st quarter | |
| `w` | week of week-based year (ISO weeks) | |
| `E` | day of week: `E` to `EEE` Tue, `EEEE` Tuesday, `EEEEE` T | |
| `a` | AM or PM | |
| `H`, `k`, `K`, `h` | hour 0-23, 1-24, 0-11, 1-12 | |
| `m`, `s` | minute, second | |
| `S` | fraction of the second, as many digits as letters | |
| `A`, `n`, `N` | millisecond of day, nanosecond of second, nanosecond of day | |
| `G` | era: AD (BC before year 1) | |
| `VV` | zone id (`Europe/Paris`) | |
| `z` | zone's short name (`CET`, `UTC`) | |
| `X`, `XX`, `XXX` | offset `+01`, `+0100`, `+01:00`; `Z` at zero | |
| `x`, `xx`, `xxx` | the same, `+00` at zero | |
| `Z` to `ZZZ`, `ZZZZ`, `ZZZZZ` | offset `+0100`, `GMT+01:00`, `+01:00` (`Z` at zero) | |

`'text'` is literal text (`''` a quote); any other character that is not a letter is
itself; `[` and `]` bound an optional section (written always, read when present).
A letter outside the table (and `#`, `{`, `}`) is an error when the pattern is read.

Reading is strict, as DateTimeFormatter's default: each field's digits as the pattern
gives them (`MM` exactly two, `M` one or two), names in English as written above. A
field the pattern leaves out is the epoch's (1970, January, the first, midnight), and a
pattern with an offset or zone reads the zone from the text.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from typing import NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MONTHS = tuple(calendar.month_name)[1:]
_DAYS = tuple(calendar.day_name)  # Monday first, as datetime.weekday()
_KNOWN = set("yuYMLdDQqwEaHkKhmsSAnNGVzXxZ")
_RESERVED = set("#{}")
_OFFSET = re.compile(r"(?:GMT|UTC|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?")
MAX_PATTERN = 256


class DatePatternError(ValueError):
    """A pattern DateTimeFormatter would refuse, or a letter Custody does not write."""


class _Field(NamedTuple):
    letter: str
    repeat: int


class _Optional(NamedTuple):
    parts: tuple


@lru_cache(maxsize=256)
def parse_pattern(pattern: str) -> tuple:
    """The pattern's parts: literal text, `_Field`s and `_Optional` sections."""
    if len(pattern) > MAX_PATTERN:
        raise DatePatternError(f"a date pattern has at most {MAX_PATTERN} characters")
    stack: list[list] = [[]]
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "'":
            end = index + 1
            text = []
            while True:
                if end >= len(pattern):
                    raise DatePatternError(f"unterminated quoted text in date pattern {pattern!r}")
                if pattern[end] == "'":
                    if end + 1 < len(pattern) and pattern[end + 1] == "'":
                        text.append("'")
                        end += 2
                        continue
                    break
                text.append(pattern[end])
                end += 1
            stack[-1].append("'" if end == index + 1 else "".join(text))
            index = end + 1
        elif char == "[":
            stack.append([])
            index += 1
        elif char == "]":
            if len(stack) == 1:
                raise DatePatternError(f"']' without '[' in date pattern {pattern!r}")
            section = stack.pop()
            stack[-1].append(_Optional(tuple(section)))
            index += 1
        elif char.isascii() and char.isalpha():
            count = 1
            while index + count < len(pattern) and pattern[index + count] == char:
                count += 1
            if char not in _KNOWN:
                raise DatePatternError(f"date pattern letter {char!r} is not supported (in {pattern!r})")
            _check_count(char, count, pattern)
            stack[-1].append(_Field(char, count))
            index += count
        elif char in _RESERVED:
            raise DatePatternError(f"{char!r} is reserved in date patterns (in {pattern!r}); quote it: '{char}'")
        else:
            stack[-1].append(char)
            index += 1
    if len(stack) != 1:
        raise DatePatternError(f"'[' without ']' in date pattern {pattern!r}")
    return tuple(stack[0])


def _check_count(letter: str, count: int, pattern: str) -> None:
    limits = {"M": 5, "L": 5, "Q": 5, "q": 5, "E": 5, "a": 1, "G": 5, "z": 4, "X": 5, "x": 5, "Z": 5, "S": 9}
    limits.update(dict.fromkeys("dHkKhms", 2), w=2, D=3)
    if count > limits.get(letter, 19):
        raise DatePatternError(f"too many {letter!r} letters ({count}) in date pattern {pattern!r}")
    if letter == "V" and count != 2:
        raise DatePatternError(f"the zone id is 'VV', not {'V' * count!r} (in {pattern!r})")


def zone(name: str | None) -> tzinfo | None:
    """A zone by Java's TimeZone id (`UTC`, `GMT+08:00`, `America/New_York`); None: local."""
    if name is None:
        return None
    text = name.strip()
    if text in ("UTC", "GMT", "UT", "Z", "Zulu"):
        return UTC
    match = _OFFSET.fullmatch(text)
    if match and text[:1] in "GUT+-":
        return _fixed(match)
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}") from None


def _fixed(match: re.Match) -> timezone:
    sign, hours, minutes, seconds = match.groups()
    delta = timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
    if delta > timedelta(hours=18):
        raise ValueError(f"offset {match.group(0)!r} is more than 18 hours")
    return timezone(-delta if sign == "-" else delta)


def format_millis(millis: int, pattern: str, zone_name: str | None = None) -> str:
    """`millis` since the epoch written by `pattern` in the zone (local when None)."""
    parts = parse_pattern(pattern)
    seconds, milli = divmod(int(millis), 1000)
    place = zone(zone_name)
    moment = datetime.fromtimestamp(seconds, place) if place else datetime.fromtimestamp(seconds).astimezone()
    moment = moment.replace(microsecond=milli * 1000)
    return "".join(_write(parts, moment))


def _write(parts: tuple, moment: datetime) -> list[str]:
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, _Optional):
            out.extend(_write(part.parts, moment))
        else:
            out.append(_field_text(part, moment))
    return out


def _number(value: int, count: int) -> str:
    return str(value).zfill(count)


def _field_text(field: _Field, moment: datetime) -> str:  # noqa: PLR0911, PLR0912 - one branch a letter
    letter, count = field
    if letter in "yu":
        year = moment.year if letter == "u" or moment.year > 0 else 1 - moment.year
        return _number(year % 100, 2) if count == 2 else _number(year, count)
    if letter == "Y":
        year = moment.isocalendar()[0]
        return _number(year % 100, 2) if count == 2 else _number(year, count)
    if letter in "ML":
        return _name(_MONTHS[moment.month - 1], count) if count >= 3 else _number(moment.month, count)
    if letter == "d":
        return _number(moment.day, count)
    if letter == "D":
        return _number(moment.timetuple().tm_yday, count)
    if letter in "Qq":
        quarter = (moment.month - 1) // 3 + 1
        return {3: f"Q{quarter}", 4: f"{quarter}{_ordinal(quarter)} quarter", 5: str(quarter)}.get(
            count, _number(quarter, count)
        )
    if letter == "w":
        return _number(moment.isocalendar()[1], count)
    if letter == "E":
        return _name(_DAYS[moment.weekday()], max(count, 3))
    if letter == "a":
        return "AM" if moment.hour < 12 else "PM"
    if letter == "H":
        return _number(moment.hour, count)
    if letter == "k":
        return _number(moment.hour or 24, count)
    if letter == "K":
        return _number(moment.hour % 12, count)
    if letter == "h":
        return _number(moment.hour % 12 or 12, count)
    if letter == "m":
        return _number(moment.minute, count)
    if letter == "s":
        return _number(moment.second, count)
    if letter == "S":
        return f"{moment.microsecond:06d}000"[:count]
    if letter == "A":
        day = moment.hour * 3_600_000 + moment.minute * 60_000 + moment.second * 1000 + moment.microsecond // 1000
        return _number(day, count)
    if letter == "n":
        return _number(moment.microsecond * 1000, count)
    if letter == "N":
        day = (moment.hour * 3600 + moment.minute * 60 + moment.second) * 10**9 + moment.microsecond * 1000
        return _number(day, count)
    if letter == "G":
        era = "AD" if moment.year > 0 else "BC"
        return {4: "Anno Domini" if era == "AD" else "Before Christ", 5: era[0]}.get(count, era)
    if letter == "V":
        if moment.tzinfo is UTC:
            return "UTC"
        return getattr(moment.tzinfo, "key", None) or _offset(moment, colon=True, zulu=True)
    if letter == "z":
        return moment.tzname() or _offset(moment, colon=True, zulu=True)
    if letter in "Xx":
        zulu = letter == "X"
        if count == 1:
            return _offset(moment, colon=False, zulu=zulu, minutes="optional")
        return _offset(moment, colon=count % 2 == 1, zulu=zulu, seconds="optional" if count >= 4 else "never")
    # Z
    if count <= 3:
        return _offset(moment, colon=False, zulu=False)
    if count == 4:
        offset = _offset(moment, colon=True, zulu=True)
        return "GMT" if offset == "Z" else f"GMT{offset}"
    return _offset(moment, colon=True, zulu=True, seconds="optional")


def _name(name: str, count: int) -> str:
    return {3: name[:3], 4: name, 5: name[0]}[count]


def _ordinal(number: int) -> str:
    return {1: "st", 2: "nd", 3: "rd"}.get(number, "th")


def _offset(moment: datetime, *, colon: bool, zulu: bool, minutes: str = "always", seconds: str = "never") -> str:
    delta = moment.utcoffset() or timedelta(0)
    total = int(delta.total_seconds())
    if total == 0 and zulu:
        return "Z"
    sign = "-" if total < 0 else "+"
    hours, rest = divmod(abs(total), 3600)
    mins, secs = divmod(rest, 60)
    text = f"{sign}{hours:02d}"
    separator = ":" if colon else ""
    if minutes == "always" or mins or secs:
        text += f"{separator}{mins:02d}"
    if seconds == "optional" and secs:
        text += f"{separator}{secs:02d}"
    return text


def parse_millis(text: str, pattern: str, zone_name: str | None = None) -> int:
    """The milliseconds since the epoch that `text` names, read by `pattern`; the zone
    (local when None) applies where the text gives no offset or zone."""
    regex, fields = _reader(pattern)
    match = regex.fullmatch(text)
    if match is None:
        raise ValueError(f"{text[:100]!r} does not match the date pattern {pattern!r}")
    values: dict[str, object] = {}
    for group, letter in fields.items():
        value = match.group(group)
        if value is not None:
            values[letter] = value
    return _to_millis(values, text, zone_name)


@lru_cache(maxsize=256)
def _reader(pattern: str) -> tuple[re.Pattern, dict[str, str]]:
    fields: dict[str, str] = {}
    regex = "".join(_read_parts(parse_pattern(pattern), fields))
    return re.compile(regex), fields


def _read_parts(parts: tuple, fields: dict[str, str]) -> list[str]:
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(re.escape(part))
        elif isinstance(part, _Optional):
            out.append(f"(?:{''.join(_read_parts(part.parts, fields))})?")
        else:
            group = f"g{len(fields)}"
            fields[group] = part.letter + ("2" if part.letter in "yuY" and part.repeat == 2 else "")
            if part.letter in "ML" and part.repeat >= 3:
                fields[group] = "Mtext"
            out.append(f"(?P<{group}>{_field_regex(part)})")
    return out


def _field_regex(field: _Field) -> str:  # noqa: PLR0911 - one branch a kind of field
    letter, count = field
    if letter in "ML" and count >= 3:
        names = [_name(month, count) for month in _MONTHS]
        return "|".join(re.escape(name) for name in dict.fromkeys(names))
    if letter == "E":
        return "|".join(re.escape(_name(day, max(count, 3))) for day in _DAYS)
    if letter == "a":
        return "AM|PM"
    if letter == "G":
        return "AD|BC|Anno Domini|Before Christ|A|B"
    if letter in "Qq" and count >= 3:
        return r"Q[1-4]|[1-4](?:st|nd|rd|th) quarter|[1-4]"
    if letter == "V":
        return r"[A-Za-z][A-Za-z0-9_/+\-]*"
    if letter == "z":
        return r"[A-Za-z][A-Za-z0-9_/+\-:]*"
    if letter in "XxZ":
        return r"Z|GMT|(?:GMT)?[+-]\d{2}(?::?\d{2}){0,2}"
    if letter == "S":
        return rf"\d{{{count}}}"
    if letter in "yuY" and count != 2:
        return r"[+-]?\d{4,9}" if count == 4 else rf"\d{{{count},9}}"
    if count == 1:
        return r"\d{1,19}" if letter in "AnN" else r"\d{1,2}" if letter not in "D" else r"\d{1,3}"
    return rf"\d{{{count}}}" if letter not in "AnN" else rf"\d{{{count},19}}"


def _to_millis(values: dict[str, object], text: str, zone_name: str | None) -> int:
    def number(letter: str, default: int) -> int:
        value = values.get(letter)
        return int(str(value)) if value is not None else default

    year = number("y", number("u", 1970))
    if "y2" in values or "u2" in values:
        year = 2000 + int(str(values.get("y2") or values.get("u2")))
    month = number("M", number("L", 1))
    if "Mtext" in values:
        written = str(values["Mtext"])
        month = next(i for i, name in enumerate(_MONTHS, 1) if written in (name, name[:3], name[0]))
    if "H" in values:
        hour = number("H", 0)
    elif "h" in values or "K" in values:
        hour = int(str(values.get("h") or values.get("K"))) % 12 + (12 if values.get("a") == "PM" else 0)
    else:
        hour = number("k", 0) % 24
    fraction = str(values.get("S", ""))
    micro = int((fraction + "000000")[:6]) if fraction else 0
    try:
        moment = datetime(year, month, number("d", 1), hour, number("m", 0), number("s", 0), micro)
    except ValueError as error:
        raise ValueError(f"{text[:100]!r} is not a date: {error}") from None
    if "D" in values:
        moment = moment.replace(month=1, day=1) + timedelta(days=number("D", 1) - 1)
    place = _text_zone(values) or zone(zone_name)
    aware = moment.replace(tzinfo=place) if place else moment.astimezone()
    return int(aware.timestamp()) * 1000 + micro // 1000


def _text_zone(values: dict[str, object]) -> tzinfo | None:
    for letter in "XxZ":
        value = values.get(letter)
        if value is not None:
            text = str(value)
            if text in ("Z", "GMT"):
                return UTC
            match = _OFFSET.fullmatch(text)
            if match is None:
                raise ValueError(f"{text!r} is not an offset")
            return _fixed(match)
    for letter in "Vz":
        value = values.get(letter)
        if value is not None:
            return zone(str(value))
    return None
