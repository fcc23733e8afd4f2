"""What a clustered node counts of the failovers it takes part in, across its incarnations.

    instruments = FailoverInstruments()      # one per node; every ClusterMember updates it
    instruments.snapshot()                   # FailoverMeasures, a copy for the admin API

The leader counts the plans it writes; the member counts each adoption by outcome
and times it from its claim to the running runtime; adoption times each fence
(the rename, then the lease recovery of every file).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from repositories.instruments import ByLabel, Counter, HistogramSnapshot, LatencyHistogram

# Outcomes of one adoption attempt, as `FailoverInstruments.adoptions` counts them.
ADOPTED = "adopted"  # fenced, recovered, marked adopted and running
FENCED = "fenced"  # a newer owner has the shard: this node stands aside
RETRIED = "retried"  # ZooKeeper, HDFS or the runtime failed; the adoption is tried again
HELD = "held"  # the shard cannot be opened as it is: held for an operator (`core.adoption_failures`)
OUTCOMES = (ADOPTED, FENCED, RETRIED, HELD)


@dataclass(frozen=True)
class FailoverMeasures:
    plans_led: int
    adoptions: dict[str, int]  # outcome -> attempts
    fencing_seconds: HistogramSnapshot
    adoption_seconds: HistogramSnapshot


@dataclass(frozen=True)
class FailoverInstruments:
    plans_led: Counter = field(default_factory=Counter)  # failover plans written as the leader
    adoptions: ByLabel[Counter] = field(default_factory=lambda: ByLabel(Counter, OUTCOMES))
    fencing_durations: LatencyHistogram = field(default_factory=LatencyHistogram)
    adoption_durations: LatencyHistogram = field(default_factory=LatencyHistogram)

    def snapshot(self) -> FailoverMeasures:
        return FailoverMeasures(
            self.plans_led.snapshot(),
            self.adoptions.snapshot(),
            self.fencing_durations.snapshot(),
            self.adoption_durations.snapshot(),
        )
