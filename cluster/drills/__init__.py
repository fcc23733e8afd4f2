"""Drills: proof that what went in came out exactly once, under faults injected on
purpose (Jepsen's way). Used by the integration tests and, as `custody drill`, by
operators. May import every other part of `cluster`.

  checker        the exactly-once checkers: lost, duplicated, unexpected ids at the
                 sink, in the WALs and in provenance
  ledger_runtime the ledger workload (a flow-less shard runtime) and its checker
  ledger_node    a node process running the ledger workload
  harness        real node processes, their events, ZooKeeper views of a cluster
  flow_cluster   a cluster of `custody node` processes on the sample flow
  faults         fault injectors: session expiry, quorum loss
  fault_kinds    the faults `custody drill` injects: names, what each does, parsing
  targets        the DrillTarget protocol: what the round loop needs from a cluster
  local          LocalTarget: node processes and embedded services on this machine
  runner         the round loop: victims, faults, failover timings, the final check
  report         figures per fault kind, the table, progress lines, the JSON report
  plot           the timeline PNG: deliveries per second, faults, failover phases
"""
