"""Transactions their coordinator decided whose markers never reached a partition.

A Kafka transaction ends in two steps: its coordinator logs the decision
(PrepareCommit or PrepareAbort), then writes a COMMIT or ABORT marker to every
partition the transaction wrote to, and logs it complete. A broker that restarts
loads the transactions it was preparing and sends their markers again; but when it
is elected coordinator before its metadata shows a partition (a single broker
SIGKILLed while it commits, then started: it takes its coordinator role while it
replays its metadata), it drops that partition's marker as "likely deleted" and logs
the transaction complete. The partition keeps the transaction open for good: a
read_committed consumer stops at it, and so does PublishKafka's read back of its
progress, which then never ends. Kafka's answer is an operator's
(`kafka-transactions.sh find-hanging`, then `abort`); an abort would drop records whose
FlowFiles Custody already counted as sent.

PublishKafka finishes such a transaction itself, with the decision its coordinator
took, before each new producer's `init_transactions` (which bumps the producer's epoch
and forgets the decision):

1. Ask the coordinator for the transactional id's state. `Ongoing` (an earlier
   owner's transaction left open, as a dead node's is): end it now, as the new
   producer's init would (an InitProducerId: the earlier producers fenced, the
   transaction aborted), so that the init does not wait; once that abort is
   complete, at the epoch the fence bumped, nothing more is looked at (step 2
   matches a decision's own epoch, and a transaction left open holds an earlier
   one). Preparing: ask again until it is complete. `CompleteCommit` or
   `CompleteAbort`: that is the last transaction's decision, and no transaction of
   the id is open anywhere. Any other state (none yet, `Empty` after a new epoch,
   `Ongoing`): nothing is known to finish.
2. Ask every partition the producer writes to (the progress topic and the output
   topic; every topic when the topic is an expression) for its open transactions.
   One held by the id's producer id at the coordinator's epoch is the last
   transaction's, left open: it needs that decision's marker (`markers_for`; librdkafka
   keeps one epoch for a producer's life, Kafka's transaction version 1).
3. Ask the coordinator again: the same state, or nothing is written (a producer
   of the id moved on meanwhile: the next new producer looks again).
4. Write each marker at the partition's leader, with the coordinator epoch the
   partition last saw, as Kafka's own `abort` does.

`settle_others` does steps 1 to 4 for every other transactional id that holds a
transaction open on those partitions and that its coordinator lists as complete
(found by producer id, ListTransactions): a producer that committed just before the
restart and then had nothing more to send never looks for its own, and the readers of
the partitions it holds (another id's read back of its progress among them) would
wait at it for good.

A COMMIT marker makes visible exactly what the coordinator committed; the progress
record in the same transaction then tells the next producer that its FlowFiles went
out. Not covered: a transaction whose producer wrote a later one at the same epoch
before it was finished (that later decision is the only one the coordinator keeps),
and brokers whose SASL mechanism `sasl` does not speak (GSSAPI, OAUTHBEARER): those
are logged and left to the operator's tool.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from . import sasl, wire

DECIDED = {"CompleteCommit": True, "CompleteAbort": False}
PREPARING = frozenset({"PrepareCommit", "PrepareAbort", "PrepareEpochFence"})
_STEP_S = 0.1
_FENCE_STEP_S = 0.02  # an abort's markers take milliseconds on a healthy cluster


def markers_for(state: wire.TransactionState | None, active: Iterable[wire.ActiveProducer]) -> list[wire.Marker]:
    """The markers that finish the transactions `state`'s coordinator decided and
    partitions still hold open (step 2 above): none unless the state is complete."""
    if state is None or state.state not in DECIDED:
        return []
    commit = DECIDED[state.state]
    return [
        wire.Marker(o.topic, o.partition, o.producer_id, state.producer_epoch, o.coordinator_epoch, commit)
        for o in active
        if o.transaction_start >= 0 and o.producer_id == state.producer_id and o.producer_epoch == state.producer_epoch
    ]


@dataclass(frozen=True)
class Settled:
    written: tuple[wire.Marker, ...] = ()
    failed: tuple[tuple[wire.Marker, int], ...] = ()  # a marker and the partition's error code
    skipped: str | None = None  # why nothing was looked at (the coordinator's state moved, ...)


class Unsupported(Exception):
    """A connection this module cannot make (a SASL mechanism it does not speak)."""


class Brokers(NamedTuple):
    """How to reach the brokers of a librdkafka client's settings on the wire."""

    tls: ssl.SSLContext | None
    credentials: sasl.Credentials | None
    timeout: float

    def connect(self, host: str, port: int) -> wire.Connection:
        connection = wire.Connection(host, port, self.tls, self.timeout)
        if self.credentials is not None:
            try:
                sasl.authenticate(connection, self.credentials)
            except BaseException:
                connection.close()
                raise
        return connection


