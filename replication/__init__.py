"""What makes a node's stores outlive the node: HDFS under the storage protocol, and
content kept on more than one replica.

* `hdfs_storage` - `HdfsStorage`, the storage protocol on HDFS through hdfs-native
  (hsync, lease recovery, `create_parent=False`); the WAL and the swap store run on it
  unchanged.
* `deadline` - `DeadlineRunner`, which bounds each call into an HDFS writer, so that a
  frozen pipeline fails a write instead of hanging it.
* `hdfs_content` - the HDFS content repository (a `ContentRepository` over
  `StorageResourceIO`) and a reader of another node's content.
* `replicating_content` - `ReplicatingContentRepository`: every claim on local disk and
  on HDFS, complete when every required replica holds it.
* `provenance_export` - `ProvenanceExporter` and its thread: each provenance event
  file, once rolled over, as Parquet files on HDFS (`node=<node>/hour=<hour>/`) for
  Spark, written under a temporary name then renamed, idempotent, retried after a failure.
* `content_fsck` - checks every replica against its own checksums, and repairs the
  missing, short or damaged ones from a replica that verifies (never from one that
  does not; two verified replicas that disagree are reported, not repaired).
"""
