"""Node-local durable stores: the FlowFile write-ahead log, content, provenance and swap.

Nothing in this package knows about ZooKeeper, HDFS clients or flows. Every store
writes through the small `repositories.storage.Storage` protocol, so the same code
runs on local disk and, through `replication`, on HDFS.
"""
