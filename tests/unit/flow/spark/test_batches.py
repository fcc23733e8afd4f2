"""A Spark batch's identities are pure functions of its input ids."""

import uuid

from flow.spark.batches import batch_id, output_id, parse_staging_name, part_index, staging_name

IDS = [str(uuid.UUID(int=n, version=4)) for n in range(5)]


def test_a_batch_is_the_same_whatever_order_its_flowfiles_come_in():
    assert batch_id(IDS) == batch_id(reversed(IDS)) == batch_id(IDS[2:] + IDS[:2])
    assert batch_id(IDS) != batch_id(IDS[:4])
    assert len(batch_id(IDS)) == 20 and int(batch_id(IDS), 16) >= 0


def test_output_ids_are_uuids_fixed_by_the_batch_and_the_index():
    batch = batch_id(IDS)
    assert output_id(batch, 0) == output_id(batch_id(list(reversed(IDS))), 0)
    assert len({output_id(batch, index) for index in range(100)}) == 100
    assert output_id(batch, 0) != output_id(batch_id(IDS[:1]), 0)
    assert uuid.UUID(output_id(batch, 3)).version == 5


def test_staging_names_carry_the_epoch_and_parse_back():
    batch = batch_id(IDS)
    assert parse_staging_name(staging_name(batch, 12)) == (batch, 12)
    for other in ("manifest.json", f"{batch}-e", f"{batch}-12", "abc-e1", f"{batch}-e1x"):
        assert parse_staging_name(other) is None


def test_only_sparks_part_files_have_a_partition_number():
    assert part_index("part-00003-9f1c-c000.json") == 3
    assert part_index("part-00000-9f1c-c000.snappy.parquet") == 0
    for other in ("_SUCCESS", ".part-00001-9f1c-c000.json.crc", "data.json"):
        assert part_index(other) is None
