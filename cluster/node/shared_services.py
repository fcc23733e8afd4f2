"""The node-level services a node's processors share (`flow.services.ServiceRegistry`),
made once per process and handed to every engine the node runs:

    "spark"           a SparkSession (`flow.spark.session`): embedded `local[*]` by
                      default; started by the first processor that asks for it, stopped
                      with the node.
    "spark.staging"   where Spark batches are staged (`flow.spark.staging`): the node's
                      data directory on a standalone node, the cluster's HDFS directory
                      on a clustered one.

Nothing starts when the registry is made: a flow that never asks for Spark never
starts a JVM.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping

from flow.services import ServiceRegistry
from flow.spark.session import LOCAL_MASTER, SPARK_SERVICE, SparkSessionFactory
from flow.spark.staging import STAGING_SERVICE, SparkStaging


def node_services(
    name: str,
    staging: SparkStaging,
    *,
    spark_master: str = LOCAL_MASTER,
    spark_conf: Mapping[str, str] | None = None,
    spark_session=None,
) -> ServiceRegistry:
    """The shared services of the node called `name` (its Spark application's name).
    With `spark_session`, a session its caller owns (an embedding application's): the
    node uses it as it is and leaves it running when it stops."""
    services = ServiceRegistry()
    if spark_session is not None:
        services.register(SPARK_SERVICE, lambda: spark_session)
    else:
        spark = SparkSessionFactory(spark_master, dict(spark_conf or {}), app_name=f"custody-{name}")
        services.register(SPARK_SERVICE, spark, spark.stop, alive=spark.alive)
    services.register(STAGING_SERVICE, lambda: staging)
    return services


def hdfs_spark_conf(hdfs_config: Mapping[str, str], spark_conf: Mapping[str, str]) -> dict[str, str]:
    """The Spark conf of a clustered node: its own `[spark.conf]` over the node's HDFS
    client settings (as `spark.hadoop.<key>`), with the executors reaching HDFS as the
    user the node does."""
    user = os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
    return {
        **{f"spark.hadoop.{key}": value for key, value in hdfs_config.items()},
        "spark.executorEnv.HADOOP_USER_NAME": user,
        **spark_conf,
    }
