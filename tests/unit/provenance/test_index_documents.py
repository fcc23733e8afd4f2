import json

from repositories.provenance import EventBatch
from repositories.provenance.index_documents import json_documents

from .conftest import event


def test_documents_are_valid_json_even_with_awkward_values():
    events = [
        event("ROUTE", 'u"1', relationship="a\\b", attributes_after={"filename": "new\nline\t\x01"},
              parent_uuids=("p\"1",), component_id="c\u00e9"),
        event("FORK", "u2", child_uuids=("k1", "k2"), attributes_after={}, attributes_before={"filename": "old"}),
        event("DROP", "u3", attributes_after={}),
    ]
    docs = [json.loads(d) for d in json_documents(EventBatch.from_events(events, now_ms=9).with_ids(5))]
    assert docs[0] == {"id": 5, "time": 9, "type": "ROUTE", "component": "c\u00e9", "uuid": ['u"1', 'p"1'],
                       "filename": "new\nline\t\x01", "relationship": "a\\b"}
    assert docs[1]["uuid"] == ["u2", "k1", "k2"] and docs[1]["filename"] == "old"
    assert "filename" not in docs[2] and "relationship" not in docs[2]
