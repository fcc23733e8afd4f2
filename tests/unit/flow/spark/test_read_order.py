"""Which physical plans keep the order their inputs were read in (so a deterministic
result needs no shuffle and no sort), read from Spark's own tree strings."""

import pytest

from flow.spark.records import MAX_SPLIT_BYTES, fixed_read_plan, keeps_read_order

SCAN = (
    "FileScan json [amount#6L,id#7L,name#8] Batched: false, Format: JSON, "
    "Location: InMemoryFileIndex(1 paths)[file:/in/in-000000.json], ReadSchema: struct<id:bigint>"
)

NARROW = f"""Coalesce 4
+- *(1) Project [id#7L, upper(name#8) AS name#12]
   +- *(1) Filter (isnotnull(amount#6L) AND (amount#6L > 3))
      +- {SCAN}
"""
BROADCAST_JOIN = f"""AdaptiveSparkPlan isFinalPlan=false
+- Project [id#7L, amount#6L, name#8, tag#11]
   +- BroadcastHashJoin [id#7L], [id#10L], LeftOuter, BuildRight, false, false
      :- {SCAN}
      +- BroadcastExchange HashedRelationBroadcastMode(List(input[0, bigint, false]),false), [plan_id=52]
         +- Filter isnotnull(id#10L)
            +- Scan ExistingRDD[id#10L,tag#11]
"""
AGGREGATE = f"""AdaptiveSparkPlan isFinalPlan=false
+- HashAggregate(keys=[name#8], functions=[count(1)], output=[name#8, count(1)#14L])
   +- Exchange hashpartitioning(name#8, 4), ENSURE_REQUIREMENTS, [plan_id=28]
      +- HashAggregate(keys=[name#8], functions=[partial_count(1)], output=[name#8, count#20L])
         +- {SCAN}
"""
WINDOW = f"""AdaptiveSparkPlan isFinalPlan=false
+- Window [row_number() windowspecdefinition(id#7L ASC NULLS FIRST) AS rn#18], [id#7L ASC NULLS FIRST]
   +- Sort [id#7L ASC NULLS FIRST], false, 0
      +- Exchange SinglePartition, ENSURE_REQUIREMENTS, [plan_id=84]
         +- {SCAN}
"""
LIMIT = f"""CollectLimit 5
+- {SCAN}
"""
SUBQUERY_WITH_A_SHUFFLE = f"""*(1) Project [id#7L]
+- *(1) Filter (amount#6L > Subquery subquery#30, [id=#61])
   :  +- Subquery subquery#30, [id=#61]
   :     +- *(2) HashAggregate(keys=[], functions=[avg(amount#40L)])
   :        +- ReusedExchange [amount#40L], Exchange SinglePartition, [plan_id=55]
   +- {SCAN}
"""


@pytest.mark.parametrize(
    "plan, keeps",
    [
        (NARROW, True),
        (BROADCAST_JOIN, True),
        (AGGREGATE, False),
        (WINDOW, False),
        (LIMIT, False),
        (SUBQUERY_WITH_A_SHUFFLE, False),
    ],
)
def test_only_a_plan_that_moves_no_record_between_partitions_keeps_the_read_order(plan, keeps):
    assert keeps_read_order(plan) is keeps


def test_a_column_or_a_path_named_like_a_shuffle_is_not_taken_for_one():
    plan = NARROW.replace("upper(name#8) AS name#12", "upper(name#8) AS Exchange#12").replace(
        "/in/in-000000.json", "/Exchange/in-000000.json"
    )
    assert keeps_read_order(plan)


def test_the_read_plan_is_fixed_by_the_partitions_asked_for_and_nothing_of_the_cluster():
    plan = fixed_read_plan(4)
    assert plan["spark.sql.files.minPartitionNum"] == "4"
    assert plan["spark.sql.files.maxPartitionBytes"] == str(MAX_SPLIT_BYTES)
    assert plan["spark.sql.sources.ignoreDataLocality"] == "true"
    assert fixed_read_plan(4) == plan and fixed_read_plan(2) != plan
