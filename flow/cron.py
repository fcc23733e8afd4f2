"""Cron schedules as NiFi's CRON_DRIVEN processors take them: Quartz's expressions.

    seconds minutes hours day-of-month month day-of-week [year]
    "0 0/5 * * * ?"        every five minutes, on the minute
    "0 30 2 ? * MON-FRI"   at 02:30:00 on weekdays
    "0 0 0 L * ?"          at midnight on the last day of each month
    "0 0 9 ? * 6#3"        at 09:00 on the third Friday of each month

Each field is `*`, a value, a range `a-b`, a step `a/n` or `a-b/n` or `*/n`, or a list
of those separated by commas. Months are 1-12 or JAN-DEC; days of the week are 1-7
with 1 Sunday (Quartz's numbering, not Unix cron's) or SUN-SAT. Day-of-month and
day-of-week: one of them is `?` (no condition), as Quartz requires. Day-of-month also
takes `L` (the month's last day); day-of-week takes `n#k` (the k-th such day of the
month). Quartz's `W`, `L` in the day of week and `L-n` are refused with a clear error.
Years run 1970-2199.

Times are the node's local time, as Quartz uses its JVM's default zone. `CronSchedule`
is pure: `next_after(seconds since the epoch)` gives the next firing time strictly
after it, or None when the expression never fires again.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta

_MONTHS = {name.upper(): number for number, name in enumerate(calendar.month_abbr) if name}
_DAYS = {"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("seconds", 0, 59, {}),
    ("minutes", 0, 59, {}),
    ("hours", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 1, 7, _DAYS),
    ("year", 1970, 2199, {}),
)
_SEARCH_YEARS = 230  # the year field's whole range: past it nothing can fire


class CronError(ValueError):
    """An expression Quartz would refuse, or a feature of Quartz Custody does not take."""


@dataclass(frozen=True)
class CronSchedule:
    text: str
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int] | None  # None: no condition (`?`)
    last_day: bool  # `L` in day of month
    months: frozenset[int]
    weekdays: frozenset[int] | None  # Quartz's 1 (Sunday) to 7; None: no condition
    nth_weekday: tuple[int, int] | None  # (weekday, k) for `weekday#k`
    years: frozenset[int]

    def next_after(self, seconds: float) -> float | None:
        """The first firing time strictly after `seconds` (since the epoch, local time)."""
        start = datetime.fromtimestamp(int(seconds)) + timedelta(seconds=1)
        day = start.date()
        for _ in range(_SEARCH_YEARS * 366):
            if day.year > max(self.years):
                return None
            if self._fires_on(day):
                earliest = start.time() if day == start.date() else None
                moment = self._first_time(day, earliest)
                if moment is not None:
                    return time.mktime(moment.timetuple())
            day += timedelta(days=1)
        return None

    def _fires_on(self, day: date) -> bool:
        if day.year not in self.years or day.month not in self.months:
            return False
        if self.days is not None or self.last_day:
            last = calendar.monthrange(day.year, day.month)[1]
            return (self.days is not None and day.day in self.days) or (self.last_day and day.day == last)
        weekday = day.isoweekday() % 7 + 1  # Quartz: Sunday 1 ... Saturday 7
        if self.nth_weekday is not None:
            wanted, nth = self.nth_weekday
            return weekday == wanted and (day.day - 1) // 7 + 1 == nth
        return self.weekdays is None or weekday in self.weekdays

    def _first_time(self, day: date, earliest) -> datetime | None:
        """The first (hour, minute, second) of `day` at or after `earliest` (None: any)."""
        floor = (earliest.hour, earliest.minute, earliest.second) if earliest is not None else (0, 0, 0)
        for hour in sorted(h for h in self.hours if h >= floor[0]):
            minute_floor = floor[1] if hour == floor[0] else 0
            for minute in sorted(m for m in self.minutes if m >= minute_floor):
                second_floor = floor[2] if (hour, minute) == floor[:2] else 0
                second = min((s for s in self.seconds if s >= second_floor), default=None)
                if second is not None:
                    return datetime(day.year, day.month, day.day, hour, minute, second)
        return None


def parse_cron(text: str) -> CronSchedule:
    """A Quartz cron expression, read. Raises `CronError` saying which field is wrong."""
    fields = str(text).split()
    if len(fields) not in (6, 7):
        raise CronError(
            f"a cron schedule has 6 or 7 fields (seconds minutes hours day-of-month month day-of-week [year]), "
            f"got {len(fields)} in {text!r}"
        )
    if len(fields) == 6:
        fields.append("*")
    day_field, weekday_field = fields[3], fields[5]
    if (day_field == "?") == (weekday_field == "?"):
        raise CronError(f"one of day-of-month and day-of-week must be '?' (and only one), as Quartz requires: {text!r}")
    values = [
        _values(field, *spec)
        for field, spec in zip(fields, _FIELDS, strict=True)
        if spec[0] not in ("day of month", "day of week")
    ]
    seconds, minutes, hours, months, years = values
    days, last_day = _day_of_month(day_field)
    weekdays, nth = _day_of_week(weekday_field)
    return CronSchedule(str(text), seconds, minutes, hours, days, last_day, months, weekdays, nth, years)


def _day_of_month(field: str) -> tuple[frozenset[int] | None, bool]:
    if field == "?":
        return None, False
    if "W" in field.upper() or field.upper().startswith("L-"):
        raise CronError(f"day of month {field!r}: Quartz's W and L-n are not supported")
    parts = field.split(",")
    last = any(part.upper() == "L" for part in parts)
    rest = ",".join(part for part in parts if part.upper() != "L")
    return (_values(rest, *_FIELDS[3]) if rest else None), last


def _day_of_week(field: str) -> tuple[frozenset[int] | None, tuple[int, int] | None]:
    if field == "?":
        return None, None
    if "L" in field.upper() and field.upper() not in _DAYS:
        raise CronError(f"day of week {field!r}: Quartz's L in the day of week is not supported")
    if "#" in field:
        weekday, _, nth = field.partition("#")
        (day,) = _values(weekday, *_FIELDS[5]) if weekday and "," not in weekday and "-" not in weekday else (0,)
        if not day or not nth.isdigit() or not 1 <= int(nth) <= 5:
            raise CronError(f"day of week {field!r}: expected a day, '#' and 1 to 5 (6#3, the third Friday)")
        return None, (day, int(nth))
    return _values(field, *_FIELDS[5]), None


_PART = re.compile(r"^(\*|[A-Za-z0-9]+(?:-[A-Za-z0-9]+)?)(?:/(\d+))?$")


def _values(field: str, name: str, low: int, high: int, names: dict[str, int]) -> frozenset[int]:
    found: set[int] = set()
    for part in field.split(","):
        match = _PART.match(part.strip())
        if match is None:
            raise CronError(f"{name} {field!r}: cannot read {part!r}")
        span, step = match.group(1), match.group(2)
        if span == "*":
            first, last = low, high
        elif "-" in span:
            first, last = (_value(bound, name, low, high, names) for bound in span.split("-"))
        else:
            first = _value(span, name, low, high, names)
            last = high if step else first
        every = int(step) if step else 1
        if every < 1:
            raise CronError(f"{name} {field!r}: a step is at least 1")
        if first > last:
            raise CronError(f"{name} {field!r}: the range {span} runs backwards")
        found.update(range(first, last + 1, every))
    return frozenset(found)


def _value(text: str, name: str, low: int, high: int, names: dict[str, int]) -> int:
    number = names.get(text.upper()) if not text.isdigit() else int(text)
    if number is None or not low <= number <= high:
        raise CronError(f"{name}: {text!r} is not one of {low}-{high}{' or a name' if names else ''}")
    return number
