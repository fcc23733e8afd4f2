"""Step ids: one failover's story, followed across every node's log with one grep.

Each decision of the leader and of a session guard carries a step id (dask's
`stimulus_id` is the model): `<subject>:<step>`, where the subject is the
incarnation whose death (or session) the decision is about, or the shard a split
is about:

    n1-7:failover/plan              the leader wrote the plan for dead n1-7
    n1-7:failover/move-n1-7@7       ... moved shard n1-7 away from epoch 7
    n1-7:failover/revise-2          ... revised the plan (a target died)
    n1-7:failover/done              ... marked it done
    n1-7:guard-3                    n1-7's own session guard, its third decision
    n1-7.e8s0:split/retire          a divvied parent retired

The leader's ids are a function of the decision alone, so a new leader that finishes
a plan its predecessor started logs the same ids for the same steps. They are written
into the plan znode's notes and into the shard's history (its entry's `step`, and the
tag `[step]` its reason ends in, for people), where the adopter finds the id of the
move that gave it the shard and logs its fencing, adoption, first output and
retirement under it. So

    grep -F '[n1-7:' n1.log n2.log n3.log

prints one incarnation's death and everything that followed it, in each node's words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TAG = re.compile(r"\[([^\[\]\s]+:[^\[\]\s]+)\]")


def step_id(subject: str, step: str) -> str:
    return f"{subject}:{step}"


def tag(step: str | None) -> str:
    """How a step id is written into a log line or a history reason: `[id]`."""
    return f"[{step}]" if step else ""


def step_of(text: str) -> str | None:
    """The last step id tagged in `text`, or None: how a history entry written by the
    previous release (its reason, without a `step` field) carries its step."""
    found = _TAG.findall(text or "")
    return found[-1] if found else None


@dataclass(frozen=True)
class StoryEntry:
    """One entry of a bounded story (the leader's, a node's): when, which step, what."""

    at: float
    kind: str
    detail: str
    step: str = ""
