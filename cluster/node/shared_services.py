"""The node-level services a node's processors share (`flow.services.ServiceRegistry`),
made once per process and handed to every engine the node runs:

    "spark"   a SparkSession (`flow.spark_session`): embedded `local[*]` by default;
              started by the first processor that asks for it, stopped with the node.

Nothing starts when the registry is made: a flow that never asks for Spark never
starts a JVM.
"""

from __future__ import annotations

from flow.services import ServiceRegistry
from flow.spark_session import LOCAL_MASTER, SparkSessionFactory


def node_services(name: str, *, spark_master: str = LOCAL_MASTER, spark_conf: dict | None = None) -> ServiceRegistry:
    """The shared services of the node called `name` (its Spark application's name)."""
    services = ServiceRegistry()
    spark = SparkSessionFactory(spark_master, dict(spark_conf or {}), app_name=f"custody-{name}")
    services.register("spark", spark, spark.stop)
    return services
