"""A new transactional producer for PublishKafka: every earlier producer of its id
fenced, the transactions the brokers hold open for good finished (`hanging`), and the
ids its last progress record names read back (`delivery.read_back`).

Each step is a round trip or more to the brokers, and on an adopted shard they all lie
between the adoption and its first record out. Two runs of them go side by side:

- the fencing, in order: the id's own hanging transactions finished (an earlier
  owner's open one ended by a fencing InitProducerId), then `init_transactions`;
- beside it, on a thread of its own: the progress topic's partition count (from the
  progress reader's metadata, or the topic created) and other ids' hanging
  transactions on the partitions this producer writes. Neither fences anything nor
  depends on the fencing.

The read back follows both: it needs the id's partition, and the id's last transaction
ended (fenced) so that the partition's last stable offset passes it. When the steps
take more than a second together the node's log says how long each took (`Steps`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, TypeVar

from ...errors import NotAdmitted
from ...steps import Steps
from . import hanging, progress, wire
from .delivery import BROKER_WAIT_S, ProgressReader, SinkProducer, Undelivered, create_progress_topic, read_back

if TYPE_CHECKING:
    from ...processor import ProcessContext

IDLE_PROBE_S = 0.5  # the idle look: whether a broker answers again (it holds the client)
IDLE_SETTLE_S = 2.0  # the idle look: finishing what a restart left open
T = TypeVar("T")


def transactional_producer(
    context: ProcessContext,
    transactional_id: str,
    admit: Callable[[], None],
    fencing: AbstractContextManager | None = None,
) -> tuple[SinkProducer, frozenset[str]]:
    """A new transactional producer, every earlier one with its id fenced, and the ids
    its last progress record names. `admit()` is called first (a node deposed makes
    nothing) and again just before each request that fences the id's producers (the
    open transaction ended, `init_transactions`), and raises if this node may not act
    for the shard now; `fencing` is held from the first fence to the end of the last.
    Raises `Undelivered`, or what `admit` raises."""
    from confluent_kafka import KafkaException

    admit()
    steps, aside = Steps(), Steps()
    producer = SinkProducer(context, transactional_id)
    reader: ProgressReader | None = None
    beside: Future[int] | None = None
    try:
        try:  # its clients connect while the id is fenced (`ProgressReader`)
            reader = ProgressReader(producer.config, transactional_id)
        except KafkaException:
            pass  # the read back makes them, and says why it cannot
        steps.done("made")
        asking = reader
        beside = _on_a_thread(
            lambda: _place_and_others(context, producer, asking, transactional_id, aside),
            f"{transactional_id}-beside-the-fencing",
        )
        with fencing or nullcontext():
            _finish_hanging(context, producer, transactional_id, admit)
            steps.done("own hanging transactions")
            admit()
            producer.init_transactions()
            steps.done("init_transactions")
        producer.progress_partition = place = beside.result()
        steps.done("waiting for the steps beside")
        held, reader = reader, None  # the read back closes them
        topic = context["progress_topic"]
        ids = read_back(producer.config, topic, transactional_id, context["transaction_timeout"], place, held)
        steps.done("read back")
    except BaseException:
        if reader is not None:
            _close_when_done(reader, beside)
        producer.discard()
        raise
    slow = steps.slow()
    if slow is not None:
        context.logger.info(
            "%s: the producer of %s took %s; beside the fencing: %s",
            context.processor_id,
            transactional_id,
            slow,
            aside.said(),
        )
    return producer, ids


def _place_and_others(
    context: ProcessContext, producer: SinkProducer, reader: ProgressReader | None, transactional_id: str, steps: Steps
) -> int:
    """The id's progress partition, and other ids' hanging transactions finished (the
    steps beside the fencing)."""
    # Asked for each new producer: partitions added since move the id once (`progress`).
    place = progress.partition(transactional_id, _progress_partitions(producer, reader, context["progress_topic"]))
    steps.done("progress partition")
    _finish_others_hanging(context, producer, reader, transactional_id)
    steps.done("other ids' hanging transactions")
    return place


def _on_a_thread(work: Callable[[], T], name: str) -> Future[T]:
    """`work` run on a daemon thread of its own; its result, or what it raised."""
    done: Future[T] = Future()

    def run() -> None:
        try:
            done.set_result(work())
        except BaseException as error:  # noqa: BLE001 - handed to whoever waits for it
            done.set_exception(error)

    threading.Thread(target=run, name=name, daemon=True).start()
    return done


def _close_when_done(reader: ProgressReader, beside: Future | None) -> None:
    """Close the progress reader once the steps beside no longer use it (at once if
    they never began): a failed fencing does not wait for them."""
    if beside is None:
        reader.close()
    else:
        beside.add_done_callback(lambda _: reader.close())


def _progress_partitions(producer: SinkProducer, reader: ProgressReader | None, topic: str) -> int:
    """The progress topic's partition count: as the reader's metadata says (its
    connection is made already), else the topic is created (`create_progress_topic`)."""
    from confluent_kafka import KafkaException

    if reader is not None:
        try:
            count = reader.partitions(topic)
        except KafkaException:
            count = 0  # asked again by the admin client, which says why it cannot
        if count:
            return count
    return create_progress_topic(producer.config, topic)


def _finish_hanging(
    context: ProcessContext, producer: SinkProducer, transactional_id: str, admit: Callable[[], None]
) -> None:
    """Before `init_transactions` forgets it, the decision of the id's last transaction
    written to the partitions whose marker its coordinator dropped (`hanging`). A
    failure to look is logged (once a minute) and the producer made all the same: a
    transaction left open then waits for the operator, as it would without this. Brokers
    that do not answer at all fail the producer, as its init_transactions would. The
    brokers' metadata is asked through the producer itself, whose connection its
    init_transactions then uses, not through an admin client made for the question (a
    connection, an ApiVersions and librdkafka's connection spacing more on the
    takeover's path). Raises `Undelivered`."""
    from confluent_kafka import KafkaException

    topics = _written_topics(context)
    try:
        fence_ms = int(context["transaction_timeout"] * 1000)
        settled = hanging.settle(
            producer.config, transactional_id, topics, BROKER_WAIT_S, fence_ms, admit, producer.producer
        )
    except KafkaException as error:  # no metadata: no broker answers, and init_transactions would not either
        raise Undelivered(producer.errors.explain(f"reading the brokers' metadata: {error}"), discard=True) from None
    except (wire.WireError, hanging.Unsupported) as error:
        if isinstance(error, wire.WireError) and error.later:
            # A coordinator still loading, a partition without a leader: the decision is kept until then.
            raise Undelivered(
                f"looking for hanging transactions of {transactional_id}: {error}", discard=True
            ) from None
        context.limited_log.warning(
            f"{context.processor_id}:hanging",
            "%s: could not look for transactions of %s that their coordinator decided and a partition still holds "
            "open: %s",
            context.processor_id,
            transactional_id,
            error,
        )
        return
    _report_settled(context, settled, transactional_id)


def _finish_others_hanging(
    context: ProcessContext, producer: SinkProducer, reader: ProgressReader | None, transactional_id: str
) -> None:
    """Another id's hanging transactions on the partitions this producer writes, left by
    a producer that had nothing more to send: the read back would wait at one on a
    progress partition they share, and give up, for good. Fences nothing (beside the
    fencing, outside its hold); a failure to look is logged once a minute."""
    from confluent_kafka import KafkaException

    topics = _written_topics(context)
    try:
        client = reader.reader if reader is not None else None
        others = hanging.settle_others(producer.config, transactional_id, topics, BROKER_WAIT_S, client)
    except (KafkaException, wire.WireError, hanging.Unsupported) as error:
        context.limited_log.warning(
            f"{context.processor_id}:hanging-others",
            "%s: could not look for transactions of other producers that their coordinator decided and a "
            "partition still holds open: %s",
            context.processor_id,
            error,
        )
        return
    _report_settled(context, others, None)


def finish_idle_hanging(context: ProcessContext, producer: SinkProducer, admit: Callable[[], None]) -> bool:
    """The idle look after an outage (`PublishKafka._look_while_idle`): the transactions of the idle
    producer's id that a partition holds open although their coordinator decided them,
    finished as decided; nothing fenced. False while no broker answers or a coordinator
    still loads (looked at again a second later); True once looked at, or for good not
    (this node deposed: the shard's new owner finishes them; a failure logged)."""
    from confluent_kafka import KafkaException

    assert producer.transactional_id is not None
    try:
        producer.producer.list_topics(timeout=IDLE_PROBE_S)  # a broker answers again
    except KafkaException:
        return False
    try:
        settled = hanging.settle(
            producer.config,
            producer.transactional_id,
            _written_topics(context),
            IDLE_SETTLE_S,
            admit=admit,
            client=producer.producer,
        )
    except NotAdmitted:
        return True
    except KafkaException:
        return False
    except (wire.WireError, hanging.Unsupported) as error:
        if isinstance(error, wire.WireError) and error.later:
            return False
        context.limited_log.warning(
            f"{context.processor_id}:hanging",
            "%s: could not look for transactions of %s that their coordinator decided and a partition still holds "
            "open: %s",
            context.processor_id,
            producer.transactional_id,
            error,
        )
        return True
    _report_settled(context, settled, producer.transactional_id)
    return True


def _written_topics(context: ProcessContext) -> list[str] | None:
    """The topics this producer writes; None when the topic is an expression (any)."""
    topic = context["topic"]
    return [context["progress_topic"], topic.text] if topic.is_literal else None


def _report_settled(context: ProcessContext, settled: hanging.Settled, transactional_id: str | None) -> None:
    """Log each hanging transaction finished (`transactional_id` None: another id's)."""
    for marker in settled.written:
        context.logger.warning(
            "%s: %s without writing the partition's marker (a hanging transaction); wrote its %s marker",
            context.processor_id,
            _left_open(marker, transactional_id),
            "COMMIT" if marker.commit else "ABORT",
        )
    for marker, code in settled.failed:
        context.logger.error(
            "%s: %s; writing its marker failed with Kafka error %d: read_committed readers stop at it until it is "
            "written (kafka-transactions.sh)",
            context.processor_id,
            _left_open(marker, transactional_id),
            code,
        )


def _left_open(marker: wire.Marker, transactional_id: str | None) -> str:
    whose = transactional_id or "another transactional id"
    return (
        f"{marker.topic}[{marker.partition}] held open a transaction of {whose} (producer id "
        f"{marker.producer_id}, epoch {marker.producer_epoch}) that its coordinator had "
        f"{'committed' if marker.commit else 'aborted'}"
    )
