"""The admin API against clients without a token and hostile ones, as an attacker
reaches it: a real uvicorn server on 127.0.0.1 and raw sockets, so that a test can
send half a request, a Content-Length it never honours, or a body a byte at a time.

  bodies       a body is refused from its headers (401, 403, 413) before any of it is
               sent; a chunked one is refused at the byte that crosses its cap
  connections  idle, trickling and stalled clients are cut at their deadlines; past
               the cap a connection is answered 503 at once; and a node whose process
               may hold 256 descriptors keeps delivering while 300 connections are
               opened at its admin API
  browsers     a foreign Host is refused (DNS rebinding); a cross-site POST from a web
               page changes nothing
  numbers      past 64 bits they answer 422 (416 for a Range), never 500

One node for the module: GenerateFlowFile makes 5 FlowFiles into a queue whose
destination is stopped, so the node's state (processors, the queue, provenance) holds
still and any change a request makes shows.
"""

from __future__ import annotations

import json
import logging
import os
import re
import select
import selectors
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from cluster.admin.app import create_app
from cluster.admin.connections import ConnectionLimits
from cluster.admin.serve import serve
from cluster.admin.server import AdminServer
from cluster.admin.settings import AdminSettings
from cluster.admin.tokens import add_token
from cluster.node.standalone import NodeSettings, StandaloneNode
from cluster.services.network import free_ports
from cluster.services.process import wait_until
from flow.loading import parse_flow

ROOT = Path(__file__).resolve().parents[2]
HELLO = str(ROOT / "examples" / "hello.yaml")
QUEUE = "generate/success/hold"
FLOWFILES = 5
FLOW = {
    "name": "hostile-clients",
    "processors": [
        {
            "id": "generate",
            "type": "GenerateFlowFile",
            "properties": {"batch_size": FLOWFILES, "max_count": FLOWFILES, "file_size": 1000},
        },
        {"id": "hold", "type": "UpdateAttribute", "properties": {"held": "yes"}, "auto_terminate": ["success"]},
    ],
    "connections": [{"source": "generate", "relationships": ["success"], "destination": "hold"}],
}
DEPLOY_CAP = 2 << 20  # routes_flow.DEPLOY_MAX_BODY_BYTES, as a client sees it in the 413
ANSWER_S = 15.0  # the longest any answer may take on a loaded machine


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    started = StandaloneNode(
        parse_flow(FLOW), str(tmp_path_factory.mktemp("hostile") / "node"), NodeSettings(threads=2)
    )
    started.start(paused=True)
    try:
        started.control().stop_processor("local", "hold", 5.0)
        started.resume()
        queue = started.graph.queues[QUEUE]
        wait_until(lambda: queue.summary().count == FLOWFILES, 30, f"{FLOWFILES} FlowFiles queued")
        started.provenance.sync()  # an event file indexed: queries reach the index's number filters
        yield started
    finally:
        started.stop()


def node_state(node) -> dict:
    control = node.control()
    return {
        "node": control.state(),
        "processors": {p: f["state"] for p, f in control.processors()["local"].items()},
        "queues": {q: f["count"] for q, f in control.queues()["local"].items()},
        "events": node.provenance.next_event_id,
    }


@dataclass
class Api:
    server: object
    tokens: dict  # role -> token

    @property
    def port(self) -> int:
        return self.server.port


@pytest.fixture(scope="module")
def open_api(node):
    """A loopback admin API without tokens: every caller is an admin, so the browser rules are all."""
    server = serve(AdminSettings(port=0), node.control())
    yield Api(server, {})
    server.stop()


@pytest.fixture(scope="module")
def guarded_api(node, tmp_path_factory):
    tokens = str(tmp_path_factory.mktemp("tokens") / "tokens")
    issued = {"admin": add_token(tokens, "admin", "ops"), "read": add_token(tokens, "read", "grafana")}
    server = serve(AdminSettings(port=0, token_file=tokens), node.control())
    yield Api(server, issued)
    server.stop()


# -- raw HTTP ------------------------------------------------------------------------------
def connect(port: int, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_S)
    if data:
        sock.sendall(data)
    return sock


def head(method: str, path: str, port: int, headers: dict | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def open_at_once(port: int, count: int, data: bytes, timeout: float = 30.0) -> list[socket.socket]:
    """`count` connections opened together, as an attacker opens them (a connection the
    server's full backlog delays does not hold up the others), each sent `data`; those
    the server refused are closed."""
    selector = selectors.DefaultSelector()
    for _ in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        selector.register(sock, selectors.EVENT_WRITE)
    opened, deadline = [], time.monotonic() + timeout
    while selector.get_map() and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=0.5):
            sock = key.fileobj
            selector.unregister(sock)
            try:
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    raise OSError("refused")
                sock.sendall(data)
                opened.append(sock)
            except OSError:
                sock.close()  # refused: the server is shedding connections, which is the point
    for key in list(selector.get_map().values()):
        key.fileobj.close()
    selector.close()
    return opened


