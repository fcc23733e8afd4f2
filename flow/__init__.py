"""The flow engine (seeds 001 and 004): FlowFiles, queues, sessions, processors, engines.

    from flow.definition import load_flow
    from flow.shard import open_shard
    from flow.graph import FlowGraph
    from flow.engine import TraditionalEngine
    from flow.stateless import StatelessFlow

    definition = load_flow("flow.yaml", {"data_dir": "/data"})   # validated up front
    graph = FlowGraph(definition)                                  # processors + one queue per connection
    shard = open_shard(storage, "/data/shards/local", "local", graph.queues.values())
    report = shard.recover()                                       # WAL + swapped queues (registered)
    content.recover(report.live_claims)                            # claimant counts, orphans destroyed
    engine = TraditionalEngine(graph, shard, content, provenance)  # thread pool; engine.start()/stop()

    StatelessFlow(definition).trigger([(attributes, data)])        # one transaction, callbacks held

Modules, one concept each:
  flowfile       the immutable FlowFile (copy-on-write attributes and content)
  queue          FlowFileQueue: prioritizers, back-pressure, penalties, expiration, swap bookkeeping
  swap_policy    the pure swap decision; prioritizers: the sort keys
  shard          QueueShard: a set of queues + its WAL + its swap store (the unit a cluster moves)
  session        ProcessSession and the Transaction it commits
  commit         DurableCommitter (traditional) and HeldCommitter (stateless): the commit order
  provenance_outbox  provenance that survives a crash between the WAL and provenance
  engine, scheduling  the traditional engine and its pure scheduling decision
  stateless      the stateless engine; processors/stateless.py: ExecuteStateless
  definition     YAML/JSON flow definitions and their validation; graph: the wiring
  processor      the processor API; processors/: the standard processors
  expression, units  attribute expressions, durations and sizes
  memory_content the in-memory content repository of the stateless engine

Errors derive from `errors.FlowError`. The standalone node that wires all this to local
repositories is `cluster.standalone`.
"""