def brokers(config: Mapping, timeout: float) -> Brokers:
    """The TLS and SASL a librdkafka client `config` uses. Raises `Unsupported` for a
    SASL mechanism `sasl` does not speak (GSSAPI, OAUTHBEARER)."""
    protocol = str(config.get("security.protocol") or "PLAINTEXT").upper()
    credentials = None
    if protocol.startswith("SASL"):
        mechanism = str(config.get("sasl.mechanism") or "GSSAPI").upper()
        if mechanism not in sasl.MECHANISMS:
            raise Unsupported(
                f"sasl.mechanism {mechanism}: the transaction tools here speak {', '.join(sasl.MECHANISMS)}"
            )
        credentials = sasl.Credentials(
            mechanism, str(config.get("sasl.username") or ""), str(config.get("sasl.password") or "")
        )
    tls = None
    if protocol in ("SSL", "SASL_SSL"):
        tls = ssl.create_default_context(cafile=config.get("ssl.ca.location"))
        if config.get("ssl.certificate.location"):
            tls.load_cert_chain(
                str(config["ssl.certificate.location"]),
                config.get("ssl.key.location"),
                config.get("ssl.key.password"),
            )
    return Brokers(tls, credentials, timeout)


def settle(
    config: Mapping,
    transactional_id: str,
    topics: Sequence[str] | None,
    timeout: float,
    fence_ms: int | None = None,
    admit: Callable[[], None] | None = None,
    client: Any = None,
) -> Settled:
    """Finish the hanging transactions of `transactional_id` (the steps above) on the
    brokers of `config` (librdkafka's settings), looking in `topics` (None: every topic
    but Kafka's internal ones).

    With `fence_ms` (the transaction timeout the next producer will ask for), a
    transaction the id holds open (an earlier owner's, `Ongoing`) is ended first: an
    InitProducerId fences that owner and makes the coordinator abort it, and its state
    is asked again every `_FENCE_STEP_S` until the abort is complete. librdkafka's own
    `init_transactions` would be told to wait for that, and ask again only 500 ms
    later. `admit()`, if given, is called just before that InitProducerId and before
    any marker is written, and raises if this node may not act for the id now (what it
    raises is raised). `client`: the librdkafka client whose metadata is asked (`_led`;
    an admin client of `config` is made when None). Raises `wire.WireError` or
    `Unsupported`."""
    deadline = time.monotonic() + timeout
    reach = brokers(config, timeout)
    client = client if client is not None else _admin(config)
    led, _ = _led(client, (), deadline)
    return _settle_id(reach, client, led, transactional_id, topics, deadline, fence_ms, admit)


def settle_others(
    config: Mapping, transactional_id: str, topics: Sequence[str] | None, timeout: float, client: Any = None
) -> Settled:
    """Finish the hanging transactions of every other transactional id that holds one
    open on `topics` (None: every topic but Kafka's internal ones), each as its
    coordinator decided. A producer that committed just before the broker's restart and
    then had nothing more to send never looks for its own; meanwhile every
    read_committed reader of those partitions waits at it: this id's read back of its
    progress (the progress partitions are shared), the output topic's consumers.

    The ids are found from the producer ids the partitions hold transactions of
    (ListTransactions, asked of every broker: each lists those it coordinates); only
    those their coordinator lists as complete (`DECIDED`) are looked at, each through
    steps 1 to 4 above, so a live producer's transaction (`Ongoing`) is never touched.
    Nothing is fenced. `client` as for `settle`. Raises `wire.WireError` or
    `Unsupported`."""
    deadline = time.monotonic() + timeout
    reach = brokers(config, timeout)
    client = client if client is not None else _admin(config)
    led, leader_of = _led(client, topics, deadline)
    holding = {p.producer_id for p in _active(reach, led, leader_of, deadline) if p.transaction_start >= 0}
    if not holding:
        return Settled()
    listed: list[wire.ListedTransaction] = []
    for host, port in sorted(led.values()):
        with reach.connect(host, port) as broker:
            listed += wire.retried(functools.partial(wire.list_transactions, broker, holding), deadline)
    others = sorted({t.transactional_id for t in listed if t.state in DECIDED} - {transactional_id})
    written: list[wire.Marker] = []
    failed: list[tuple[wire.Marker, int]] = []
    for other in others:
        settled = _settle_id(reach, client, led, other, topics, deadline)
        written += settled.written
        failed += settled.failed
    return Settled(tuple(written), tuple(failed))


