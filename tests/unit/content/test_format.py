from repositories.claims import SECTIONS_PER_CONTAINER, ResourceClaim
from repositories.content.format import (
    ResourceIdGenerator,
    archive_path,
    resource_path,
    section_of,
)


def test_layout_paths():
    resource = ResourceClaim("disk1", 17, "123-abc-9")
    assert resource_path("/data/c1", resource) == "/data/c1/17/123-abc-9"
    assert archive_path("/data/c1", resource) == "/data/c1/17/archive/123-abc-9"


def test_sections_rotate_in_runs_and_wrap_at_1024():
    assert SECTIONS_PER_CONTAINER == 1024
    assert section_of(0) == section_of(15) == 0
    assert section_of(16) == 1
    assert section_of(1023 * 16) == 1023
    assert section_of(1024 * 16) == 0


def test_ids_are_unique_across_generators_and_valid_claim_ids():
    first, second = ResourceIdGenerator(start_ms=5), ResourceIdGenerator(start_ms=5)
    ids = {first.next()[1] for _ in range(100)} | {second.next()[1] for _ in range(100)}
    assert len(ids) == 200
    for resource_id in ids:
        ResourceClaim("c", 0, resource_id)  # passes the claim's path-escape validation
