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
