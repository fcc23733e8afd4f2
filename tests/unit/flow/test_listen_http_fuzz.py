"""Fuzzing ListenHTTP's request handling over a loopback socket: random request lines,
headers (Content-Length and Transfer-Encoding values, huge and numerous headers),
bodies (Content-Length framed, chunked, truncated, corrupted), sent raw, a few at once.

The listener wants a bearer token, which most requests carry. Each request gets a
well-formed HTTP answer, or a close, within 2 s; never a 500. Every 200 is exactly one
FlowFile and nothing else is one; a well-formed POST gets 200 and its body delivered.
No exception escapes a connection thread (none is logged as an error, none reaches
threading.excepthook), and the server still takes a valid POST afterwards.
CUSTODY_LONG=1 runs 20 times as many examples.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from tests.unit.flow.listen_http_support import Listener, chunked, exchange, parse_answer, post_bytes

EXAMPLES = 150 * (20 if os.environ.get("CUSTODY_LONG") == "1" else 1)
ANSWER_WITHIN_S = 2.0
LIMIT = 4096
EXPECTED_STATUSES = {200, 400, 401, 404, 405, 413, 414, 431, 501, 503, 505}
TOKEN_VALUE = "fuzz-token"
AUTHORIZATION = f"Bearer {TOKEN_VALUE}"


@dataclass(frozen=True)
class Request:
    raw: bytes
    half_close: bool
    body: bytes | None = None  # a well-formed POST's: it must be answered 200 and delivered


class Failures(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record):
        self.seen.append(self.format(record))


@pytest.fixture(scope="module")
def served():
    failures = Failures()
    logger = logging.getLogger("flow.processor.listen")
    logger.addHandler(failures)
    previous_hook = threading.excepthook
    threading.excepthook = lambda args: failures.seen.append(
        f"{args.thread}: {args.exc_type.__name__}: {args.exc_value}"
    )
    listener = Listener(
        max_request_size=f"{LIMIT} B",
        idle_timeout="0.5 sec",
        ack_timeout="5 sec",
        max_connections=32,
        auth_token=TOKEN_VALUE,
    )
    try:
        yield listener, failures
    finally:
        listener.close()
        threading.excepthook = previous_hook
        logger.removeHandler(failures)


# -- strategies -------------------------------------------------------------------------

LATIN1 = st.characters(max_codepoint=255, exclude_characters="\r\n")
TOKEN = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."), min_size=1, max_size=20
)

# Mostly POSTs to the right path, so that most requests reach the body's framing.
methods = st.one_of(
    st.just("POST"),
    st.just("POST"),
    st.sampled_from(["GET", "PUT", "HEAD", "DELETE", "OPTIONS", "post", "PRI", "CONNECT"]),
    st.text(LATIN1, max_size=12),
)
paths = st.one_of(
    st.just("/contentListener"),
    st.just("/contentListener"),
    st.sampled_from(
        [
            "/contentListener/",
            "/contentListener?x=1",
            "/",
            "/other",
            "//contentListener",
            "*",
            "http://127.0.0.1/contentListener",
        ]
    ),
    st.text(LATIN1, max_size=60),
)
versions = st.one_of(
    st.just("HTTP/1.1"), st.sampled_from(["HTTP/1.0", "HTTP/0.9", "HTTP/2.0", "HTTP/1.1.1", "HTTP/x", "http/1.1", ""])
)
authorizations = st.one_of(
    st.just(AUTHORIZATION),
    st.just(AUTHORIZATION),
    st.just(AUTHORIZATION),
    st.sampled_from(["Bearer fuzz", "Bearer fuzz-token-", "bearer  fuzz-token", "Basic x"]),
    st.text(LATIN1, max_size=40),
)
content_lengths = st.one_of(
    st.sampled_from(
        [
            "-1",
            "0",
            "5",
            "+5",
            " 5 ",
            "1e3",
            "0x10",
            "99999999999999999999",
            str(LIMIT),
            str(LIMIT + 1),
            "100000",
            "",
            "1" * 5000,
            "5, 5",
            "٣",
        ]
    ),
    st.integers(-10, 2 * LIMIT).map(str),
)
transfer_encodings = st.sampled_from(
    ["chunked", "Chunked", "gzip", "chunked, chunked", "gzip, chunked", "identity", "", " chunked ", "chunked\tx"]
)
values = st.one_of(st.text(LATIN1, max_size=80), st.integers(60_000, 70_000).map(lambda n: "v" * n))
headers = st.one_of(
    st.tuples(st.just("Content-Length"), content_lengths),
    st.tuples(st.just("Transfer-Encoding"), transfer_encodings),
    st.tuples(
        st.sampled_from(
            [
                "Content-Type",
                "X-Attr-a",
                "X-Attr-http.remote.host",
                "Connection",
                "Expect",
                "Host",
                "filename",
                "Authorization",
                "Trailer",
            ]
        ),
        values,
    ),
    st.tuples(st.just("Authorization"), authorizations),
    st.tuples(TOKEN.filter(lambda name: name.lower() != "idempotency-key"), values),
)
header_blocks = st.one_of(
    st.lists(headers, max_size=8), st.integers(95, 110).map(lambda count: [("X-Many", "v")] * count)
)
bodies = st.binary(max_size=LIMIT + 200)


@st.composite
def chunked_bodies(draw) -> bytes:
    pieces = draw(st.lists(st.binary(min_size=1, max_size=1200), max_size=5))
    framed = chunked(*pieces, trailer=draw(st.sampled_from([b"", b"X-T: 1\r\n"])))
    mutation = draw(st.sampled_from(["none", "truncate", "flip", "size"]))
    if mutation == "truncate" and framed:
        return framed[: draw(st.integers(0, len(framed) - 1))]
    if mutation == "flip" and framed:
        at = draw(st.integers(0, len(framed) - 1))
        return framed[:at] + bytes([framed[at] ^ draw(st.integers(1, 255))]) + framed[at + 1 :]
    if mutation == "size":
        return draw(st.sampled_from([b"-1\r\n", b"fffffffffffffffff\r\n", b"1 ; x\r\na\r\n0\r\n\r\n", b"\r\n"]))
    return framed


@st.composite
def hostile_requests(draw) -> Request:
    if draw(st.integers(0, 9)) == 0:
        raw = draw(st.binary(max_size=300))
    else:
        eol = draw(st.sampled_from(["\r\n", "\r\n", "\n"]))
        line = " ".join(part for part in (draw(methods), draw(paths), draw(versions)) if part)
        fields = draw(header_blocks)
        if draw(st.integers(0, 4)) > 0:
            fields.insert(draw(st.integers(0, len(fields))), ("Authorization", AUTHORIZATION))
        head = eol.join([line] + [f"{name}: {value}" for name, value in fields]) + eol + eol
        body = draw(st.one_of(bodies, chunked_bodies()))
        raw = head.encode("utf-8") + body
        if draw(st.integers(0, 4)) == 0:
            raw = raw[: draw(st.integers(0, len(raw)))]
    return Request(raw, half_close=draw(st.integers(0, 9)) > 0)


@st.composite
def badly_framed_posts(draw) -> Request:
    """POSTs to the right path, with the token, whose framing headers or body are wrong."""
    framing_header = st.one_of(
        st.tuples(st.just("Content-Length"), content_lengths),
        st.tuples(st.just("Transfer-Encoding"), transfer_encodings),
    )
    framing = draw(
        st.one_of(st.lists(framing_header, min_size=1, max_size=1), st.lists(framing_header, min_size=1, max_size=3))
    )
    fields = [("Authorization", AUTHORIZATION)] + framing + draw(st.lists(headers, max_size=3))
    head = "\r\n".join(["POST /contentListener HTTP/1.1"] + [f"{name}: {value}" for name, value in fields])
    raw = (head + "\r\n\r\n").encode("utf-8") + draw(st.one_of(bodies, chunked_bodies()))
    return Request(raw, half_close=draw(st.integers(0, 9)) > 0)


@st.composite
def well_formed_posts(draw) -> Request:
    body = draw(st.binary(max_size=LIMIT))
    attributes = draw(
        st.dictionaries(
            st.sampled_from(["X-Attr-a", "X-Attr-b", "Content-Type", "filename"]),
            st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=20),
        )
    )
    attributes["Authorization"] = AUTHORIZATION
    if draw(st.booleans()):
        raw = post_bytes(body, attributes)
    else:
        pieces = [body[i : i + 1000] for i in range(0, len(body), 1000)]
        head = post_bytes(b"", {**attributes, "Transfer-Encoding": "chunked"})
        raw = head.replace(b"Content-Length: 0\r\n", b"") + chunked(*pieces)
    return Request(raw, half_close=draw(st.booleans()), body=body)


requests = st.lists(st.one_of(hostile_requests(), badly_framed_posts(), well_formed_posts()), min_size=1, max_size=4)


# -- the test ---------------------------------------------------------------------------


def send(listener, request: Request, answers: dict, index: int) -> None:
    started = time.monotonic()
    try:
        answer = exchange(listener.port, request.raw, half_close=request.half_close, timeout=ANSWER_WITHIN_S + 3)
    except Exception as error:  # noqa: BLE001 - reported by the test
        answers[index] = (error, time.monotonic() - started)
        return
    answers[index] = (answer, time.monotonic() - started)


def exchange_all(listener, batch: list[Request]) -> list[int | None]:
    """Each request's status (None: closed unanswered), sent at once; asserts the timing and form."""
    answers: dict[int, tuple] = {}
    clients = [
        threading.Thread(target=send, args=(listener, request, answers, index)) for index, request in enumerate(batch)
    ]
    for client in clients:
        client.start()
    for client in clients:
        client.join(ANSWER_WITHIN_S + 10)
    statuses = []
    for index, request in enumerate(batch):
        answer, elapsed = answers[index]
        note(
            f"request {index}: {request.raw[:300]!r} half-closed={request.half_close} -> {answer!r:.300} "
            f"in {elapsed:.2f} s"
        )
        assert not isinstance(answer, Exception), f"request {index}: {answer}"
        assert elapsed <= ANSWER_WITHIN_S, f"request {index} answered or closed after {elapsed:.2f} s"
        status = parse_answer(answer, to_head=request.raw.startswith(b"HEAD "))[0] if answer else None
        assert status is None or status in EXPECTED_STATUSES, f"request {index}: status {status}"
        if request.body is not None:
            assert status == 200, f"a well-formed POST answered {status}"
        statuses.append(status)
    return statuses


def test_fuzzed_requests_get_an_answer_or_a_close_and_the_server_keeps_serving(served):
    listener, failures = served
    tally = Counter()
    started = time.monotonic()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(requests)
    def fuzz(batch):
        before = len(listener.outputs)
        statuses = exchange_all(listener, batch)
        new = Counter(data for _, data in listener.outputs[before:])
        assert len(listener.outputs) - before == statuses.count(200), "a FlowFile that is not one 200"
        assert new >= Counter(request.body for request in batch if request.body is not None)
        assert not failures.seen, failures.seen
        tally.update("closed" if status is None else str(status) for status in statuses)
        tally["examples"] += 1

    fuzz()
    assert answer_of_a_valid_post(listener) == 200
    assert [data for _, data in listener.outputs].count(b"the last one") == 1
    assert not failures.seen and not listener.failures, (failures.seen, listener.failures)
    print(f"\nListenHTTP fuzz: {dict(tally)} in {time.monotonic() - started:.1f} s")


def answer_of_a_valid_post(listener) -> int:
    return parse_answer(exchange(listener.port, post_bytes(b"the last one", {"Authorization": AUTHORIZATION})))[0]
