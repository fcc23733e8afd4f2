"""Names and ids read from records, paths and requests are validated whole: in a Python
regular expression `$` also matches before a trailing newline, so a pattern ending in
`$` used with `match` let an id ending in "\\n" through (a claim naming a file that
is not the one it was written for, a node name in an HDFS path, a time bound the
admin API's spec refuses)."""

from __future__ import annotations

import pytest

from flow.spark.batches import parse_staging_name, staging_name
from repositories.claims import ContentClaim, InvalidClaimError, ResourceClaim
from repositories.provenance.parquet_export import check_node_name
from repositories.provenance.query import parse_time


@pytest.mark.parametrize("field", ["container", "id"])
def test_a_claim_whose_container_or_resource_id_ends_in_a_newline_is_refused(field):
    names = {"container": "default", "id": "1700000000-42"}
    names[field] += "\n"
    with pytest.raises(InvalidClaimError, match="invalid"):
        ResourceClaim(names["container"], 3, names["id"])
    valid = ResourceClaim("default", 3, "1700000000-42")
    assert ContentClaim(valid, 0, 1).resource.relative_path == "default/3/1700000000-42"


def test_a_provenance_partition_node_name_ending_in_a_newline_is_refused():
    assert check_node_name("n1") == "n1"
    with pytest.raises(ValueError, match="cannot name a provenance partition"):
        check_node_name("n1\n")


@pytest.mark.parametrize("text", ["15m\n", "1700000000000\n", "2024-05-01T12:00:00Z\n"])
def test_a_strict_time_bound_ending_in_a_newline_is_refused(text):
    parse_time(text.rstrip("\n"), now=1000.0, strict=True)  # the same without the newline is valid
    with pytest.raises(ValueError, match="cannot read time"):
        parse_time(text, now=1000.0, strict=True)


def test_a_staging_directory_name_ending_in_a_newline_is_not_a_batch():
    name = staging_name("0" * 20, 7)
    assert parse_staging_name(name) == ("0" * 20, 7)
    assert parse_staging_name(name + "\n") is None


def test_a_name_like_putfiles_partial_but_ending_in_a_newline_is_no_partial_write():
    from flow.processors.files import PutFile

    partial = ".01234567-89ab-cdef-0123-456789abcdef.0123456789abcdef.partial"
    assert PutFile._PARTIAL.fullmatch(partial) and not PutFile._PARTIAL.fullmatch(partial + "\n")
