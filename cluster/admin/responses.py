"""The error answers each kind of route declares in /openapi.json."""

from __future__ import annotations

from .models import Problem

_AUTH = {401: {"model": Problem, "description": "no token, or an unknown one"},
         403: {"model": Problem, "description": "the token's role is not enough"}}
_OUTAGE = {503: {"model": Problem, "description": "ZooKeeper or storage does not answer; the reason"}}
# Declared, it replaces FastAPI's own 422 schema, which is not what the app answers.
_INVALID = {422: {"model": Problem, "description": "a parameter is malformed or out of range; which one, and why"}}

READ_ERRORS = {**_AUTH, **_OUTAGE}
LOOKUP_ERRORS = {**READ_ERRORS, 404: {"model": Problem, "description": "the id is unknown; which one"}}
QUERY_ERRORS = {**READ_ERRORS, **_INVALID}
QUERY_LOOKUP_ERRORS = {**LOOKUP_ERRORS, **_INVALID}
CONTROL_ERRORS = {**QUERY_LOOKUP_ERRORS, 409: {"model": Problem, "description": "the node's state refuses the call"}}


def as_json(errors: dict) -> dict:
    """`errors` for a route whose own answer is not JSON (a stream): its errors still are."""
    return {status: {"description": answer["description"],
                     "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/"
                                                                         f"{answer['model'].__name__}"}}}}
            for status, answer in errors.items()}
