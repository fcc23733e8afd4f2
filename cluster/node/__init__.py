"""Processes: what wires a node together. May import `cluster.core`, `cluster.zk`,
`cluster.failover`, `cluster.errors`, `cluster.clients` and itself.

  clustered      ClusteredNode: `custody node --config NODE.toml`
  standalone     StandaloneNode: `custody run`, local repositories only
  config         NODE.toml read into NodeConfig: what one key cannot say alone
  config_schema  NODE.toml's schema: every section and key, its type, default and meaning
  toml_schema    the schema language (after ZConfig's): keys, datatypes, the walk over a file
  content        the node's content: local disk and HDFS, foreign claims from HDFS
  flow_runtime   FlowRuntime: one shard's flow engine, behind the commit gate
  shard_opening  opening a shard (WAL, swap, content, provenance outbox), for both nodes
  lifecycle      one incarnation after another; the node's JSON events
  control        NodeControl: status, shards, queues, provenance, offload, for the
                 CLI and the admin API, without reaching into private state
  decommission   decommissioning a node of the cluster, and connecting it again
  hand_over      a new incarnation takes its sources' state over; a survivor a
                 decommissioned node's
  shared_services the services a node's processors share by name (Spark, lazily)
  pause_monitor  one log line when the whole process stood still
  signal_stop    the stop of a long-running command, set by SIGTERM or SIGINT
"""
