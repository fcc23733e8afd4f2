"""The error answers each kind of route declares in /openapi.json."""

from __future__ import annotations

from .models import Problem

_AUTH = {401: {"model": Problem, "description": "no token, or an unknown one"},
         403: {"model": Problem, "description": "the token's role is not enough"}}
_OUTAGE = {503: {"model": Problem, "description": "ZooKeeper or storage does not answer; the reason"}}

READ_ERRORS = {**_AUTH, **_OUTAGE}
LOOKUP_ERRORS = {**READ_ERRORS, 404: {"model": Problem, "description": "the id is unknown; which one"}}
CONTROL_ERRORS = {**LOOKUP_ERRORS, 409: {"model": Problem, "description": "the node's state refuses the call"}}
