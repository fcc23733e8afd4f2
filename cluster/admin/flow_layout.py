"""Where the status page draws a flow's processors and connections: a layered layout
in the manner of Sugiyama, Tagawa and Toda (1981), as a pure function of the graph.

The steps, each deterministic (ties go to the order the flow lists its parts in):

1. Cycles are broken for layering: a depth-first search from the sources (parts with
   no incoming connection but their own) marks each connection that closes a cycle
   as a back edge (a retry loop back to an earlier processor); a connection of a
   part to itself is a self-loop. Neither counts for layering.
2. Layers by longest path from the sources: every source is in layer 0 and every
   other connection goes from a lower layer to a higher one.
3. A connection spanning several layers (and a back edge, reversed) passes through a
   waypoint in each layer between, so that it can be routed around the boxes.
4. Within each layer the order reduces crossings: barycentre sweeps, down then up,
   keeping the order with the fewest crossings seen.
5. Coordinates on a grid: layers are columns from left to right, parts stacked in
   each column in their order, every column centred on the tallest; boxes never share
   a spot. Each connection gets its route (points) and where its label goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

BOX_WIDTH = 184
BOX_HEIGHT = 100
LAYER_GAP = 124  # room between columns for the connections and their labels
NODE_GAP = 56  # room between boxes of a column: a self-loop and its label go above a box
WAYPOINT_HEIGHT = 30  # the slot a connection takes where it passes a column
MARGIN = 36
BACK_EDGE_DROP = 26  # how far under its boxes a back edge runs (within NODE_GAP)
LABEL_WIDTH, LABEL_HEIGHT = 112, 34  # the most room the page's label of a connection takes
SWEEPS = 4


@dataclass(frozen=True)
class LayoutEdge:
    id: str
    source: str
    destination: str


@dataclass(frozen=True)
class PlacedNode:
    id: str
    layer: int
    order: int
    x: int  # the box's top left corner
    y: int


@dataclass(frozen=True)
class PlacedEdge:
    id: str
    source: str
    destination: str
    back_edge: bool
    self_loop: bool
    points: tuple[tuple[int, int], ...]
    label_x: int
    label_y: int


@dataclass(frozen=True)
class FlowLayout:
    nodes: tuple[PlacedNode, ...]
    edges: tuple[PlacedEdge, ...]
    width: int
    height: int
    box_width: int = BOX_WIDTH
    box_height: int = BOX_HEIGHT
    crossings: int = 0


@dataclass
class _Slot:
    """A box or a waypoint in a layer."""

    key: str
    layer: int
    height: int
    edge: str | None = None  # a waypoint's connection
    up: list[str] = field(default_factory=list)  # slots it is joined to in the layer before
    down: list[str] = field(default_factory=list)  # ... in the layer after


def back_edges(nodes: Sequence[str], edges: Sequence[LayoutEdge]) -> set[str]:
    """The connections that close a cycle, found by a depth-first search from the
    sources, then from whatever is left in the flow's order (a cycle with no source)."""
    outgoing: dict[str, list[LayoutEdge]] = {n: [] for n in nodes}
    has_incoming: set[str] = set()
    for edge in edges:
        if edge.source != edge.destination:
            outgoing[edge.source].append(edge)
            has_incoming.add(edge.destination)
    state: dict[str, int] = {}  # 1: on the path being searched, 2: done
    back: set[str] = set()
    roots = [n for n in nodes if n not in has_incoming] + list(nodes)
    for root in roots:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(outgoing[root]))]
        while stack:
            node, pending = stack[-1]
            following = next(pending, None)
            if following is None:
                state[node] = 2
                stack.pop()
                continue
            seen = state.get(following.destination)
            if seen == 1:
                back.add(following.id)
            elif seen is None:
                state[following.destination] = 1
                stack.append((following.destination, iter(outgoing[following.destination])))
    return back


def longest_path_layers(nodes: Sequence[str], edges: Sequence[LayoutEdge], back: set[str]) -> dict[str, int]:
    """Each part's layer: the longest path to it from a source, over the connections
    that are neither back edges nor self-loops (an acyclic graph)."""
    incoming: dict[str, list[str]] = {n: [] for n in nodes}
    outgoing: dict[str, list[str]] = {n: [] for n in nodes}
    for edge in edges:
        if edge.id not in back and edge.source != edge.destination:
            incoming[edge.destination].append(edge.source)
            outgoing[edge.source].append(edge.destination)
    waiting = {n: len(incoming[n]) for n in nodes}
    layer = {n: 0 for n in nodes}
    ready = [n for n in nodes if waiting[n] == 0]
    while ready:
        node = ready.pop(0)
        for after in outgoing[node]:
            layer[after] = max(layer[after], layer[node] + 1)
            waiting[after] -= 1
            if waiting[after] == 0:
                ready.append(after)
    return layer


