"""Which worker of a node takes what: the node's sources split over its worker processes.

A standalone node may run N worker processes (`custody run --workers N`), each a
complete engine over a shard of its own. Every worker runs the same flow, so each
source must either split its input so that no two workers take the same thing, or run
in one worker only, as NiFi's "primary node only":

    GetFile            every worker; a file goes to the worker its path hashes to
                       (`takes_path`: BLAKE2b of the path, the same on every run)
    ConsumeKafka       every worker; a partition goes to the worker its index gives
                       (`takes_partition`: partition modulo N)
    ListenHTTP         every worker when it keeps no idempotency keys (an empty
                       `idempotency_key_header`): the kernel spreads the connections
                       over the workers' sockets (SO_REUSEPORT on one port); with keys
                       (the default), worker 0 only: a key is kept in its worker's
                       state, and a client's retry that the kernel gave to another
                       worker would not find it and be delivered twice
    GenerateFlowFile   every worker, as NiFi's concurrent tasks; `max_count` is split so
                       the workers' shares add up to it exactly (`share`), and worker I
                       numbers its FlowFiles I, I+N, I+2N... (`sequence`)
    any other source   worker 0 only (`runs_in`): ListFile (its listing mark),
                       ExecuteStateless (the embedded flow's own sources), a NiFi Python
                       source, a processor of a package: two workers would each act on
                       the same state, taking the same input twice

Processors that have input run in every worker: their input is their worker's own
queues. A processor learns its worker from `ProcessContext.worker`; a node of one worker
(every node but a supervisor's) gives `SOLE_WORKER`, index 0 of 1, with which every
decision here takes everything, so that nothing changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

# The sources that split their input over the workers (or, ListenHTTP, have the kernel
# split it): every worker runs them. Every other source runs in worker 0 only.
IN_EVERY_WORKER = frozenset({"GetFile", "ConsumeKafka", "ListenHTTP", "GenerateFlowFile"})
# Of those, the ones that keep state a retried input must find, by the property that
# turns it on: set, they run in worker 0 only.
ONE_WORKER_WHEN_SET = {"ListenHTTP": "idempotency_key_header"}


@dataclass(frozen=True)
class Worker:
    """Worker `index` of `count` (0 <= index < count)."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"worker {self.index} of {self.count}: the index must be from 0 to {self.count - 1}")

    @property
    def sole(self) -> bool:
        return self.count == 1

    def runs_in(self, type_name: str, *, is_source: bool, properties: Mapping[str, object] | None = None) -> bool:
        """Whether this worker runs a processor of `type_name` with `properties`: every
        processor with input, the sources of `IN_EVERY_WORKER` (but those of
        `ONE_WORKER_WHEN_SET` with their property set), and the other sources in worker
        0 only."""
        if self.index == 0 or not is_source:
            return True
        if type_name not in IN_EVERY_WORKER:
            return False
        setting = ONE_WORKER_WHEN_SET.get(type_name)
        return setting is None or not str((properties or {}).get(setting) or "").strip()

    def takes_path(self, path: str) -> bool:
        """Whether the file at `path` is this worker's to take. Python's `hash` of a str is
        salted per process: two workers, or one restarted, would disagree."""
        if self.count == 1:
            return True
        digest = hashlib.blake2b(path.encode("utf-8", "surrogateescape"), digest_size=8).digest()
        return int.from_bytes(digest, "big") % self.count == self.index

    def takes_partition(self, partition: int) -> bool:
        """Whether Kafka partition `partition` (of any topic) is this worker's to read."""
        return partition % self.count == self.index

    def share(self, total: int) -> int:
        """This worker's part of `total` things made by all the workers: the workers'
        shares differ by at most one and add up to `total`. It is the number of
        `sequence` numbers of this worker below `total`."""
        return (total - self.index + self.count - 1) // self.count if total > self.index else 0

    def sequence(self, local: int) -> int:
        """The node-wide number of this worker's `local`-th thing (0, 1, ...): worker I
        of N numbers I, I+N, I+2N..., so the workers' numbers never meet and those below
        a total are exactly 0 .. total-1."""
        return self.index + local * self.count


SOLE_WORKER = Worker()
