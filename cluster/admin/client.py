"""The CLI's side of the admin API: `custody node offload|connect` and `custody node
decommission|connect NAME --url` call the same endpoints an operator's curl does.

The token comes from $CUSTODY_ADMIN_TOKEN or the file named by
$CUSTODY_ADMIN_TOKEN_FILE (the token itself, as `custody admin token` printed it;
not the node's file of hashes).
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def admin_token() -> str | None:
    token = os.environ.get("CUSTODY_ADMIN_TOKEN")
    if token:
        return token.strip()
    path = os.environ.get("CUSTODY_ADMIN_TOKEN_FILE")
    if path:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    return None


def admin_url(config) -> str:
    """Where the node of a `NodeConfig` serves its admin API: its advertised address
    (`[node] admin`), else its bind address and port."""
    if config.admin:
        return config.admin.rstrip("/")
    scheme = "https" if config.admin_tls_cert else "http"
    host = "127.0.0.1" if config.admin_bind in ("0.0.0.0", "::") else config.admin_bind
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}:{config.admin_port}"


def call(
    url: str, method: str = "GET", *, timeout: float = 30.0, token: str | None = None, body: dict | None = None
) -> tuple[int, dict]:
    """(status, JSON answer) of one call; `token` defaults to the environment's."""
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    request = urllib.request.Request(url, method=method, data=data)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    token = token or admin_token()
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        try:
            body = json.loads(error.read() or b"{}")
        except ValueError:
            body = {"error": error.reason}
        return error.code, body


class DeployError(Exception):
    """A rolling deploy that was refused, failed, or ran past its time; `exit_code` is
    `custody flow deploy`'s (2 for a flow the cluster refused to run, 3 for a deploy
    still running at the deadline, 1 otherwise)."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


def deploy_flow(base: str, document: dict, *, timeout: float, token: str | None = None, say=None) -> dict:
    """Roll `document` across the cluster of the node at `base` (POST
    /api/v1/flow/deploy) and follow the roll once a second until it ends; each node's
    step is passed to `say` as it changes. Returns the roll's last answer (`Deploy`,
    state "done"); raises `DeployError` saying why not, and `OSError` when the admin
    API does not answer."""
    status, body = call(f"{base}/api/v1/flow/deploy", "POST", body={"flow": document}, token=token)
    if status != 202:
        raise DeployError(f"{status} {body.get('error', body)}", 2 if status == 422 else 1)
    if say is not None:
        say(f"custody: deploying flow version {body['version']} to {len(body['nodes'])} node(s)")
    shown: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while True:
        for node in body["nodes"]:
            line = f"{node['state']} {node['detail']}".strip()
            if shown.get(node["incarnation"]) != line:
                shown[node["incarnation"]] = line
                if say is not None:
                    say(f"  {node['incarnation']}: {line}")
        if body["state"] != "running":
            break
        if time.monotonic() > deadline:
            raise DeployError(f"still running after {timeout:.0f} s; follow it with: curl {base}/api/v1/flow/deploy", 3)
        time.sleep(1.0)  # following the deploy's progress, as an operator's poll would
        status, body = call(f"{base}/api/v1/flow/deploy", token=token)
        if status != 200:
            raise DeployError(f"{status} {body.get('error', body)}")
    if body["state"] == "failed":
        raise DeployError(f"failed: {body['error']}")
    return body


def node_action(base: str, action: str, *, wait_s: float, command: str) -> int:
    """POST offload or connect to the node at `base`; print its answer. Exit status 0,
    1 when refused or unreachable, 3 when an offload has not finished within `wait_s`."""
    if action == "offload":
        url, timeout = f"{base}/api/v1/node/offload?wait_s={wait_s:g}", wait_s + 30
    else:
        url, timeout = f"{base}/api/v1/node/connect", 30.0
    try:
        status, body = call(url, "POST", timeout=timeout)
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        print(
            f"{command} {action}: the admin API at {base} did not answer ({reason}); "
            "is the node running, and is this its address?",
            file=sys.stderr,
        )
        return 1
    if status != 200:
        print(f"{command} {action}: {status} {body.get('error', body)}", file=sys.stderr)
        return 1
    print(f"{body['node']}: {body['state']} ({body.get('detail', '')})")
    return 0 if action != "offload" or body["state"] == "OFFLOADED" else 3


def node_admission(base: str, action: str, name: str, *, command: str) -> int:
    """POST decommission or connect of node `name` to the node at `base`; print its
    answer. Exit status 0, or 1 when refused or unreachable."""
    url = f"{base}/api/v1/cluster/nodes/{urllib.parse.quote(name, safe='')}/{action}"
    try:
        status, body = call(url, "POST", timeout=30.0)
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        print(
            f"{command}: the admin API at {base} did not answer ({reason}); is a node of the cluster running there?",
            file=sys.stderr,
        )
        return 1
    if status != 200:
        print(f"{command}: {status} {body.get('error', body)}", file=sys.stderr)
        return 1
    print(f"{body['node']}: {body['state']} ({body.get('detail', '')})")
    return 0
