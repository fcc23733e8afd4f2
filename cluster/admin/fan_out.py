"""The cluster's processors and queues from any node, after NiFi's request replication:
the node asked asks every live member's admin API for its own figures
(`/api/v1/node/processors`, `/api/v1/node/queues`), in parallel, each within a short
timeout, with the caller's own `Authorization` header, and merges the answers.

    answers = ask_members(members, "/api/v1/node/queues", authorization, own=..., answer_here=...)
    merged = merge(answers, owners)      # {"shards": {shard: items}, "members": [...]}

A shard is run by one member, so merging the members' shard maps keeps each item as the
node endpoint gives it. While a takeover is in progress two members may both report a
shard: the one the cluster view names as its owner is kept (`merge`, pure). A member
that does not answer, refuses the token, or answers what cannot be read is reported
(`answered` false, `error` why), never fatal. The node asked answers for itself without
a call to itself (`answer_here`).

The caller's token goes only to the admin addresses the members advertise in their
heartbeats, over http or https, and never along a redirect (a redirect is reported).
Over https the node trusts the system's authorities and `[admin] tls_ca` (NiFi's
truststore for its request replication); a member whose certificate it does not trust
is reported so, naming that setting.
"""

from __future__ import annotations

import functools
import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

TIMEOUT_S = 2.0
MAX_PARALLEL = 16
MAX_ANSWER_BYTES = 64 << 20  # a member's figures: far below this for any flow it could run

ShardItems = dict[str, list]  # shard -> the node endpoint's items for it


@dataclass(frozen=True)
class Asked:
    """A live member, as the cluster view lists it."""

    node: str
    incarnation: str
    admin: str  # its admin API's base address ("" when it serves none)


@dataclass(frozen=True)
class MemberAnswer:
    member: Asked
    shards: ShardItems | None  # None: no usable answer
    error: str | None = None
    answered_at: float | None = None  # unix seconds

    def report(self) -> dict:
        return {
            "node": self.member.node,
            "incarnation": self.member.incarnation,
            "admin": self.member.admin,
            "answered": self.shards is not None,
            "error": self.error,
            "answered_at": self.answered_at,
        }


class MemberRefused(Exception):
    """One member gave no usable answer; the message says why, for the report."""


def merge(answers: Iterable[MemberAnswer], owners: dict[str, str | None]) -> dict:
    """The members' shard maps as one, and a report line per member (by incarnation).
    A shard reported by several members is taken from the one `owners` (shard ->
    incarnation, the cluster view's) names; when it names none of them, from the first
    by incarnation."""
    ordered = sorted(answers, key=lambda answer: answer.member.incarnation)
    shards: ShardItems = {}
    taken_from: dict[str, str] = {}
    for answer in ordered:
        for shard, items in (answer.shards or {}).items():
            incarnation = answer.member.incarnation
            if shard not in taken_from or owners.get(shard) == incarnation:
                shards[shard] = items
                taken_from[shard] = incarnation
    return {"shards": dict(sorted(shards.items())), "members": [answer.report() for answer in ordered]}


def ask_members(
    members: Iterable[Asked],
    path: str,
    authorization: str | None,
    *,
    own: str | None,
    answer_here: Callable[[], ShardItems],
    read: Callable[[dict], ShardItems],
    fetch: Callable[[str, str | None, float], dict] | None = None,
    timeout_s: float = TIMEOUT_S,
    clock: Callable[[], float] = time.time,
) -> list[MemberAnswer]:
    """Each member's answer to GET `path`, asked in parallel: the member whose
    incarnation is `own` through `answer_here()`, the others over HTTP (`fetch(url,
    authorization, timeout_s)`, a JSON document) with each document checked by `read`
    (which raises on one it cannot read)."""
    fetch = fetch or fetch_json
    members = list(members)

    def ask(member: Asked) -> MemberAnswer:
        try:
            if member.incarnation == own:
                shards = answer_here()
            elif not member.admin.startswith(("http://", "https://")):
                raise MemberRefused(f"it advertises no admin API address ({member.admin!r})")
            else:
                shards = read(fetch(member.admin.rstrip("/") + path, authorization, timeout_s))
        except MemberRefused as refused:
            return MemberAnswer(member, None, str(refused))
        except Exception as error:  # noqa: BLE001 - reported for this member, not fatal
            return MemberAnswer(member, None, f"its answer could not be read: {type(error).__name__}: {error}"[:500])
        return MemberAnswer(member, shards, None, clock())

    if not members:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(members)), thread_name_prefix="fan-out") as pool:
        return list(pool.map(ask, members))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise MemberRefused(f"it answered {code} to {newurl!r}: a redirect is not followed with the caller's token")


@functools.lru_cache(maxsize=8)
def _opener(context: ssl.SSLContext | None) -> urllib.request.OpenerDirector:
    if context is None:
        return urllib.request.build_opener(_NoRedirect)
    return urllib.request.build_opener(_NoRedirect, urllib.request.HTTPSHandler(context=context))


def fetch_json(
    url: str,
    authorization: str | None,
    timeout_s: float,
    context: ssl.SSLContext | None = None,
    *,
    method: str = "GET",
) -> dict:
    """GET `url` (or `method` it without a body: a control) as JSON, with
    `authorization` as the caller sent it, trusting `context`'s authorities over https
    (None: the system's); `MemberRefused` saying why when the member does not answer 200."""
    data = b"" if method == "POST" else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Accept": "application/json"})
    if authorization:
        request.add_header("Authorization", authorization)
    try:
        with _opener(context).open(request, timeout=timeout_s) as response:
            body = response.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as error:
        raise MemberRefused(f"it answered {error.code}: {_problem_of(error)}") from None
    except TimeoutError:
        raise MemberRefused(f"no answer within {timeout_s:g} s") from None
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, TimeoutError):
            raise MemberRefused(f"no answer within {timeout_s:g} s") from None
        if isinstance(reason, ssl.SSLCertVerificationError):
            raise MemberRefused(
                f"its certificate is not trusted ({reason.verify_message}): [admin] tls_ca names the "
                f"authorities that signed the members' admin certificates"
            ) from None
        raise MemberRefused(f"it could not be reached: {reason}") from None
    except OSError as error:
        raise MemberRefused(f"it could not be reached: {type(error).__name__}: {error}") from None
    if len(body) > MAX_ANSWER_BYTES:
        raise MemberRefused(f"its answer is larger than {MAX_ANSWER_BYTES} bytes")
    return json.loads(body)


def _problem_of(error: urllib.error.HTTPError) -> str:
    try:
        body = error.read(4096)
        return str(json.loads(body).get("error", ""))[:300] or str(error.reason)
    except (ValueError, AttributeError, OSError):
        return str(error.reason)
