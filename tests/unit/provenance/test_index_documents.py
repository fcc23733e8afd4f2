import json

from repositories.provenance import EventBatch
from repositories.provenance.index_documents import json_documents

from .conftest import event


def test_documents_are_valid_json_even_with_awkward_values():
    events = [
        event(
            "ROUTE",
            'u"1',
            relationship="a\\b",
            attributes_after={"filename": "new\nline\t\x01"},
            parent_uuids=('p"1',),
            component_id="c\u00e9",
        ),
        event("FORK", "u2", child_uuids=("k1", "k2"), attributes_after={}, attributes_before={"filename": "old"}),
        event("DROP", "u3", attributes_after={}),
    ]
    docs = [json.loads(d) for d in json_documents(EventBatch.from_events(events, now_ms=9).with_ids(5))]
    assert docs[0] == {
        "id": 5,
        "time": 9,
        "type": "ROUTE",
        "component": "c\u00e9",
        "uuid": ['u"1', 'p"1'],
        "filename": "new\nline\t\x01",
        "relationship": "a\\b",
    }
    assert docs[1]["uuid"] == ["u2", "k1", "k2"] and docs[1]["filename"] == "old"
    assert "filename" not in docs[2] and "relationship" not in docs[2]


def test_uuid_keys_in_arrow_match_the_python_key():
    import pyarrow as pa

    from repositories.provenance.index_documents import uuid_key, uuid_keys

    values = [
        "0f8fad5b-d9cb-469f-a165-70867728950e",
        "0F8FAD5B-D9CB-469F-A165-70867728950E",
        "uuid-a",
        "",
        "0f8fad5b-d9cb-469f-a165-70867728950e\n",
        "0f8fad5b-d9cb-469f-a165-70867728950",
        "x" * 36,
        "0f8fad5bxd9cb-469f-a165-70867728950e",
        "\u00e9" * 36,
    ]
    assert uuid_keys(pa.array(values, pa.string())).to_pylist() == [uuid_key(v) for v in values]
    assert uuid_key(values[0]) == "0f8fad5b70867728950e"
    assert uuid_key("uuid-a") == "uuid-a"


def test_filename_lookup_matches_arrow_map_lookup_on_nulls_duplicates_and_slices():
    import pyarrow as pa
    import pyarrow.compute as pc

    from repositories.provenance.index_documents import _lookup_first

    maps = pa.array(
        [
            [("a", "1"), ("filename", "f1")],
            None,
            [],
            [("filename", "x"), ("filename", "y")],
            [("b", "2")],
            [("filename", None)],
        ],
        pa.map_(pa.string(), pa.string()),
    )
    for column in (maps, maps.slice(1), maps.slice(2, 3), maps.slice(3), maps.slice(0, 0)):
        expected = pc.map_lookup(column, query_key=pa.scalar("filename"), occurrence="first")
        assert _lookup_first(column, "filename").to_pylist() == expected.to_pylist()


def test_uuid_keys_of_a_column_of_canonical_uuids_only_are_cut_from_its_bytes_and_match_the_python_key():
    import random
    import uuid as uuidlib

    import pyarrow as pa

    from repositories.provenance.index_documents import _canonical_uuid_keys, uuid_key, uuid_keys

    rng = random.Random(3)
    values = [str(uuidlib.UUID(int=rng.getrandbits(128))) for _ in range(50)] + ["0F8FAD5B-D9CB-469F-A165-70867728950E"]
    column = pa.array(["not-a-uuid", *values], pa.string()).slice(1)  # read at its offset
    keys = _canonical_uuid_keys(column)
    assert keys is not None and keys.to_pylist() == [uuid_key(v) for v in values]
    assert uuid_keys(column).to_pylist() == [uuid_key(v) for v in values]
    # One value that is not canonical (a byte out of place, a non-hex digit, a dash
    # moved): the column takes the regular expression, and each value keeps its key.
    for odd in (
        "0f8fad5b-d9cb-469f-a165-70867728950g",
        "0f8fad5b-d9cb-469f-a165-7086772895\x10e",
        "0f8fad5b-d9cb-469f-a165-7086772895`e",
        "0f8fad5bd-9cb-469f-a165-70867728950e",
        "0f8fad5b-d9cb-469f-a165-7086772895\u00e9e",  # 35 characters, 36 bytes
    ):
        mixed = pa.array([*values, odd], pa.string())
        assert _canonical_uuid_keys(mixed) is None, odd
        assert uuid_keys(mixed).to_pylist() == [uuid_key(v) for v in [*values, odd]]
