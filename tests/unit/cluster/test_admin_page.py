"""The status page as the app serves it: open without a token, the node's name
escaped, and a Content-Security-Policy that lets exactly its own script and style run."""

import base64
import hashlib

from fastapi.testclient import TestClient

from cluster.admin import page
from cluster.admin.app import create_app
from cluster.admin.tokens import TokenEntry, Tokens, token_digest


class NamedControl:
    def __init__(self, name):
        self.name = name


def client(name="n1", tokens=None) -> TestClient:
    return TestClient(create_app(NamedControl(name), tokens))


def test_the_page_needs_no_token_and_says_whether_its_data_does():
    tokens = Tokens([TokenEntry("read", "grafana", token_digest("cst_secret"))])
    response = client(tokens=tokens).get("/")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert 'data-tokens="required"' in response.text
    assert 'data-tokens="none"' in client().get("/").text


def test_a_node_name_is_text_never_markup():
    text = client(name='<img src=x onerror="alert(1)">&').get("/").text
    assert "<img" not in text
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;" in text


def test_the_policy_allows_the_inline_script_and_style_by_their_hashes_only():
    policy = client().get("/").headers["content-security-policy"]
    for inline in (page.SCRIPT, page.STYLE):
        digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy
    assert "unsafe-inline" not in policy and "connect-src 'self'" in policy


def test_the_page_is_not_part_of_the_api_spec():
    assert "/" not in client().get("/openapi.json").json()["paths"]
