"""The flow engine, after NiFi's: FlowFiles, queues, sessions, processors, engines.

    from flow.loading import load_flow
    from flow.shard import open_shard
    from flow.graph import FlowGraph
    from flow.engine import TraditionalEngine
    from flow.services import ServiceRegistry
    from flow.spark.session import SparkSessionFactory
    from flow.stateless import StatelessFlow

    definition = load_flow("flow.yaml", {"data_dir": "/data"})   # validated up front, standard processors
    graph = FlowGraph(definition)                                  # processors + one queue per connection
    shard = open_shard(storage, "/data/shards/local", "local", graph.queues.values())
    report = shard.recover()                                       # WAL + swapped queues (registered)
    content.recover(report.live_claims)                            # claimant counts, orphans destroyed
    services = ServiceRegistry()                                   # the node's shared services
    spark = SparkSessionFactory()                                  # embedded local[*], started on first use
    services.register("spark", spark, spark.stop)
    engine = TraditionalEngine(graph, shard, content, provenance,  # thread pool; engine.start()/stop()
                               commit_gate=gate, services=services)
    ...
    services.close()                                               # after the engines stopped

    StatelessFlow(definition).trigger([(attributes, data)])        # one transaction, callbacks held

Modules, one concept each:
  flowfile       the immutable FlowFile (copy-on-write attributes and content)
  queue          FlowFileQueue: prioritizers, back-pressure, penalties, expiration, swap bookkeeping
  swap_policy    the pure swap decision; prioritizers: the sort keys
  shard          QueueShard: a set of queues + its WAL + its swap store (the unit a cluster moves)
  queue_inspection, queue_drop, replay  an operator's list queue and lookup, drop FlowFiles,
                 and replay from provenance (what the admin API offers)
  session        ProcessSession and the Transaction it commits
  commit         DurableCommitter (traditional) and HeldCommitter (stateless): the commit order
                 in stages, and CommitHooks (fault seams of tests); commit_outcome: the pure table
                 of what a failed stage comes to; commit_gate: CommitGate, the node's production gate
  provenance_outbox  provenance that survives a crash between the WAL and provenance
  engine, scheduling  the traditional engine and its pure scheduling decision
  stateless      the stateless engine; processors/stateless.py: ExecuteStateless
  definition     YAML/JSON flow definitions, validated against a processor registry given to it:
                 definition_document (with _yaml, _limits) text to checked data; definition_parser
                 (with _places) the validation; definition_model the classes it builds; graph: the wiring
  registry       ProcessorRegistry: processor types by name, and `custody.processors` entry points
  loading        load_flow/parse_flow against standard_registry() (standard processors + entry points)
  processor      the processor API and ProcessContext; processors/: the standard processors
                 (processors/intake: what a source took, kept in its state, taken once)
  services       ServiceRegistry: node-level shared services, started on first lookup
  spark          Spark in a flow: the node's SparkSession ("spark"), the staging of batches
                 ("spark.staging"), the batch runner of the Spark processors
  expression, units  attribute expressions, durations and sizes; bounded_regex: the worst case of
                 an expression's pattern, known before it runs
  memory_content the in-memory content repository of the stateless engine

Errors derive from `errors.FlowError`. The standalone node that wires all this to local
repositories is `cluster.node.standalone`.
"""