def count_crossings(upper: Sequence[str], lower: Sequence[str], slots: dict[str, _Slot]) -> int:
    """Crossings between two adjacent layers: pairs of joins whose ends are in
    opposite orders."""
    position = {key: i for i, key in enumerate(lower)}
    joins = [(i, position[d]) for i, key in enumerate(upper) for d in slots[key].down if d in position]
    return sum(1 for a in range(len(joins)) for b in range(a + 1, len(joins)) if _crosses(joins[a], joins[b]))


def _crosses(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return (a[0] - b[0]) * (a[1] - b[1]) < 0


def _total_crossings(layers: list[list[str]], slots: dict[str, _Slot]) -> int:
    return sum(count_crossings(layers[i], layers[i + 1], slots) for i in range(len(layers) - 1))


def _barycentre_pass(layers: list[list[str]], slots: dict[str, _Slot], downwards: bool) -> None:
    indices = range(1, len(layers)) if downwards else range(len(layers) - 2, -1, -1)
    for i in indices:
        fixed = layers[i - 1] if downwards else layers[i + 1]
        position = {key: p for p, key in enumerate(fixed)}

        def centre(item: tuple[int, str], position: dict[str, int] = position) -> tuple[float, int]:
            place, key = item
            joined = slots[key].up if downwards else slots[key].down
            seen = [position[j] for j in joined if j in position]
            # A slot joined to nothing in that layer keeps its place.
            return (sum(seen) / len(seen) if seen else float(place), place)

        layers[i] = [key for _, key in sorted(enumerate(layers[i]), key=centre)]


def layout(nodes: Sequence[str], edges: Sequence[LayoutEdge]) -> FlowLayout:
    """The layout of a flow whose parts are `nodes` (ids, in the flow's order) joined
    by `edges`; every edge's ends must be in `nodes`."""
    known = set(nodes)
    for edge in edges:
        if edge.source not in known or edge.destination not in known:
            raise ValueError(f"connection {edge.id} joins a part the flow does not have")
    back = back_edges(nodes, edges)
    layer_of = longest_path_layers(nodes, edges, back)
    slots: dict[str, _Slot] = {n: _Slot(n, layer_of[n], BOX_HEIGHT) for n in nodes}
    chains: dict[str, list[str]] = {}  # edge -> its slots from its lower layer to its higher
    for edge in edges:
        if edge.source == edge.destination:
            continue
        low, high = (edge.destination, edge.source) if edge.id in back else (edge.source, edge.destination)
        chain = [low]
        for passed in range(layer_of[low] + 1, layer_of[high]):
            key = f"\0{edge.id}\0{passed}"
            slots[key] = _Slot(key, passed, WAYPOINT_HEIGHT, edge=edge.id)
            chain.append(key)
        chain.append(high)
        for a, b in zip(chain, chain[1:], strict=False):
            slots[a].down.append(b)
            slots[b].up.append(a)
        chains[edge.id] = chain
    depth = max(layer_of.values(), default=-1) + 1
    layers: list[list[str]] = [[] for _ in range(depth)]
    for key, slot in slots.items():  # parts in the flow's order, each waypoint after its edge's
        layers[slot.layer].append(key)

    best = [list(layer) for layer in layers]
    fewest = _total_crossings(best, slots)
    for sweep in range(SWEEPS):
        _barycentre_pass(layers, slots, downwards=sweep % 2 == 0)
        crossings = _total_crossings(layers, slots)
        if crossings < fewest:
            best, fewest = [list(layer) for layer in layers], crossings
    layers = best

    heights = [sum(slots[key].height for key in layer) + NODE_GAP * max(0, len(layer) - 1) for layer in layers]
    tallest = max(heights, default=0)
    centre: dict[str, tuple[int, int]] = {}  # slot -> its top left corner
    for i, layer in enumerate(layers):
        x = MARGIN + i * (BOX_WIDTH + LAYER_GAP)
        y = MARGIN + (tallest - heights[i]) // 2
        for key in layer:
            centre[key] = (x, y)
            y += slots[key].height + NODE_GAP
    placed = tuple(PlacedNode(n, layer_of[n], layers[layer_of[n]].index(n), centre[n][0], centre[n][1]) for n in nodes)
    routes = _routes(edges, back, chains, slots, centre)
    width = MARGIN * 2 + max(0, depth * BOX_WIDTH + (depth - 1) * LAYER_GAP)
    height = MARGIN * 2 + tallest
    return FlowLayout(placed, routes, width, height, crossings=fewest)


def _routes(edges, back, chains, slots, corner) -> tuple[PlacedEdge, ...]:
    """Each connection's points and label. A forward connection leaves its source's right
    side, passes its waypoints and enters its destination's left side; connections
    sharing a side get ends spread along it, in the order of where they go. A back edge
    leaves its source's bottom and comes back under the boxes, through its waypoints,
    into its destination's bottom, apart from the forward connections between the same
    columns. A self-loop goes over its box."""
    ends: dict[tuple[str, str], list[tuple[int, str]]] = {}  # (box, side) -> (where the far end is, edge)
    for edge in edges:
        if edge.source == edge.destination:
            continue
        if edge.id in back:
            ordered = list(reversed(chains[edge.id]))
            ends.setdefault((edge.source, "bottom-out"), []).append((_middle(ordered[1], slots, corner)[0], edge.id))
            ends.setdefault((edge.destination, "bottom-in"), []).append(
                (_middle(ordered[-2], slots, corner)[0], edge.id)
            )
        else:
            chain = chains[edge.id]
            ends.setdefault((edge.source, "right"), []).append((_middle(chain[1], slots, corner)[1], edge.id))
            ends.setdefault((edge.destination, "left"), []).append((_middle(chain[-2], slots, corner)[1], edge.id))
    port: dict[tuple[str, str], tuple[int, int]] = {}  # (box or side, edge) -> the point
    for (box, side), joined in ends.items():
        joined.sort()
        x, y = corner[box]
        if side in ("right", "left"):
            step = min(16, (BOX_HEIGHT - 20) // max(1, len(joined)))
            first = y + BOX_HEIGHT // 2 - step * (len(joined) - 1) // 2
            for i, (_, edge_id) in enumerate(joined):
                port[(side, edge_id)] = (x + (BOX_WIDTH if side == "right" else 0), first + i * step)
        else:  # leaving from the bottom's left part, coming in at its right part
            step = min(16, (BOX_WIDTH // 2 - 24) // max(1, len(joined)))
            for i, (_, edge_id) in enumerate(joined):
                along = 24 + i * step if side == "bottom-out" else BOX_WIDTH - 24 - (len(joined) - 1 - i) * step
                port[(side, edge_id)] = (x + along, y + BOX_HEIGHT)
    placed: list[PlacedEdge] = []
    taken: list[tuple[int, int]] = []  # label centres so far
    boxes = [corner[key] for key, slot in slots.items() if slot.edge is None]
    for edge in edges:
        if edge.source == edge.destination:
            x, y = corner[edge.source]
            left, right, top = x + BOX_WIDTH // 2 - 40, x + BOX_WIDTH // 2 + 40, y - 22
            points: tuple[tuple[int, int], ...] = ((right, y), (right, top), (left, top), (left, y))
            label = (x + BOX_WIDTH // 2, top)
            placed.append(PlacedEdge(edge.id, edge.source, edge.destination, False, True, points, *label))
            taken.append(label)
            continue
        if edge.id in back:
            ordered = list(reversed(chains[edge.id]))
            start, end = port[("bottom-out", edge.id)], port[("bottom-in", edge.id)]
            below = BACK_EDGE_DROP
            points = (
                start,
                (start[0], start[1] + below),
                *[_middle(key, slots, corner) for key in ordered[1:-1]],
                (end[0], end[1] + below),
                end,
            )
            # Its label sits on its run under the boxes, if there is room, clear of the others.
            label = _free_spot(points, [1, 2, 0, 3], taken, boxes)
        else:
            chain = chains[edge.id]
            start, end = port[("right", edge.id)], port[("left", edge.id)]
            points = (start, *[_middle(key, slots, corner) for key in chain[1:-1]], end)
            label = _free_spot(points, list(range(len(points) - 1)), taken, boxes)
        taken.append(label)
        placed.append(PlacedEdge(edge.id, edge.source, edge.destination, edge.id in back, False, points, *label))
    return tuple(placed)


def _free_spot(
    points: tuple[tuple[int, int], ...],
    segments: list[int],
    taken: list[tuple[int, int]],
    boxes: list[tuple[int, int]],
) -> tuple[int, int]:
    """Where a connection's label goes: a point of its route, on the segments in the
    order given (halfway first), where it covers no box and no label placed before;
    when there is none, the candidate farthest from the other labels."""
    candidates = [
        (a[0] + (b[0] - a[0]) * t // 10, a[1] + (b[1] - a[1]) * t // 10)
        for a, b in (points[i : i + 2] for i in segments if i + 1 < len(points))
        for t in (5, 3, 7, 2, 8)
    ]

    def clear_of_boxes(spot: tuple[int, int]) -> bool:
        half_w, half_h = LABEL_WIDTH // 2, LABEL_HEIGHT // 2
        return all(
            spot[0] + half_w <= x
            or x + BOX_WIDTH <= spot[0] - half_w
            or spot[1] + half_h <= y
            or y + BOX_HEIGHT <= spot[1] - half_h
            for x, y in boxes
        )

    def apart(spot: tuple[int, int]) -> float:
        # How far it is from the nearest label, in label sizes (>= 1: they do not overlap).
        return min(
            (max(abs(spot[0] - x) / LABEL_WIDTH, abs(spot[1] - y) / LABEL_HEIGHT) for x, y in taken),
            default=float("inf"),
        )

    for spot in candidates:
        if apart(spot) >= 1 and clear_of_boxes(spot):
            return spot
    clear = [spot for spot in candidates if clear_of_boxes(spot)] or candidates
    return max(clear, key=apart)


def _middle(key: str, slots: dict[str, _Slot], corner: dict[str, tuple[int, int]]) -> tuple[int, int]:
    x, y = corner[key]
    return (x + BOX_WIDTH // 2, y + slots[key].height // 2)
