"""Spark: the standalone master and worker read from the real HDFS; local[*] works embedded."""

import subprocess
import sys
import textwrap

from repositories.storage import join

SPARK_JOB = textwrap.dedent(
    """
    import os
    import sys
    from cluster.services.spark import spark_environment
    from flow.spark.session import EMBEDDED_CONF, build_spark_session

    master, path = sys.argv[1], sys.argv[2]
    # The product's builder, with the environment of the harness's Spark, bound to
    # loopback with the embedded footprint whatever the master.
    for key, value in spark_environment().items():
        os.environ.setdefault(key, value)
    spark = build_spark_session(master, {**EMBEDDED_CONF, "spark.cores.max": "1"}, app_name="custody-hdfs-read")
    try:
        assert spark.sparkContext.master == master
        rows = spark.read.text(path)
        total = rows.count()
        distinct_ids = rows.selectExpr("split(value, ',')[0] AS id").distinct().count()
        print(f"RESULT {total} {distinct_ids}")
    finally:
        spark.stop()
    """
)


def test_standalone_cluster_reads_a_file_from_hdfs(spark_standalone, hdfs_cluster, hdfs_store, tmp_path):
    path = join(hdfs_store.root, "records.csv")
    with hdfs_store.storage.create(path) as handle:
        for i in range(5000):
            handle.write(f"id-{i % 1234},{i}\n".encode())
        handle.sync()
    script = tmp_path / "job.py"
    script.write_text(SPARK_JOB)
    # A SparkContext is one per process: the standalone job runs in its own driver
    # process, as `spark-submit` would run it, leaving the embedded session to others.
    result = subprocess.run(
        [sys.executable, str(script), spark_standalone.master_url, f"{hdfs_cluster.url}{path}"],
        capture_output=True,
        timeout=300,
    )
    output = result.stdout.decode(errors="replace")
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
    assert "RESULT 5000 1234" in output
    assert spark_standalone.healthy()


def test_local_session_runs_sql(hdfs_store, spark_local):
    # hdfs_store first: the session must start in a process whose HDFS client threads
    # already run (pyspark's own JVM launch could deadlock there; see services.spark).
    frame = spark_local.createDataFrame([(i, i % 3) for i in range(100)], ["n", "bucket"])
    counts = {row["bucket"]: row["count"] for row in frame.groupBy("bucket").count().collect()}
    assert counts == {0: 34, 1: 33, 2: 33}
