"""The download ticket routes on the app itself, with tokens disabled: a ticket is still
made and still checked (a wrong one is a 401, never served), and the download is named
for the FlowFile's filename attribute, made safe."""

from __future__ import annotations

import io

import pytest
from fastapi.testclient import TestClient

from cluster.admin.app import create_app
from cluster.node.control_errors import NotFound
from cluster.node.flow_access import FlowFileContent

UUID = "0f8e2a34-1c5d-4b6e-9a7f-3d2c1b0a9e8f"
OTHER = "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d"
BODY = b"the content"


class OneFlowFile:
    """A control holding the one FlowFile UUID, named so that a header could be broken."""

    name = "n1"

    def flowfile(self, uuid, shard=None):
        if uuid != UUID:
            raise NotFound(f"no FlowFile {uuid}")
        return {}

    def open_content(self, uuid, shard=None):
        self.flowfile(uuid, shard)
        return FlowFileContent(UUID, "local", "q", len(BODY), "text/plain", 'a"b\r\n.txt', _Store(), object())


class _Store:
    def open_read(self, _claim, offset, length):
        return io.BytesIO(BODY[offset : offset + length])


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(OneFlowFile()))


def test_without_tokens_a_ticket_is_still_made_and_checked(client):
    made = client.post(f"/api/v1/flowfiles/{UUID}/content/ticket").json()
    assert made["url"] == f"api/v1/flowfiles/{UUID}/content?ticket={made['ticket']}&download=true"
    served = client.get("/" + made["url"])
    assert served.status_code == 200 and served.content == BODY
    assert served.headers["content-disposition"] == 'attachment; filename="a_b__.txt"'
    assert served.headers["content-security-policy"] == "sandbox"  # never a page of the node's origin
    ranged = client.get("/" + made["url"], headers={"Range": "bytes=4-"})
    assert ranged.status_code == 206 and ranged.content == BODY[4:]
    altered = made["ticket"][:-1] + ("B" if made["ticket"].endswith("A") else "A")
    wrong = client.get(f"/api/v1/flowfiles/{UUID}/content?ticket={altered}")
    assert wrong.status_code == 401 and "download ticket is not valid" in wrong.json()["error"]
    for not_one in ("x" * 129, "", "1.2"):
        assert client.get(f"/api/v1/flowfiles/{UUID}/content?ticket={not_one}&download=maybe").status_code == 401
    assert client.post(f"/api/v1/flowfiles/{OTHER}/content/ticket").status_code == 404


def test_the_spec_declares_the_ticket_parameter_and_the_ticket_answer(client):
    spec = client.get("/openapi.json").json()
    content = spec["paths"]["/api/v1/flowfiles/{uuid}/content"]["get"]
    assert {p["name"] for p in content["parameters"]} >= {"uuid", "shard", "range", "ticket", "download"}
    ticket = spec["paths"]["/api/v1/flowfiles/{uuid}/content/ticket"]["post"]
    assert ticket["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/DownloadTicket")
    assert set(spec["components"]["schemas"]["DownloadTicket"]["required"]) == {"ticket", "expires_at", "url"}
