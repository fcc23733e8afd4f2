"""Every integer parameter of the admin API takes a whole number's digits only: "2.0"
and "2e0" are 422 naming the parameter, as "two" is, and the document keeps its
bounds as `minimum`/`maximum`."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cluster.admin.app import create_app
from cluster.admin.models import Problem
from cluster.admin.whole_numbers import digits_only
from cluster.reference.rest_api import StandInNode

APP = create_app(StandInNode())
SPEC = APP.openapi()


def integer_parameters() -> list[tuple[str, str, str, dict]]:
    """(method, path, name, schema) of each integer query or path parameter."""
    found = []
    for path, operations in SPEC["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                schema = parameter["schema"]
                kinds = [schema, *schema.get("anyOf", [])]
                integer = next((kind for kind in kinds if kind.get("type") == "integer"), None)
                if integer is not None and parameter["in"] in ("query", "path"):
                    found.append((method, path, parameter["name"], integer))
    return found


PARAMETERS = integer_parameters()


def test_the_api_has_the_integer_parameters_this_test_walks():
    names = {(path, name) for _, path, name, _ in PARAMETERS}
    assert ("/api/v1/provenance/events", "as_of") in names
    assert ("/api/v1/provenance/events/{event_id}", "event_id") in names
    assert ("/api/v1/queues/{shard}/{queue}/flowfiles", "limit") in names


@pytest.mark.parametrize("method, path, name, schema", PARAMETERS, ids=lambda v: v if isinstance(v, str) else "")
def test_an_integer_parameter_keeps_its_bounds_in_the_document(method, path, name, schema):
    assert "minimum" in schema and "ge" not in schema and "le" not in schema, schema


@pytest.mark.parametrize("text", ["2.0", "2e0", "0x2", " 2", "2_0", "+2"])
@pytest.mark.parametrize("method, path, name, schema", PARAMETERS, ids=lambda v: v if isinstance(v, str) else "")
def test_an_integer_parameter_written_other_than_in_digits_is_a_422_naming_it(method, path, name, schema, text):
    url = path
    query = {}
    for parameter in next(iter(SPEC["paths"][path].values()))["parameters"]:
        if parameter["in"] == "path":
            url = url.replace("{" + parameter["name"] + "}", text if parameter["name"] == name else "1")
    if name not in {p["name"] for p in SPEC["paths"][path][method]["parameters"] if p["in"] == "path"}:
        query[name] = text
    with TestClient(APP) as client:
        answer = client.request(method.upper(), url, params=query)
    assert answer.status_code == 422, answer.text
    assert name in Problem.model_validate(answer.json()).error


@pytest.mark.parametrize("text", ["0", "17", "-3", "9" * 30])
def test_digits_with_an_optional_minus_pass_to_pydantic_as_they_are(text):
    assert digits_only(text) == text
    assert digits_only(5) == 5
