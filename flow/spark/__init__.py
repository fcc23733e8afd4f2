"""Spark in a flow.

  session    the node's SparkSession, built from a master URL and conf (the "spark" service)
  staging    where a batch's files live while Spark works on them (the "spark.staging" service)
  batches    a batch's identity, staging name and output ids, derived from its input ids (pure)
  records    record formats, reading a staged batch as one DataFrame, writing a result
  failures   whose fault a failed batch is: the input's (to `failure`) or Spark's (retry)

The processors are in `flow.processors.spark`. pyspark is imported only when a session
is built or a batch runs: importing this package never loads it.
"""
