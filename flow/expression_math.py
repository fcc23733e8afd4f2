"""The expression language's `math()`, after NiFi's: it runs one of `java.lang.Math`'s
static methods by name, `${literal(2):toDecimal():math('pow', 2.5)}`.

NiFi picks the Java overload by the types at hand: a whole number is a Java `long`, a
decimal a `double`, so `abs` of a whole number is a whole number and `abs` of a decimal
a decimal. Where Java has the method for doubles only (`sqrt`, `pow`, `cbrt`, ...),
NiFi refuses a whole-number subject until `toDecimal()` makes it a decimal; Custody
runs the double method instead, so every expression that runs in NiFi gives the same
value here and a few that NiFi refuses run too. Results Java writes as NaN or an
infinity are refused (the language's numbers are finite).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _java_round(x: float) -> int:
    return math.floor(x + 0.5)


def _rint(x: float) -> float:
    return float(round(x))  # round half to even, as Math.rint


def _signum(x: float) -> float:
    return math.copysign(1.0, x) if x else x


def _exact(value: int) -> int:
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError("the result overflows a 64-bit integer")
    return value


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# Methods of one double
_DOUBLE_1: dict[str, Callable[[float], float | int]] = {
    "abs": abs,
    "acos": math.acos,
    "asin": math.asin,
    "atan": math.atan,
    "cbrt": math.cbrt,
    "ceil": lambda x: float(math.ceil(x)),
    "cos": math.cos,
    "cosh": math.cosh,
    "exp": math.exp,
    "expm1": math.expm1,
    "floor": lambda x: float(math.floor(x)),
    "log": math.log,
    "log10": math.log10,
    "log1p": math.log1p,
    "nextDown": lambda x: math.nextafter(x, -math.inf),
    "nextUp": lambda x: math.nextafter(x, math.inf),
    "rint": _rint,
    "round": _java_round,
    "signum": _signum,
    "sin": math.sin,
    "sinh": math.sinh,
    "sqrt": math.sqrt,
    "tan": math.tan,
    "tanh": math.tanh,
    "toDegrees": math.degrees,
    "toRadians": math.radians,
    "ulp": math.ulp,
}
# Methods of one long
_LONG_1: dict[str, Callable[[int], int]] = {
    "abs": abs,
    "absExact": lambda x: _exact(abs(x)),
    "decrementExact": lambda x: _exact(x - 1),
    "incrementExact": lambda x: _exact(x + 1),
    "negateExact": lambda x: _exact(-x),
}
# Methods of two doubles (scalb's second is an int)
_DOUBLE_2: dict[str, Callable[[float, float], float]] = {
    "IEEEremainder": math.remainder,
    "atan2": math.atan2,
    "copySign": math.copysign,
    "hypot": math.hypot,
    "max": max,
    "min": min,
    "nextAfter": math.nextafter,
    "pow": math.pow,
    "scalb": lambda x, n: math.ldexp(x, int(n)),
}
# Methods of two longs
_LONG_2: dict[str, Callable[[int, int], int]] = {
    "addExact": lambda a, b: _exact(a + b),
    "ceilDiv": _ceil_div,
    "ceilMod": lambda a, b: a - _ceil_div(a, b) * b,
    "floorDiv": lambda a, b: a // b,
    "floorMod": lambda a, b: a % b,
    "max": max,
    "min": min,
    "multiplyExact": lambda a, b: _exact(a * b),
    "subtractExact": lambda a, b: _exact(a - b),
}
METHODS = frozenset(_DOUBLE_1) | frozenset(_LONG_1) | frozenset(_DOUBLE_2) | frozenset(_LONG_2) | {"random"}


def run(method: str, subject: int | float | None, argument: int | float | None = None) -> int | float:
    """`Math.<method>(subject[, argument])` with NiFi's choice of overload; raises
    `ValueError` naming the method when there is none for these arguments."""
    if method == "random":
        if subject is not None or argument is not None:
            raise ValueError("math('random') takes no subject and no argument")
        return random.random()
    if subject is None:
        raise ValueError(f"math({method!r}) needs a subject: only math('random') runs without one")
    try:
        if argument is None:
            return _one(method, subject)
        return _two(method, subject, argument)
    except ZeroDivisionError:
        raise ValueError(f"math({method!r}) divided by zero") from None
    except ValueError as error:
        if str(error) == "math domain error":  # where Java answers NaN
            raise ValueError(f"math({method!r}) has no real result for {subject!r}") from None
        raise ValueError(f"math({method!r}): {error}") from None
    except OverflowError:
        raise ValueError(f"math({method!r}): the result overflows") from None


def _one(method: str, subject: int | float) -> int | float:
    if isinstance(subject, int) and method in _LONG_1:
        return _LONG_1[method](subject)
    if method in _DOUBLE_1:
        return _DOUBLE_1[method](float(subject))
    if method in _DOUBLE_2 or method in _LONG_2:
        raise ValueError(f"math({method!r}) takes a second argument")
    raise ValueError(f"java.lang.Math has no method {method!r} that Custody runs ({', '.join(sorted(METHODS))})")


def _two(method: str, subject: int | float, argument: int | float) -> int | float:
    if isinstance(subject, int) and isinstance(argument, int) and method in _LONG_2:
        return _LONG_2[method](subject, argument)
    if method in _DOUBLE_2:
        return _DOUBLE_2[method](float(subject), float(argument))
    if method in _DOUBLE_1 or method in _LONG_1:
        raise ValueError(f"math({method!r}) takes no second argument")
    if method in _LONG_2:
        raise ValueError(f"math({method!r}) takes whole numbers, got {subject!r} and {argument!r}")
    raise ValueError(f"java.lang.Math has no method {method!r} that Custody runs ({', '.join(sorted(METHODS))})")