def _settle_id(
    reach: Brokers,
    client,
    led: dict[int, tuple[str, int]],
    transactional_id: str,
    topics: Sequence[str] | None,
    deadline: float,
    fence_ms: int | None = None,
    admit: Callable[[], None] | None = None,
) -> Settled:
    """Steps 1 to 4 above for one transactional id (`settle`)."""
    host, port = next(iter(led.values()))
    with reach.connect(host, port) as any_broker:
        coordinator = wire.retried(lambda: wire.find_transaction_coordinator(any_broker, transactional_id), deadline)
    with reach.connect(coordinator.host, coordinator.port) as at_coordinator:
        state = _decided(at_coordinator, transactional_id, deadline)
        if state is not None and state.state == "Ongoing" and fence_ms is not None:
            if admit is not None:
                admit()
            error = wire.init_producer_id(at_coordinator, transactional_id, fence_ms)
            if error not in (wire.NONE, wire.CONCURRENT_TRANSACTIONS):
                raise wire.WireError(f"fencing the producers of {transactional_id}: error {error}", error)
            fenced, state = state, _decided(at_coordinator, transactional_id, deadline, _FENCE_STEP_S)
            if state is not None and _moved_on(fenced, state):
                # The fence's abort is complete at an epoch it bumped; a partition's
                # open transaction holds an earlier one, which `markers_for` never
                # matches: no partition need be asked.
                return Settled()
        if state is None or state.state not in DECIDED:
            return Settled(skipped=f"its coordinator's state is {state.state if state else 'unknown'}")
        # Read once the decision is complete: a broker just restarted may still be
        # electing the partitions' leaders.
        led, leader_of = _led(client, topics, deadline)
        markers = markers_for(state, _active(reach, led, leader_of, deadline))
        if not markers:
            return Settled()
        again = _decided(at_coordinator, transactional_id, deadline)
        if again != state:
            return Settled(skipped="a producer of the id moved on while its partitions were looked at")
    if admit is not None:
        admit()
    written: list[wire.Marker] = []
    failed: list[tuple[wire.Marker, int]] = []
    for leader in sorted({leader_of[(m.topic, m.partition)] for m in markers}):
        mine = [m for m in markers if leader_of[(m.topic, m.partition)] == leader]
        with reach.connect(*led[leader]) as at_leader:
            errors = wire.write_txn_markers(at_leader, mine)
        for marker in mine:
            error = errors.get((marker.topic, marker.partition), -1)
            (written.append(marker) if error == wire.NONE else failed.append((marker, error)))
    return Settled(tuple(written), tuple(failed))


def _moved_on(before: wire.TransactionState, after: wire.TransactionState) -> bool:
    """The id's producer (id or epoch) is another than `before`'s: every transaction
    a partition holds open of the id was written at or before `before`'s."""
    return (after.producer_id, after.producer_epoch) != (before.producer_id, before.producer_epoch)


def _active(
    reach: Brokers, led: dict[int, tuple[str, int]], leader_of: dict[tuple[str, int], int], deadline: float
) -> list[wire.ActiveProducer]:
    """The producers every partition of `leader_of` knows, asked of each leader."""
    by_leader: dict[int, dict[str, list[int]]] = {}
    for (name, index), leader in sorted(leader_of.items()):
        by_leader.setdefault(leader, {}).setdefault(name, []).append(index)
    active: list[wire.ActiveProducer] = []
    for leader, partitions in by_leader.items():
        with reach.connect(*led[leader]) as at_leader:
            ask = functools.partial(wire.describe_producers, at_leader, partitions)
            active.extend(wire.retried(ask, deadline))
    return active


def _admin(config: Mapping):
    from confluent_kafka.admin import AdminClient

    return AdminClient(dict(config))


def _led(
    client, topics: Sequence[str] | None, deadline: float
) -> tuple[dict[int, tuple[str, int]], dict[tuple[str, int], int]]:
    """The brokers (id: host, port) and the leader of each partition of `topics` (None:
    every topic but the internal ones; a topic that does not exist has none) as
    `client`'s metadata says, asked again while one has no leader among the brokers,
    until `deadline`."""
    while True:
        metadata = client.list_topics(timeout=max(deadline - time.monotonic(), 1.0))
        brokers = {b.id: (str(b.host), int(b.port)) for b in metadata.brokers.values()}
        leader_of = {
            (name, index): partition.leader
            for name, topic in metadata.topics.items()
            if (name in topics if topics is not None else not name.startswith("__"))
            for index, partition in topic.partitions.items()
        }
        leaderless = sorted(place for place, leader in leader_of.items() if leader not in brokers)
        if brokers and not leaderless:
            return brokers, leader_of
        if time.monotonic() > deadline:
            raise wire.WireError(
                f"no leader for {', '.join(f'{t}[{p}]' for t, p in leaderless)}" if leaderless else "no broker answers",
                later=True,
            )
        time.sleep(_STEP_S)


def _decided(
    connection: wire.Connection, transactional_id: str, deadline: float, step: float = _STEP_S
) -> wire.TransactionState | None:
    """The id's state, asked again while its coordinator is still preparing (its
    markers on their way) until `deadline`; still preparing then raises `wire.WireError`
    (later: a new producer now would make the coordinator forget its decision)."""
    while True:
        state = wire.retried(lambda: wire.describe_transaction(connection, transactional_id), deadline)
        if state is None or state.state not in PREPARING:
            return state
        if time.monotonic() > deadline:
            raise wire.WireError(f"the coordinator of {transactional_id} is still in {state.state}", later=True)
        time.sleep(step)
