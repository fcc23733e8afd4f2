"""ListenHTTP against hostile or careless clients, over a loopback socket: request
framing (Content-Length, chunked), the limits (body size, idle connections,
connections, pending requests), the 503 that promises no delivery, the attributes a
client may set, port validation, a bearer token and TLS."""

from __future__ import annotations

import io
import logging
import os
import socket
import ssl
import struct
import threading
import time
from email.message import Message

import pytest

from flow.errors import FlowDefinitionError, FlowError
from flow.loading import parse_flow
from tests.certificates import self_signed
from tests.unit.flow.listen_http_support import (
    Listener,
    chunked,
    connect,
    exchange,
    parse_answer,
    post_bytes,
    read_to_close,
    status_of,
    wait_until,
)

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def answered(listener, raw: bytes, **options) -> int:
    return status_of(exchange(listener.port, raw, **options))


# -- framing and sizes ------------------------------------------------------------------


@pytest.mark.parametrize("value", ["-1", "+3", "0x3", "3.0", "3 4", "", "³"])
def test_a_content_length_that_is_not_a_decimal_number_is_refused_and_nothing_delivered(value):
    with Listener(max_request_size="10 B") as listener:
        raw = f"POST /contentListener HTTP/1.1\r\nContent-Length: {value}\r\n\r\n".encode() + b"x" * 100
        assert answered(listener, raw) == 400
        assert answered(listener, post_bytes(b"ok")) == 200
        assert listener.bodies() == [b"ok"]


def test_content_lengths_that_disagree_are_refused_and_one_over_the_limit_gets_413():
    with Listener(max_request_size="10 B") as listener:
        two = b"POST /contentListener HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc"
        assert answered(listener, two) == 400
        assert answered(listener, post_bytes(b"x" * 11)) == 413
        assert answered(listener, post_bytes(b"x" * 10)) == 200
        huge = b"POST /contentListener HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n"
        assert answered(listener, huge) == 413
        assert listener.bodies() == [b"x" * 10]


def test_a_chunked_body_is_read_and_delivered_whole():
    with Listener() as listener:
        raw = b"POST /contentListener HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(
            b"hello", b" chunked", b" world", trailer=b"X-Checksum: none\r\n"
        )
        assert answered(listener, raw) == 200
        with_extension = (
            b"POST /contentListener HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n3;name=value\r\nabc\r\n0\r\n\r\n"
        )
        assert answered(listener, with_extension) == 200
        assert listener.bodies() == [b"hello chunked world", b"abc"]