def read_answer(sock: socket.socket, timeout: float = ANSWER_S) -> tuple[int, dict, bytes]:
    """The status, headers and body of the one answer the server sends; fails if none
    comes within `timeout`."""
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError(f"the server closed the connection without an answer (got {data!r})")
            data += chunk
        header_block, _, body = data.partition(b"\r\n\r\n")
        lines = header_block.decode("latin-1").split("\r\n")
        fields = (line.partition(":") for line in lines[1:])
        headers = {name.strip().lower(): value.strip() for name, _, value in fields}
        while len(body) < int(headers.get("content-length", 0)):
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    except TimeoutError:
        raise AssertionError(f"no answer within {timeout:g} s (got {data!r})") from None
    return int(lines[0].split()[1]), headers, body


def closed_by_server(sock: socket.socket, timeout: float = ANSWER_S) -> bool:
    """Whether the server closes the connection within `timeout` (reading what it sends first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
        if readable:
            try:
                if not sock.recv(65536):
                    return True
            except (ConnectionResetError, BrokenPipeError):
                return True
    return False


def auth(token: str | None) -> dict:
    return {"Authorization": f"Bearer {token}"} if token else {}


# -- bodies --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "who, framing, status",
    [
        (None, {"Content-Length": str(195 << 20)}, 401),
        (None, {"Transfer-Encoding": "chunked"}, 401),
        ("read", {"Content-Length": str(195 << 20)}, 403),
        ("admin", {"Content-Length": str(195 << 20)}, 413),
    ],
)
def test_a_body_is_refused_from_its_headers_before_any_of_it_is_sent(guarded_api, who, framing, status):
    sock = connect(
        guarded_api.port,
        head(
            "POST",
            "/api/v1/flow/deploy",
            guarded_api.port,
            {"Content-Type": "application/json", **framing, **auth(guarded_api.tokens.get(who))},
        ),
    )
    with sock:
        code, headers, body = read_answer(sock)
        assert code == status, body
        assert headers.get("connection") == "close", headers  # the body is never read: no next request
        if status == 413:
            assert f"larger than {DEPLOY_CAP} bytes" in json.loads(body)["error"], body
        assert closed_by_server(sock)


def test_a_chunked_body_is_refused_at_its_cap_as_it_arrives(guarded_api):
    sock = connect(
        guarded_api.port,
        head(
            "POST",
            "/api/v1/flow/deploy",
            guarded_api.port,
            {"Content-Type": "application/json", "Transfer-Encoding": "chunked", **auth(guarded_api.tokens["admin"])},
        ),
    )
    chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"
    sent, limit = 0, 64 << 20  # a server that reads the body whole would take all of it, and answer nothing
    with sock:
        try:
            while sent < limit and not select.select([sock], [], [], 0)[0]:
                sock.sendall(chunk)
                sent += 0x10000
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused and closed while we were still sending
        code, _headers, body = read_answer(sock)
        assert code == 413 and f"larger than {DEPLOY_CAP} bytes" in json.loads(body)["error"], body
        assert sent < limit, "the server read 64 MiB of a body capped at 2 MiB"
        assert closed_by_server(sock)


# -- connections ---------------------------------------------------------------------------
def test_idle_trickling_and_stalled_clients_are_cut_at_their_deadlines(node, caplog):
    caplog.set_level(logging.WARNING)
    limits = ConnectionLimits(max_connections=64, header_timeout_s=1.0, body_timeout_s=1.0)
    server = AdminServer(AdminSettings(port=0), create_app(node.control()), limits=limits).start()
    port = server.port
    try:
        idle = [connect(port) for _ in range(10)]
        half = [connect(port, b"GET /api/v1/node HTTP/1.1\r\nHost: 127.0.0.1\r\n") for _ in range(20)]
        stalled_body = connect(
            port,
            head("POST", "/api/v1/flow/deploy", port, {"Content-Type": "application/json", "Content-Length": "100"})
            + b'{"flow": ',
        )
        trickler = connect(port)
        request = b"GET /api/v1/node HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 4096
        deadline, sent = time.monotonic() + 20, 0
        # A header byte every 0.2 s (the attack's pace), until the server cuts the connection.
        while not select.select([trickler], [], [], 0.2)[0]:
            assert time.monotonic() < deadline, "a client trickling its headers is still connected after 20 s"
            trickler.send(request[sent : sent + 1])
            sent += 1
        for sock in [*idle, *half, stalled_body, trickler]:
            code, _headers, body = read_answer(sock)
            assert code == 408 and "did not arrive within 1 s" in json.loads(body)["error"], body
            assert closed_by_server(sock)
            sock.close()
        assert httpx.get(f"{server.url}/health", timeout=ANSWER_S).status_code == 200  # others are served
    finally:
        server.stop()
    cuts = [r.getMessage() for r in caplog.records if "cut a connection" in r.getMessage()]
    assert len(cuts) == 2, cuts  # one line per kind (headers, body) per interval, for 32 cuts
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info] == []


def test_connections_past_the_cap_are_answered_503_at_once_and_logged_once(node, caplog):
    caplog.set_level(logging.WARNING, logger="cluster.admin.server")
    limits = ConnectionLimits(max_connections=8, header_timeout_s=60.0)
    server = AdminServer(AdminSettings(port=0), create_app(node.control()), limits=limits).start()
    port = server.port
    try:
        held = [connect(port) for _ in range(8)]
        for _ in range(30):
            with connect(port) as extra:
                code, headers, body = read_answer(extra)
                assert code == 503 and "holds its most connections at once (8)" in json.loads(body)["error"]
                assert headers.get("retry-after") == "1"
                assert closed_by_server(extra)
        refusals = [r for r in caplog.records if "refused a connection" in r.getMessage()]
        assert len(refusals) == 1 and not refusals[0].exc_info, [r.getMessage() for r in refusals]
        for sock in held:
            sock.close()
        wait_until(
            lambda: httpx.get(f"{server.url}/health", timeout=2).status_code == 200,
            30,
            "a connection to be served once the held ones are closed",
        )
    finally:
        server.stop()


# `custody` with its descriptors limited to 256, set by the child itself before the CLI
# starts: a `preexec_fn` runs Python between fork and exec, which can deadlock when the
# test process has other threads (a lock held by one of them at the fork is never freed).
AT_MOST_256_DESCRIPTORS = (
    "import resource, runpy; resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)); "
    "runpy.run_module('cluster.cli', run_name='__main__', alter_sys=True)"
)


def test_the_flow_keeps_delivering_while_300_connections_are_opened_under_256_descriptors(tmp_path):
    data, log_file = tmp_path / "node", tmp_path / "node.log"
    [port] = free_ports(1)  # below the ephemeral range: no client's connection takes it first

    with open(log_file, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                AT_MOST_256_DESCRIPTORS,
                "run",
                "--flow",
                HELLO,
                "--data-dir",
                str(data),
                "--admin",
                f"127.0.0.1:{port}",
                "--status-interval",
                "0",
            ],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    out = data / "out"
    attackers: list[socket.socket] = []
    try:
        wait_until(lambda: b"admin API on" in log_file.read_bytes(), 60, "the node's admin API")
        limits = Path(f"/proc/{process.pid}/limits").read_text()
        assert re.search(r"^Max open files\s+256\s+256\s", limits, re.MULTILINE), limits
        wait_until(lambda: out.is_dir() and len(os.listdir(out)) >= 5, 60, "the flow's first deliveries")
        attackers = open_at_once(port, 300, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        before = len(os.listdir(out))
        wait_until(
            lambda: len(os.listdir(out)) >= before + 10,
            30,
            f"10 more files delivered while {len(attackers)} connections were opened at the admin API",
        )
        descriptors = len(os.listdir(f"/proc/{process.pid}/fd"))
        assert descriptors < 160, f"the node holds {descriptors} of its 256 descriptors"
    finally:
        for sock in attackers:
            sock.close()
        process.send_signal(signal.SIGTERM)
        process.wait(60)
    text = log_file.read_text(errors="replace")
    assert "Traceback" not in text and "Too many open files" not in text, text[-3000:]
    assert text.count("refused a connection") <= 1, text[-3000:]  # one line per kind per interval


# -- browsers ------------------------------------------------------------------------------
def call(api: Api, method: str, path: str, headers: dict | None = None, body: bytes | None = None):
    with connect(api.port) as sock:
        request = head(method, path, api.port, {"Content-Length": str(len(body or b"")), **(headers or {})})
        if headers and "Host" in headers:  # replace the default Host line
            request = request.replace(f"Host: 127.0.0.1:{api.port}\r\n".encode(), b"", 1)
        sock.sendall(request + (body or b""))
        code, answer_headers, answer = read_answer(sock)
        # By its type, not its first byte: a FlowFile's random content may start with "{".
        is_json = answer_headers.get("content-type", "").startswith("application/json")
        return code, json.loads(answer) if is_json else answer


@pytest.mark.parametrize(
    "host",
    [
        "attacker.example",
        "attacker.example:{port}",
        "127.0.0.1.attacker.example:{port}",
        "localhost.attacker.example:{port}",
    ],
)
def test_a_request_to_a_foreign_name_is_refused(open_api, node, host):
    host = host.format(port=open_api.port)
    code, answer = call(open_api, "GET", "/api/v1/node", {"Host": host})
    assert code == 421 and host in answer["error"] and "allowed_hosts" in answer["error"], answer
    before = node_state(node)
    code, _ = call(open_api, "POST", f"/api/v1/queues/local/{QUEUE}/drop", {"Host": host})
    assert code == 421 and node_state(node) == before


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "[::1]:{port}"])
def test_the_node_s_own_names_are_served(open_api, host):
    code, answer = call(open_api, "GET", "/api/v1/node", {"Host": host.format(port=open_api.port)})
    assert code == 200 and answer["state"] == "RUNNING", answer


def test_a_name_the_operator_allows_is_served(node):
    server = serve(AdminSettings(port=0, allowed_hosts=("custody.example",)), node.control())
    try:
        api = Api(server, {})
        assert call(api, "GET", "/health", {"Host": f"custody.example:{server.port}"})[0] == 200
        assert call(api, "GET", "/health", {"Host": f"custody.example.attacker.example:{server.port}"})[0] == 421
    finally:
        server.stop()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/processors/local/generate/stop",
        f"/api/v1/queues/local/{QUEUE}/drop",
        "/api/v1/processors/local/hold/start",
        "/api/v1/node/offload",
    ],
)
def test_a_cross_site_post_from_a_web_page_changes_nothing(open_api, node, path):
    before = node_state(node)
    # What a page's fetch(..., {method: "POST", mode: "no-cors", body: "x"}) sends: no preflight.
    code, answer = call(
        open_api, "POST", path, {"Origin": "http://attacker.example", "Content-Type": "text/plain"}, b"x"
    )
    assert code == 403 and "http://attacker.example" in answer["error"], answer
    assert node_state(node) == before


def test_the_node_s_own_page_may_post(open_api):
    code, answer = call(open_api, "POST", "/api/v1/node/offload", {"Origin": f"http://127.0.0.1:{open_api.port}"})
    assert code == 409 and "standalone" in answer["error"], answer  # refused by the node, not by the Origin check


# -- numbers -------------------------------------------------------------------------------
HUGE = "9" * 5000


def test_numbers_past_64_bits_answer_422_or_416_and_never_500(open_api, node, caplog):
    caplog.set_level(logging.ERROR)
    uuid = next(iter(node.control().list_queue("local", QUEUE, 0, 1)["flowfiles"]))["uuid"]
    content = f"/api/v1/flowfiles/{uuid}/content"
    for method, path, headers, status in [
        ("GET", f"/api/v1/provenance/events?as_of={2**70}", {}, 422),
        ("GET", f"/api/v1/provenance/events.ndjson?as_of={2**70}", {}, 422),
        ("GET", f"/api/v1/provenance/events.ndjson?limit={2**70}", {}, 422),
        ("GET", f"/api/v1/provenance/events?start={2**70}", {}, 422),
        ("GET", "/api/v1/provenance/events?start=99999999999999999999d", {}, 422),
        ("GET", f"/api/v1/provenance/events.ndjson?end={'9' * 400}d", {}, 422),
        ("GET", f"/api/v1/provenance/events/{2**70}", {}, 422),
        ("POST", f"/api/v1/provenance/events/{2**70}/replay", {}, 422),
        ("GET", f"/api/v1/queues/local/{QUEUE}/flowfiles?offset={2**70}", {}, 422),
        ("GET", content, {"Range": f"bytes={2**70}-"}, 416),
        ("GET", content, {"Range": f"bytes={HUGE}-"}, 416),
        ("GET", content, {"Range": f"bytes=0-{HUGE}"}, 206),
        ("GET", content, {"Range": f"bytes=-{HUGE}"}, 206),
    ]:
        code, answer = call(open_api, method, path, headers)
        assert code == status, (path[:80], headers and headers["Range"][:40], answer)
        if status != 206:
            assert answer["status"] == status and "internal error" not in answer["error"], answer
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
