"""NiFi's nested process groups, flattened: a connection that leads into an input or
output port of a nested group, or into a funnel, goes on through every connection
that leaves that port or funnel, until it reaches a processor (or a port of the
downloaded group itself, which the Custody flow keeps as a port). What is left is
`Route`s from a processor (or a top-level input port) to a processor (or a top-level
port): the relationships of the first hop and the queue settings of the last (the
queue the FlowFiles wait in before the processor that takes them)."""

from __future__ import annotations

from dataclasses import dataclass

from .document import NiFiConnection, NiFiDocument
from .problems import Problem


@dataclass(frozen=True)
class Route:
    source: str  # NiFi identifier of a processor or a top-level port
    relationships: tuple[str, ...]
    destination: str
    first: NiFiConnection
    last: NiFiConnection


def flatten(document: NiFiDocument, kept_ports: set[str], problems: list[Problem]) -> list[Route]:
    """Every route of `document`; `kept_ports` are the identifiers of the ports where
    routes end (the downloaded group's own, and those of STATELESS groups). Dangling
    connections and dead ends are problems."""
    kinds: dict[str, str] = {processor.identifier: "PROCESSOR" for processor in document.processors}
    for node in document.nodes:
        kinds[node.identifier] = "PORT" if node.identifier in kept_ports else node.kind
    for identifier in kept_ports:  # the ports of a STATELESS group, whose contents are a flow of their own
        kinds.setdefault(identifier, "PORT")
    names = {node.identifier: (node.kind, node.name, node.path) for node in document.nodes}
    leaving: dict[str, list[NiFiConnection]] = {}
    usable = []
    for connection in document.connections:
        dangling = False
        for end_name, end in (("source", connection.source), ("destination", connection.destination)):
            if end.type.startswith("REMOTE_"):
                problems.append(
                    Problem(
                        f"{connection.path}.{end_name}.type",
                        f"a {end.type} (site-to-site): Custody has no remote process groups",
                    )
                )
                dangling = True
            elif not end.id:
                dangling = True  # reported where the document was read
            elif end.id not in kinds:
                problems.append(
                    Problem(
                        f"{connection.path}.{end_name}.id",
                        f"no component with identifier {end.id!r} in the document (a dangling connection)",
                    )
                )
                dangling = True
        if not dangling:
            leaving.setdefault(connection.source.id, []).append(connection)
            usable.append(connection)
    routes: list[Route] = []
    reported: set[str] = set()
    for connection in usable:
        if kinds[connection.source.id] not in ("PROCESSOR", "PORT"):
            continue
        for destination, last in _ends(connection, kinds, leaving, names, problems, reported, ()):
            routes.append(Route(connection.source.id, tuple(connection.relationships), destination, connection, last))
    return routes


def _ends(connection, kinds, leaving, names, problems, reported, visited):
    """(destination identifier, last connection) of each path `connection` leads along."""
    target = connection.destination.id
    if kinds[target] in ("PROCESSOR", "PORT"):
        return [(target, connection)]
    if target in visited:
        return []  # a loop of funnels and ports: FlowFiles reach no processor along it
    onward = leaving.get(target, [])
    if not onward:
        if target not in reported:
            reported.add(target)
            kind, name, path = names[target]
            problems.append(
                Problem(
                    path,
                    f"{kind.lower().replace('_', ' ')} {name!r} is connected to nothing: FlowFiles would stop here",
                )
            )
        return []
    ends = []
    for following in onward:
        ends.extend(_ends(following, kinds, leaving, names, problems, reported, visited + (target,)))
    return ends
