"""NiFi's nested process groups that run STATELESS (`executionEngine`), split from the
rest of the document: each becomes a flow of its own, which an ExecuteStateless of the
outer flow runs (Custody's ExecuteStateless runs a flow from a file of its own, one
transaction per trigger, as NiFi's stateless engine runs such a group).

`split` gives the outer document (without those groups' contents) and, for each group,
a document rooted at it: its processors, connections, ports, funnels and inner groups,
with the controller services of its own and of the groups around it (a processor may
use those)."""

from __future__ import annotations

from dataclasses import dataclass

from .document import NiFiDocument, NiFiGroup


@dataclass
class StatelessGroup:
    group: NiFiGroup
    document: NiFiDocument  # rooted at the group


def split(document: NiFiDocument) -> tuple[NiFiDocument, list[StatelessGroup]]:
    """(the outer document, each outermost nested STATELESS group)."""
    outermost = [
        group
        for group in document.groups[1:]
        if group.execution_engine == "STATELESS" and not any(_within(group, other) for other in _stateless(document))
    ]
    if not outermost:
        return document, []

    def inside(group: NiFiGroup) -> bool:
        return any(_within(group, stateless) or group is stateless for stateless in outermost)

    outer = NiFiDocument(
        document.root,
        [group for group in document.groups if not inside(group)],
        [p for p in document.processors if not inside(p.group)],
        [c for c in document.connections if not inside(c.group)],
        [n for n in document.nodes if not inside(n.group)],
        [s for s in document.services if not inside(s.group)],
        document.parameter_contexts,
        document.external_services,
        document.remote_groups,
    )
    groups = []
    for stateless in outermost:

        def mine(group: NiFiGroup, stateless: NiFiGroup = stateless) -> bool:
            return group is stateless or _within(group, stateless)

        groups.append(
            StatelessGroup(
                stateless,
                NiFiDocument(
                    stateless,
                    [group for group in document.groups if mine(group)],
                    [p for p in document.processors if mine(p.group)],
                    [c for c in document.connections if mine(c.group)],
                    [n for n in document.nodes if mine(n.group)],
                    [s for s in document.services if mine(s.group) or _within(stateless, s.group)],
                    document.parameter_contexts,
                    document.external_services,
                ),
            )
        )
    return outer, groups


def _stateless(document: NiFiDocument) -> list[NiFiGroup]:
    return [group for group in document.groups[1:] if group.execution_engine == "STATELESS"]


def _within(group: NiFiGroup, ancestor: NiFiGroup) -> bool:
    """Whether `group` is nested (at any depth) in `ancestor`."""
    parent = group.parent
    while parent is not None:
        if parent is ancestor:
            return True
        parent = parent.parent
    return False
