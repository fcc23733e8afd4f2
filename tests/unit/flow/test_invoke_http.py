"""InvokeHTTP over loopback: into Custody's ListenHTTP (FlowFile Stream v3 round trips,
a resend after a lost 200 taken once), and against a stub server for NiFi's routing by
status, the headers it sends, its timeouts and TLS."""

from __future__ import annotations

import http.server
import socket
import threading
import time

import pytest

from cluster.node.standalone import StandaloneNode
from flow.errors import FlowDefinitionError
from flow.flowfile_v3 import MIME_TYPE, encode
from flow.loading import parse_flow
from flow.processors.http_client import NO_RETRY, ORIGINAL, RETRY, route_of, url_problem
from tests.certificates import self_signed
from tests.unit.flow.listen_http_support import Listener, wait_until
from tests.unit.flow.test_processors import run
from tests.unit.flow.test_unreadable_content import NOW, PENALTY_MS, Bench

RELATIONSHIPS = ("original", "retry", "no_retry", "failure")


class Stub:
    """An HTTP server on 127.0.0.1 that answers every request `status` with `body`, and
    keeps each request's (method, path, headers in lower case, body)."""

    def __init__(self, status: int = 200, body: bytes = b"", content_type: str = "text/plain"):
        self.requests: list[tuple[str, str, dict, bytes]] = []
        self.status, self.body = status, body
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                stub.requests.append((self.command, self.path, headers, data))
                self.send_response(stub.status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(stub.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(stub.body)

            do_PUT = do_PATCH = do_GET = do_DELETE = do_HEAD = do_OPTIONS = do_POST  # noqa: N815

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/in?x=1"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def __enter__(self) -> Stub:
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def invoke(properties: dict, inputs, relationships=RELATIONSHIPS):
    return run("InvokeHTTP", properties, inputs, relationships)


# -- FlowFile Stream v3 into ListenHTTP ---------------------------------------------------


def test_send_as_flowfile_v3_keeps_every_attribute_and_byte_through_listen_http():
    inputs = [
        ({"filename": "bin", "k": "v"}, bytes(range(256)) * 40),
        ({"filename": "été 日本.txt", "ünï": "ço∂e 🚀", "empty.value": ""}, "текст".encode()),
        ({"filename": "nothing"}, b""),
    ]
    with Listener() as listener:
        url = f"http://127.0.0.1:{listener.port}/contentListener"
        out = invoke({"url": url, "send_as_flowfile_v3": True}, inputs)
        wait_until(lambda: len(listener.outputs) == 3, what="the three FlowFiles")
    assert [a["invokehttp.status.code"] for a, _ in out["original"]] == ["200"] * 3
    for (sent, content), (received, data) in zip(inputs, listener.outputs, strict=True):
        assert data == content
        assert {k: received[k] for k in sent} == sent
        assert not any(name.startswith("invokehttp.") for name in received)


def test_merge_content_v3_then_listen_http_keeps_every_attribute_and_byte():
    inputs = [({"filename": f"f{i}", "ünï": "é" * i, "i": str(i)}, bytes([i]) * i) for i in range(20)]
    inputs.append(({"filename": "empty"}, b""))
    merged = run("MergeContent", {"min_entries": 21, "max_entries": 21, "merge_format": "flowfile_stream_v3"}, inputs)
    ((attributes, stream),) = merged["merged"]
    assert attributes["mime.type"] == MIME_TYPE and attributes["filename"].endswith(".pkg")
    with Listener() as listener:
        out = invoke({"url": f"http://127.0.0.1:{listener.port}/contentListener"}, [(attributes, stream)])
        assert len(out["original"]) == 1
        wait_until(lambda: len(listener.outputs) == 21, what="the 21 FlowFiles")
    for (sent, content), (received, data) in zip(inputs, listener.outputs, strict=True):
        assert data == content and {k: received[k] for k in sent} == sent


def test_ten_thousand_flowfiles_in_one_request_are_taken_once_also_when_resent_after_a_lost_200():
    count = 10_000
    inputs = [({"id": f"id-{i}"}, f"payload {i}".encode()) for i in range(count)]
    merged = run(
        "MergeContent", {"min_entries": count, "max_entries": count, "merge_format": "flowfile_stream_v3"}, inputs
    )
    ((attributes, stream),) = merged["merged"]
    with Listener() as listener:
        url = f"http://127.0.0.1:{listener.port}/contentListener"
        bench = Bench("InvokeHTTP", {"url": url}, RELATIONSHIPS)
        bench.add(stream, **attributes)
        # The node dies after the 200 and before its commit: the session is never committed.
        session = bench.session()
        bench.processor.on_trigger(bench.context, session)
        session.rollback()
        wait_until(lambda: len(listener.outputs) == count, what="the first request's FlowFiles")
        bench.run_once()  # the resend, with the same FlowFile's key
        ((sent, _, _),) = bench.drain("original")
        assert sent["invokehttp.status.code"] == "200"
        # A request after it, answered once the resend is settled: nothing else came.
        assert invoke({"url": url}, [({"filename": "marker"}, b"marker")])["original"]
        wait_until(lambda: len(listener.outputs) == count + 1, what="the marker")
    received = [(a["id"], data) for a, data in listener.outputs[:count]]
    assert received == [(a["id"], content) for a, content in inputs], "each FlowFile once, in order"
    assert listener.outputs[count][1] == b"marker"


def test_a_damaged_stream_is_answered_400_and_goes_to_no_retry_with_nothing_kept():
    stream = encode([({"filename": "a"}, b"first"), ({"filename": "b"}, b"second")])
    with Listener() as listener:
        url = f"http://127.0.0.1:{listener.port}/contentListener"
        out = invoke({"url": url}, [({"mime.type": MIME_TYPE}, stream[:-3])])
        ((refused, _),) = out["no_retry"]
        assert refused["invokehttp.status.code"] == "400" and "FlowFile stream" in refused["invokehttp.response.body"]
        assert invoke({"url": url}, [({"mime.type": MIME_TYPE}, stream)])["original"]
        wait_until(lambda: len(listener.outputs) == 2, what="the whole stream")
    assert listener.bodies() == [b"first", b"second"]


# -- routing, headers, timeouts -----------------------------------------------------------


def test_routing_by_status_as_nifi_with_408_429_and_a_keyed_409_retried():
    assert [route_of(s, keyed=True) for s in (200, 204, 299)] == [ORIGINAL] * 3
    assert [route_of(s, keyed=True) for s in (500, 503, 599, 408, 429, 409)] == [RETRY] * 6
    assert [route_of(s, keyed=False) for s in (100, 301, 400, 401, 404, 409, 413, 422)] == [NO_RETRY] * 8


@pytest.mark.parametrize(
    "status, relationship, penalized", [(201, "original", False), (503, "retry", True), (404, "no_retry", False)]
)
def test_the_answer_routes_the_flowfile_with_its_status_attributes(status, relationship, penalized):
    with Stub(status, b"why: " + b"x" * 400) as stub:
        bench = Bench("InvokeHTTP", {"url": stub.url}, RELATIONSHIPS)
        bench.add(b"data", **{"mime.type": "text/csv"})
        bench.run_once()
    ((attributes, data, penalty),) = bench.drain(relationship)
    assert data == b"data" and attributes["invokehttp.status.code"] == str(status)
    assert attributes["invokehttp.request.url"] == stub.url and int(attributes["invokehttp.request.duration"]) >= 0
    assert (penalty == NOW + PENALTY_MS) is penalized
    if relationship == "original":
        assert "invokehttp.response.body" not in attributes
    else:
        assert attributes["invokehttp.response.body"] == "why: " + "x" * 251, "NiFi's 256 bytes"


def test_headers_content_type_token_and_idempotency_key():
    with Stub() as stub:
        bench = Bench(
            "InvokeHTTP",
            {
                "url": stub.url,
                "http_method": "PUT",
                "auth_token": "s3cret",
                "request_header_attributes_pattern": "x-.*",
                "X-Static": "from ${filename}",
            },
            RELATIONSHIPS,
        )
        typed, untyped = bench.add(b"a", b"b", **{"x-trace": "t1", "other": "no"})
        for _ in range(2):
            bench.run_once()
        assert len(bench.drain("original")) == 2
    (method, path, headers, body), _ = stub.requests
    assert (method, path, body) == ("PUT", "/in?x=1", b"a")
    assert headers["authorization"] == "Bearer s3cret" and headers["x-trace"] == "t1" and "other" not in headers
    assert headers["x-static"] == f"from {typed.attributes['filename']}"
    assert headers["idempotency-key"] == typed.id and headers["content-type"] == "application/octet-stream"
    assert stub.requests[1][2]["idempotency-key"] == untyped.id


def test_a_header_that_cannot_be_sent_goes_to_failure_saying_which():
    out = invoke({"url": "http://127.0.0.1:9/", "request_header_attributes_pattern": "x-.*"}, [({"x-u": "日本"}, b"")])
    ((failed, _),) = out["failure"]
    assert failed["invokehttp.exception.class"] == "InvalidHeader" and "x-u" in failed["invokehttp.exception.message"]


def test_response_generation_makes_the_body_a_flowfile_on_response():
    with Stub(200, b'{"ok": true}', "application/json") as stub:
        out = invoke(
            {"url": stub.url, "response_generation": "success"}, [({"k": "v"}, b"x")], RELATIONSHIPS + ("response",)
        )
    ((response, body),) = out["response"]
    assert body == b'{"ok": true}' and response["mime.type"] == "application/json" and response["k"] == "v"
    assert response["invokehttp.status.code"] == "200" and len(out["original"]) == 1
    with pytest.raises(FlowDefinitionError, match="response"):
        # `response` exists only when asked for, and must then be connected
        parse_flow(
            {
                "processors": [
                    {
                        "id": "p",
                        "type": "InvokeHTTP",
                        "properties": {"url": "http://h/", "response_generation": "always"},
                        "auto_terminate": list(RELATIONSHIPS),
                    }
                ]
            }
        )


@pytest.mark.parametrize("method", ["GET", "DELETE", "HEAD", "OPTIONS"])
def test_a_method_without_a_body_sends_none_and_can_take_the_answer_as_a_flowfile(method):
    with Stub(200, b"the resource", "text/plain") as stub:
        out = invoke(
            {"url": stub.url, "http_method": method, "response_generation": "success"},
            [({"k": "v"}, b"not sent")],
            RELATIONSHIPS + ("response",),
        )
    ((sent_method, path, headers, data),) = stub.requests
    assert (sent_method, path, data) == (method, "/in?x=1", b"")
    assert "content-length" not in headers and "content-type" not in headers
    ((response, body),) = out["response"]
    assert body == (b"" if method == "HEAD" else b"the resource") and response["k"] == "v"
    assert [data for _, data in out["original"]] == [b"not sent"]


def test_patch_sends_the_content_as_post_does():
    with Stub(204) as stub:
        out = invoke({"url": stub.url, "http_method": "PATCH"}, [({}, b"delta")])
    assert [(m, d) for m, _, _, d in stub.requests] == [("PATCH", b"delta")] and len(out["original"]) == 1


def test_a_flowfile_v3_package_needs_a_method_with_a_body():
    with pytest.raises(FlowDefinitionError, match="a GET request has no body to package"):
        parse_flow(
            {
                "processors": [
                    {
                        "id": "p",
                        "type": "InvokeHTTP",
                        "properties": {"url": "http://h/", "http_method": "GET", "send_as_flowfile_v3": True},
                        "auto_terminate": list(RELATIONSHIPS),
                    }
                ]
            }
        )


def test_a_receiver_that_never_answers_sends_the_flowfile_to_failure_after_the_read_timeout():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        started = time.monotonic()
        out = invoke({"url": url, "socket_read_timeout": "300 ms"}, [({}, b"x")])
        elapsed = time.monotonic() - started
    ((failed, _),) = out["failure"]
    assert failed["invokehttp.exception.class"] == "TimeoutError" and elapsed < 5
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{closed.getsockname()[1]}/"
    closed.close()
    ((failed, _),) = invoke({"url": url}, [({}, b"x")])["failure"]
    assert failed["invokehttp.exception.class"] == "ConnectionRefusedError"


@pytest.mark.parametrize(
    "url, accepted",
    [
        ("http://127.0.0.1:8080/x", True),
        ("HTTPS://example.test/", True),
        ("http://${host}:${port}/in", True),
        ("ftp://127.0.0.1/x", False),
        ("file:///etc/passwd", False),
        ("${url}", False),
        ("127.0.0.1:8080", False),
        ("http://user:pw@127.0.0.1/", False),
        ("http:///nohost", False),
    ],
)
def test_a_url_that_is_not_http_or_https_is_refused_when_the_flow_is_loaded(url, accepted):
    document = {
        "processors": [
            {"id": "p", "type": "InvokeHTTP", "properties": {"url": url}, "auto_terminate": list(RELATIONSHIPS)}
        ]
    }
    if accepted:
        parse_flow(document)
    else:
        with pytest.raises(FlowDefinitionError, match="url"):
            parse_flow(document)


def test_an_evaluated_url_that_cannot_be_requested_goes_to_failure():
    ((failed, _),) = invoke({"url": "http://${host}/x"}, [({"host": "a b"}, b"")])["failure"]
    assert failed["invokehttp.exception.class"] == "InvalidURL"
    assert url_problem("http://h:0/") and url_problem("https://h/ok") is None


def test_tls_to_a_listen_http_with_its_certificate_trusted_and_refused_without(tmp_path):
    cert, key = self_signed(tmp_path)
    with Listener(tls_cert=cert, tls_key=key) as listener:
        url = f"https://127.0.0.1:{listener.port}/contentListener"
        assert invoke({"url": url, "tls_ca_cert": cert}, [({}, b"secret")])["original"]
        ((failed, _),) = invoke({"url": url}, [({}, b"untrusted")])["failure"]
        wait_until(lambda: len(listener.outputs) == 1, what="the trusted request")
    assert failed["invokehttp.exception.class"] == "SSLCertVerificationError" and listener.bodies() == [b"secret"]


def test_waiting_on_the_network_holds_back_neither_its_other_task_nor_other_processors(tmp_path):
    both_in_flight = threading.Barrier(3, timeout=30)  # the two requests, and this test
    release = threading.Event()
    with Stub() as stub:
        answer = stub.server.RequestHandlerClass.do_POST

        def held(handler):
            both_in_flight.wait()
            release.wait(30)
            answer(handler)

        stub.server.RequestHandlerClass.do_POST = held
        out = tmp_path / "out"
        definition = parse_flow(
            {
                "processors": [
                    {"id": "gen", "type": "GenerateFlowFile", "properties": {"batch_size": 2, "max_count": 2}},
                    {
                        "id": "send",
                        "type": "InvokeHTTP",
                        "properties": {"url": stub.url, "socket_read_timeout": "60 sec"},
                        "scheduling": {"concurrent_tasks": 2},
                        "auto_terminate": list(RELATIONSHIPS),
                    },
                    {"id": "other", "type": "GenerateFlowFile", "properties": {"max_count": 20}},
                    {
                        "id": "put",
                        "type": "PutFile",
                        "properties": {"directory": str(out)},
                        "auto_terminate": ["success", "failure"],
                    },
                ],
                "connections": [{"source": "gen", "destination": "send"}, {"source": "other", "destination": "put"}],
            }
        )
        node = StandaloneNode(definition, str(tmp_path / "node"))
        node.start()
        try:
            both_in_flight.wait()  # two tasks of InvokeHTTP wait on the network at once...
            # ... while the other processors go on.
            assert node.wait_until(lambda: len(list(out.iterdir())) == 20 if out.exists() else False, 30)
            assert len(stub.requests) == 0, "neither request answered yet"
            release.set()
            assert node.wait_until(lambda: len(stub.requests) == 2 and node.engine.is_idle(), 30)
        finally:
            release.set()
            node.stop()
