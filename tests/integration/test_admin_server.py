"""The admin API's server as an operator starts it: `custody run --admin`, a refusal
to listen beyond loopback without tokens, HTTPS with the node's own certificate, and
no token in any log line."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from cluster.admin.serve import serve
from cluster.admin.settings import AdminSettings
from cluster.admin.tokens import add_token
from cluster.node.standalone import NodeSettings, StandaloneNode
from tests.certificates import self_signed

ROOT = Path(__file__).resolve().parents[2]
HELLO = str(ROOT / "examples" / "hello.yaml")


@pytest.fixture
def node(tmp_path):
    started = StandaloneNode.from_file(HELLO, str(tmp_path / "node"), NodeSettings(name="solo"))
    started.start()
    yield started
    started.stop()


def test_custody_run_refuses_a_non_loopback_admin_address_without_tokens(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.cli",
            "run",
            "--flow",
            HELLO,
            "--data-dir",
            str(tmp_path),
            "--admin",
            "0.0.0.0:0",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "refuses to listen on 0.0.0.0 without tokens" in done.stderr and "custody admin token" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_api_serves_https_with_the_nodes_certificate(node, tmp_path):
    cert, key = self_signed(tmp_path)
    server = serve(AdminSettings(port=0, tls_cert=cert, tls_key=key), node.control())
    try:
        assert server.url.startswith("https://127.0.0.1:")
        with httpx.Client(verify=cert, timeout=10) as client:
            assert client.get(f"{server.url}/health").json() == {"status": "ok", "node": "solo"}
        with pytest.raises(httpx.HTTPError):  # plain HTTP to a TLS port gets no answer
            httpx.get(server.url.replace("https://", "http://") + "/health", timeout=5).json()
    finally:
        server.stop()


def test_no_token_appears_in_the_log_whatever_is_sent(node, tmp_path, caplog):
    tokens = str(tmp_path / "tokens")
    reader, operator = add_token(tokens, "read", "dashboard"), add_token(tokens, "admin", "ops")
    wrong = reader[:-4] + "abcd"
    server = serve(AdminSettings(port=0, token_file=tokens), node.control())
    caplog.set_level(logging.DEBUG)
    try:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            statuses = [
                client.get("/api/v1/node", headers={"Authorization": f"Bearer {token}"}).status_code
                for token in (reader, wrong, operator)
            ]
            statuses.append(
                client.post("/api/v1/node/offload", headers={"Authorization": f"Bearer {reader}"}).status_code
            )
            statuses.append(client.get("/api/v1/node", headers={"Authorization": f"Basic {operator}"}).status_code)
    finally:
        server.stop()
    assert statuses == [200, 401, 200, 403, 401]
    text = caplog.text + "".join(
        open(os.path.join(root, name), errors="replace").read()
        for root, _, names in os.walk(tmp_path)
        for name in names
        if name.endswith(".log")
    )
    assert "dashboard" in caplog.text  # the refusal names the token by its name...
    for secret in (reader, operator, wrong):
        assert secret not in text  # ...never by itself


def test_custody_node_offload_says_what_the_node_answered(node, tmp_path):
    server = serve(AdminSettings(port=0), node.control())
    try:

        def offload(url: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [sys.executable, "-m", "cluster.cli", "node", "offload", "--url", url, "--wait", "1"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=60,
            )

        refused = offload(server.url)  # a standalone node has nobody to hand its FlowFiles to
        assert refused.returncode == 1 and "409" in refused.stderr and "no cluster" in refused.stderr, refused.stderr
        server.stop()
        gone = offload(server.url)
        assert gone.returncode == 1 and "did not answer" in gone.stderr and "Traceback" not in gone.stderr, gone.stderr
    finally:
        server.stop()
