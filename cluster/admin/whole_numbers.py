"""Whole-number query and path parameters that accept digits only.

Pydantic reads an integer from text leniently: "2.0" and "2e0" become 2. A parameter
the OpenAPI document calls an integer takes what a JSON integer is written as, an
optional minus and digits, and answers anything else with 422 (as it does "two"):

    offset: Annotated[int, Query(ge=0, le=MAX), DIGITS_ONLY] = 0

`DIGITS_ONLY` comes after `Query`/`Path`: placed before them, FastAPI writes the
bounds into the document as `ge`/`le` instead of `minimum`/`maximum`.
"""

from __future__ import annotations

import re

from pydantic import BeforeValidator

_WHOLE = re.compile(r"-?[0-9]+")


def digits_only(value: object) -> object:
    """VALUE unchanged when it is not text or is a whole number's digits; otherwise
    ValueError (FastAPI answers 422 naming the parameter)."""
    if isinstance(value, str) and _WHOLE.fullmatch(value) is None:
        raise ValueError("a whole number is digits only, with an optional leading minus")
    return value


DIGITS_ONLY = BeforeValidator(digits_only)