@pytest.mark.parametrize(
    "framing, status",
    [
        (b"Transfer-Encoding: chunked\r\n\r\n" + b"zz\r\nab\r\n0\r\n\r\n", 400),  # not hexadecimal
        (b"Transfer-Encoding: chunked\r\n\r\n" + b"2\r\nabc\r\n0\r\n\r\n", 400),  # longer than its size
        (b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n" + chunked(b"abc"), 400),
        (b"Transfer-Encoding: gzip, chunked\r\n\r\n" + chunked(b"abc"), 501),
        (b"Transfer-Encoding: chunked\r\n\r\n" + chunked(b"x" * 8, b"x" * 8), 413),  # 16 bytes: over 10
        (b"Transfer-Encoding: chunked\r\n\r\n" + b"ffffffffffffffff\r\n", 413),
        (b"Transfer-Encoding: chunked\r\n\r\n" + b"1" * 5000 + b"\r\n", 400),
    ],
)
def test_a_bad_or_oversized_chunked_body_is_refused_and_nothing_delivered(framing, status):
    with Listener(max_request_size="10 B") as listener:
        assert answered(listener, b"POST /contentListener HTTP/1.1\r\n" + framing) == status
        assert answered(listener, post_bytes(b"ok")) == 200
        assert listener.bodies() == [b"ok"]


@pytest.mark.parametrize(
    "line",
    [
        b"this line is not a header",  # no colon: the email parser's "body" starts here
        b"X-Spaced : 1",  # white space before the colon (RFC 9112 5.1)
        b" folded continuation",  # obs-fold (RFC 9112 5.2)
        b"X-Bad Name: 1",  # not a token
        b": no name",
        b"X-CR: a\rX-Hidden: b",  # a lone CR: two header lines for the email parser
        b"X-Nul: a\x00b",
    ],
)
def test_a_header_block_that_does_not_parse_whole_is_refused_400_and_nothing_is_kept(line):
    with Listener() as listener:
        # The malformed line hides the Content-Length after it from Python's email parser:
        # the body was dropped, and an empty FlowFile answered 200.
        raw = (
            b"POST /contentListener HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Attr-a: 1\r\n"
            + line
            + b"\r\nContent-Length: 9\r\n\r\nthe body!"
        )
        status, _, message = parse_answer(exchange(listener.port, raw))
        assert status == 400 and b"header line 3" in message and b"not taken" in message
        assert answered(listener, post_bytes(b"ok")) == 200
        assert listener.bodies() == [b"ok"]


def test_a_header_block_cut_short_is_neither_taken_nor_answered():
    with Listener() as listener:
        # The client closes its side before the blank line that ends the headers.
        assert exchange(listener.port, b"POST /contentListener HTTP/1.1\r\nContent-Length: 0\r\n") == b""
        assert exchange(listener.port, b"POST /contentListener HTTP/1.1\r\nContent-Len") == b""
        assert exchange(listener.port, b"POST /contentListener HTT") == b""
        assert answered(listener, post_bytes(b"ok")) == 200
        assert listener.bodies() == [b"ok"]


def test_header_lines_ended_by_a_bare_lf_and_obs_text_values_are_taken():
    with Listener() as listener:
        raw = b"POST /contentListener HTTP/1.1\nX-Attr-Name: caf\xe9\tau lait\nContent-Length: 2\n\nok"
        assert answered(listener, raw) == 200
        [(attributes, body)] = listener.outputs
        assert body == b"ok" and attributes["name"] == "caf\xe9\tau lait"


def test_a_truncated_body_is_not_delivered_nor_answered():
    with Listener() as listener:
        short = b"POST /contentListener HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc"
        assert exchange(listener.port, short) == b""
        assert (
            exchange(listener.port, b"POST /contentListener HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab")
            == b""
        )
        assert answered(listener, post_bytes(b"ok")) == 200
        assert listener.bodies() == [b"ok"]


class CountingReader(io.BufferedReader):
    """Counts the body bytes read from it, not the line framing."""

    def __init__(self, data: bytes):
        super().__init__(io.BytesIO(data))
        self.body_bytes = 0

    def read(self, size=-1):
        assert size is not None and size >= 0, "a read to the end of the stream"
        data = super().read(size)
        self.body_bytes += len(data)
        return data


def headers(**fields) -> Message:
    message = Message()
    for name, value in fields.items():
        message[name.replace("_", "-")] = value
    return message


def test_a_body_is_read_in_pieces_and_never_past_the_limit():
    from flow.processors.http import Refusal, read_body

    limit = 100_000
    stream = CountingReader(b"x" * 10_000_000)
    with pytest.raises(Refusal) as refused:
        read_body(stream, headers(Content_Length=str(limit + 1)), limit)
    assert refused.value.status == 413 and stream.body_bytes == 0
    chunks = CountingReader(chunked(*[b"y" * 30_000] * 300))  # 9 MB announced in 30 KB chunks
    with pytest.raises(Refusal) as refused:
        read_body(chunks, headers(Transfer_Encoding="chunked"), limit)
    assert refused.value.status == 413 and chunks.body_bytes <= limit
    exact = CountingReader(b"z" * limit + b"trailing")
    assert read_body(exact, headers(Content_Length=str(limit)), limit) == b"z" * limit
    assert exact.body_bytes == limit


# -- connections ------------------------------------------------------------------------


def test_an_idle_connection_is_closed_after_idle_timeout():
    with Listener(idle_timeout="0.3 sec") as listener:
        started = time.monotonic()
        with connect(listener.port) as silent:
            assert read_to_close(silent, 10) == b""
        assert time.monotonic() - started < 5
        with connect(listener.port) as slow:  # headers sent, the body never comes
            slow.sendall(b"POST /contentListener HTTP/1.1\r\nContent-Length: 5\r\n\r\nab")
            assert read_to_close(slow, 10) == b""
        assert listener.bodies() == []


def test_connections_beyond_max_connections_are_answered_503_at_once_and_slots_come_back():
    with Listener(max_connections=2, idle_timeout="20 sec") as listener:
        # Accepted in order: both hold their slots before the third is accepted.
        idle = [connect(listener.port), connect(listener.port)]
        try:
            started = time.monotonic()
            with connect(listener.port) as extra:
                status, fields, _ = parse_answer(read_to_close(extra, 5))
            assert status == 503 and fields["retry-after"] == "1"
            assert time.monotonic() - started < 2
        finally:
            for sock in idle:
                sock.close()
        deadline = time.monotonic() + 10
        while answered(listener, post_bytes(b"after")) != 200:
            assert time.monotonic() < deadline, "the closed connections' slots never came back"
            time.sleep(0.05)
        assert listener.bodies() == [b"after"]


def test_stopping_answers_waiting_requests_503_at_once():
    listener = Listener(run=False, ack_timeout="60 sec")
    answers = []
    client = threading.Thread(target=lambda: answers.append(answered(listener, post_bytes(b"never"))))
    client.start()
    wait_until(lambda: listener.waiting == 1, what="the request queued")
    started = time.monotonic()
    listener.close()
    client.join(10)
    assert answers == [503] and time.monotonic() - started < 5


# -- what 503 promises ------------------------------------------------------------------


def post_in_background(listener, body: bytes, answers: list, **headers) -> threading.Thread:
    def run():
        try:
            answers.append(answered(listener, post_bytes(body, headers), timeout=30))
        except Exception as error:  # noqa: BLE001 - the test asserts on what it got
            answers.append(error)

    client = threading.Thread(target=run)
    client.start()
    return client


def trigger_until_taken(listener):
    deadline = time.monotonic() + 10
    while True:
        result = listener.trigger()
        if result.outputs:
            return result
        result.acknowledge()
        assert time.monotonic() < deadline, "no request was taken"
        time.sleep(0.01)


def test_a_request_answered_503_after_ack_timeout_is_never_delivered():
    with Listener(run=False, ack_timeout="0.3 sec") as listener:
        answers = []
        post_in_background(listener, b"late", answers).join(10)
        assert answers == [503]
        listener.trigger().acknowledge()
        assert listener.bodies() == [] and listener.waiting == 0


@pytest.mark.parametrize("settle, expected", [("acknowledge", 200), ("fail", 503)])
def test_a_request_taken_before_ack_timeout_is_answered_with_its_commits_outcome(settle, expected):
    with Listener(run=False, ack_timeout="0.3 sec") as listener:
        answers = []
        client = post_in_background(listener, b"taken", answers)
        result = trigger_until_taken(listener)
        time.sleep(0.8)  # past ack_timeout, the commit still in flight
        assert answers == []
        result.acknowledge() if settle == "acknowledge" else result.fail(RuntimeError("the caller's commit failed"))
        client.join(10)
        assert answers == [expected]


def test_a_request_whose_commit_is_in_flight_when_the_processor_stops_gets_no_answer():
    listener = Listener(run=False, ack_timeout="0.3 sec")
    try:
        answers = []
        with connect(listener.port) as sock:
            sock.sendall(post_bytes(b"unknown"))
            result = trigger_until_taken(listener)
            closer = threading.Thread(target=listener.close)
            closer.start()
            answers.append(read_to_close(sock, 10))
            closer.join(10)
        result.acknowledge()  # too late to answer: the connection is closed
        assert answers == [b""]
    finally:
        listener.close()


def test_under_load_every_200_is_delivered_once_and_no_503_ever_is():
    # Commits outlast the ack timeout: timeouts race the takes, and taken requests outwait them.
    with Listener(ack_timeout="0.05 sec", acknowledge_after=0.06, max_batch=2) as listener:
        answers: dict[bytes, int] = {}

        def client(worker: int):
            for index in range(15):
                body = f"{worker}-{index}".encode()
                answers[body] = answered(listener, post_bytes(body), timeout=30)

        clients = [threading.Thread(target=client, args=(worker,)) for worker in range(6)]
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join(60)
        assert set(answers.values()) <= {200, 503} and len(answers) == 90
        accepted = sorted(body for body, status in answers.items() if status == 200)
        assert sorted(listener.bodies()) == accepted, "a body answered 503 was delivered, or one answered 200 was not"


def test_a_failure_before_the_commit_is_answered_500_at_once():
    with Listener(run=False, ack_timeout="60 sec") as listener:
        listener.flow.restore_states({"listen": {"intake.layout": "999"}})  # a state it cannot read
        answers = []
        client = post_in_background(listener, b"data", answers)
        wait_until(lambda: listener.waiting == 1, what="the request queued")
        assert not listener.trigger().success
        client.join(10)
        assert answers == [500] and listener.bodies() == []


def test_requests_beyond_max_pending_are_answered_503_with_retry_after():
    with Listener(run=False, max_pending=2, ack_timeout="30 sec") as listener:
        answers = []
        clients = [post_in_background(listener, body, answers) for body in (b"one", b"two")]
        wait_until(lambda: listener.waiting == 2, what="two requests queued")
        started = time.monotonic()
        status, fields, _ = parse_answer(exchange(listener.port, post_bytes(b"three")))
        assert (status, fields.get("retry-after")) == (503, "1") and time.monotonic() - started < 2
        listener.trigger().acknowledge()
        for client in clients:
            client.join(10)
        assert answers == [200, 200] and sorted(listener.bodies()) == [b"one", b"two"]


# -- attributes -------------------------------------------------------------------------


def test_headers_cannot_set_the_processors_attributes():
    # `filename` is reserved: this flow lets clients set it, explicitly.
    with Listener(
        header_attributes="X-Attr-.+|Content-Type|filename", reserved_header_attributes="filename"
    ) as listener:
        raw = post_bytes(
            b"data",
            {
                "X-Attr-http.remote.host": "10.6.6.6",
                "X-Attr-http.idempotency.key": "forged",
                "X-Attr-uuid": "forged",
                "X-Attr-Source": "test",
                "Content-Type": "text/plain",
                "filename": "a.txt",
                "X-Other": "dropped",
            },
        )
        assert answered(listener, raw) == 200
        [(attributes, _)] = listener.outputs
        assert attributes["http.remote.host"] == "127.0.0.1"
        assert "http.idempotency.key" not in attributes and attributes.get("uuid") != "forged"
        assert attributes["source"] == "test"
        assert (attributes["mime.type"], attributes["filename"]) == ("text/plain", "a.txt")
        assert "x-other" not in attributes and "other" not in attributes


def test_headers_never_set_filename_path_or_absolute_path_unless_the_flow_says_so():
    steering = {
        "filename": "../../etc/cron.d/x",
        "X-Attr-Filename": "x",
        "X-Attr-path": "../../",
        "X-Attr-absolute.path": "/etc/",
        "X-Attr-uuid": "forged",
        "X-Attr-source": "test",
    }
    # The default header_attributes no longer names `filename`; even one that takes every
    # header sets none of the reserved attributes.
    for properties in ({}, {"header_attributes": ".+"}):
        with Listener(**properties) as listener:
            assert answered(listener, post_bytes(b"data", steering)) == 200
            [(attributes, _)] = listener.outputs
            assert attributes["source"] == "test", properties
            # A FlowFile's own defaults (its uuid for a name, "./" for a path), not the client's.
            assert attributes["filename"] not in ("x", "../../etc/cron.d/x") and attributes["path"] == "./"
            assert "absolute.path" not in attributes and attributes.get("uuid") != "forged"
    # A flow that lets clients name their files says so, attribute by attribute.
    with Listener(header_attributes="X-Attr-.+", reserved_header_attributes="filename, path") as listener:
        assert answered(listener, post_bytes(b"data", {k: v for k, v in steering.items() if k != "filename"})) == 200
        [(attributes, _)] = listener.outputs
        assert (attributes["filename"], attributes["path"]) == ("x", "../../")
        assert "absolute.path" not in attributes and attributes.get("uuid") != "forged"


@pytest.mark.parametrize(
    "listed, complaint",
    [("uuid", "uuid is a FlowFile's identity"), ("filename, mime.type", "'mime.type' is not reserved")],
)
def test_reserved_header_attributes_names_only_reserved_attributes_and_never_uuid(listed, complaint):
    with pytest.raises(FlowDefinitionError, match=f"property 'reserved_header_attributes': .*{complaint}"):
        listen_flow(port=0, reserved_header_attributes=listed)


def test_refusals_are_logged_at_most_once_a_minute_for_each_kind_with_a_count(caplog):
    with Listener() as listener:
        with caplog.at_level(logging.INFO, logger="flow.processor.listen"):
            for _ in range(5):
                assert answered(listener, b"POST /contentListener HTTP/1.1\r\nnot a header\r\n\r\n") == 400
                assert answered(listener, post_bytes(b"x", path="/elsewhere")) == 404
        lines = [record.getMessage() for record in caplog.records if "answered" in record.getMessage()]
        assert len([line for line in lines if "answered 400" in line]) == 1, lines
        assert len([line for line in lines if "answered 404" in line]) == 1, lines
        assert "header line 1 has no colon" in " ".join(lines)


def test_header_attributes_chooses_the_headers_that_become_attributes():
    with Listener(header_attributes="X-Attr-source|x-trace") as listener:
        raw = post_bytes(
            b"data",
            {"X-Attr-Source": "test", "X-Attr-Other": "dropped", "X-Trace": "t-1", "Content-Type": "text/plain"},
        )
        assert answered(listener, raw) == 200
        [(attributes, _)] = listener.outputs
        assert attributes["source"] == "test" and attributes["x-trace"] == "t-1"
        assert "other" not in attributes and "mime.type" not in attributes


# -- validation -------------------------------------------------------------------------


def listen_flow(**properties):
    return parse_flow(
        {
            "processors": [
                {"id": "listen", "type": "ListenHTTP", "properties": properties, "auto_terminate": ["success"]}
            ]
        }
    )


@pytest.mark.parametrize("port", [99999, 65536, -1])
def test_a_port_outside_0_to_65535_is_refused_by_validation(port):
    with pytest.raises(FlowDefinitionError, match="property 'port': must be 0 to 65535"):
        listen_flow(port=port)


@pytest.mark.parametrize(
    "properties, named",
    [
        ({"max_connections": 0}, "max_connections"),
        ({"max_pending": 0}, "max_pending"),
        ({"idle_timeout": "0 sec"}, "idle_timeout"),
        ({"tls_cert": "cert.pem"}, "tls_key"),
        ({"tls_key": "key.pem"}, "tls_cert"),
        ({"auth_token": "has space"}, "auth_token"),
    ],
)
def test_limits_tls_files_and_token_are_validated(properties, named):
    with pytest.raises(FlowDefinitionError, match=f"property '{named}'"):
        listen_flow(port=0, **properties)


# -- bearer token and TLS ---------------------------------------------------------------


def test_a_post_without_the_bearer_token_is_refused_401_before_its_body_is_read():
    with Listener(auth_token="s3cret-token") as listener:
        for authorization in (None, "Bearer wrong", "Basic s3cret-token", "Bearer s3cret-token-longer"):
            headers = {"Authorization": authorization} if authorization else {}
            status, fields, _ = parse_answer(exchange(listener.port, post_bytes(b"refused", headers)))
            assert (status, fields.get("www-authenticate")) == (401, "Bearer"), authorization
        twice = post_bytes(b"refused", {"Authorization": "Bearer s3cret-token"}).replace(
            b"\r\n\r\n", b"\r\nAuthorization: Bearer s3cret-token\r\n\r\n", 1
        )
        assert answered(listener, twice) == 401
        assert answered(listener, post_bytes(b"ok", {"Authorization": "bearer s3cret-token"})) == 200
        assert listener.bodies() == [b"ok"]


def test_tls_serves_https_with_the_token_and_drops_plain_http(tmp_path):
    cert, key = self_signed(tmp_path)
    client = ssl.create_default_context(cafile=cert)
    with Listener(tls_cert=cert, tls_key=key, auth_token="t0ken", idle_timeout="2 sec") as listener:
        authorized = post_bytes(b"secret data", {"Authorization": "Bearer t0ken"})
        assert answered(listener, authorized, tls=client) == 200
        assert answered(listener, post_bytes(b"no token"), tls=client) == 401
        plain = exchange(listener.port, authorized)
        assert not plain.startswith(b"HTTP/1.") or status_of(plain) == 400
        assert listener.bodies() == [b"secret data"]
        with pytest.raises(ssl.SSLError):  # a client that does not trust the certificate
            connect(listener.port, tls=ssl.create_default_context())


def test_unreadable_tls_files_fail_the_start_naming_the_property(tmp_path):
    missing = str(tmp_path / "missing.pem")
    with pytest.raises(FlowError, match="cannot load tls_cert"):
        Listener(tls_cert=missing, tls_key=missing)


def test_the_server_keeps_serving_after_clients_that_reset():
    with Listener(idle_timeout="1 sec") as listener:
        for raw in (b"POST /contentListener HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc", b"GARBAGE\r\n", b""):
            sock = socket.create_connection(("127.0.0.1", listener.port))
            sock.sendall(raw)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # an RST, not a FIN
        assert answered(listener, post_bytes(b"ok")) == 200
        assert listener.bodies() == [b"ok"]


class FailingSession:
    """A session whose commit fails as the traditional engine reports it (`on_failure`)."""

    def __init__(self, error):
        self.error = error

    def commit_async(self, on_success, on_failure):
        on_failure(self.error)


@pytest.mark.parametrize("wal_written, expected", [(False, 503), (True, None)])
def test_a_failed_commit_is_answered_503_unless_a_recovery_may_still_replay_it(wal_written, expected):
    from flow.errors import CommitError
    from flow.processors.http import ListenHTTP, _Intake, _Pending

    processor = ListenHTTP("listen")
    processor._intake = _Intake(10)
    request = _Pending(b"data", {}, "127.0.0.1")
    assert processor._intake.offer(request) is None  # queued (else: the status to answer at once)
    taken = processor._intake.take(10)
    error = CommitError("the WAL write failed", wal_written=wal_written)
    with pytest.raises(CommitError):
        processor._commit(FailingSession(error), taken)
    assert request.done.is_set() and request.status == expected
