"""cluster/docker/probe.sh, the compose healthchecks' probe, against a socket on loopback."""

import socket
import subprocess
import threading
from pathlib import Path

import pytest

PROBE = Path(__file__).resolve().parents[3] / "cluster" / "docker" / "probe.sh"


@pytest.fixture
def server():
    """A one-shot-per-connection server on 127.0.0.1: answers each request with
    `server.reply(request)` and closes, as ZooKeeper's four-letter words and HTTP/1.0 do."""
    listener = socket.create_server(("127.0.0.1", 0))
    state = {"reply": lambda request: b"", "requests": []}

    def serve():
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                request = connection.recv(4096)
                while request.startswith(b"GET") and not request.endswith(b"\r\n\r\n"):
                    request += connection.recv(4096)
                state["requests"].append(request)
                connection.sendall(state["reply"](request))

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1], state
    listener.close()


def probe(*args) -> int:
    return subprocess.run(["bash", str(PROBE), *map(str, args)], capture_output=True, timeout=10).returncode


def test_a_four_letter_word_is_sent_as_it_is_and_the_answer_matched(server):
    port, state = server
    state["reply"] = lambda request: b"Zookeeper version: 3.8.0\nMode: follower\n" if request == b"srvr" else b""
    assert probe(port, "srvr", "Mode: (leader|follower)") == 0
    state["reply"] = lambda request: b"This ZooKeeper instance is not currently serving requests\n"
    assert probe(port, "srvr", "Mode: (leader|follower)") == 1
    assert state["requests"] == [b"srvr", b"srvr"]


def test_a_get_is_an_http_1_0_request_and_only_a_200_passes(server):
    port, state = server
    state["reply"] = lambda request: b'HTTP/1.1 503 Service Unavailable\r\n\r\n{"ready":false}'
    assert probe(port, "GET /ready", "^HTTP/[0-9.]+ 200 ") == 1
    state["reply"] = lambda request: b'HTTP/1.1 200 OK\r\n\r\n{"ready":true}'
    assert probe(port, "GET /ready", "^HTTP/[0-9.]+ 200 ") == 0
    assert state["requests"][-1] == b"GET /ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"


def test_a_port_alone_passes_when_it_accepts_a_connection(server):
    port, _ = server
    assert probe(port) == 0
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed_port = unused.getsockname()[1]
    assert probe(closed_port) == 1
    assert probe(closed_port, "srvr", "Mode") == 1
