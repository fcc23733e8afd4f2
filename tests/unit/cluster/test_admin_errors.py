"""Error answers as the spec documents them: a 405 names the allowed methods, and a
bad parameter's 422 is a `Problem` in the spec as on the wire."""

from fastapi.testclient import TestClient

from cluster.admin.app import create_app
from cluster.admin.models import Problem


class NamedControl:
    name = "n1"


def client() -> TestClient:
    return TestClient(create_app(NamedControl()))


def test_a_method_the_path_does_not_take_is_405_with_allow():
    response = client().delete("/health")
    assert response.status_code == 405 and response.headers["allow"] == "GET"
    assert Problem.model_validate(response.json()).status == 405


def test_a_bad_parameter_is_a_problem_in_the_spec_and_in_the_answer():
    spec = client().get("/openapi.json").json()
    invalid = spec["paths"]["/api/v1/node/offload"]["post"]["responses"]["422"]
    assert invalid["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Problem"}
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    response = client().post("/api/v1/node/offload?wait_s=-1")
    assert response.status_code == 422 and "wait_s" in Problem.model_validate(response.json()).error
