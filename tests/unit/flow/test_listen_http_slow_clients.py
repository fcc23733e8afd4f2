"""ListenHTTP against slow clients, over loopback sockets: a slowloris attack (many
connections trickling their headers) cannot keep real clients out, a trickled header
block or body is cut at its deadline with 408, and nothing of a cut request is kept.
The deadlines' rules are checked without sockets too (`RequestDeadlines`)."""

from __future__ import annotations

import select
import threading
import time

import pytest

from flow.errors import FlowDefinitionError
from flow.processors.http_deadlines import BODY, HEADERS, RequestDeadlines, RequestTimeout
from flow.processors.http_server import _Connection, oldest_reading_headers
from tests.unit.flow.listen_http_support import (
    Listener,
    connect,
    exchange,
    parse_answer,
    post_bytes,
    read_to_close,
    wait_until,
)
from tests.unit.flow.test_listen_http_hardening import listen_flow, self_signed

TRICKLE_EVERY_S = 0.1
ATTACK = b"POST /contentListener HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Attr-padding: " + b"a" * 4096


class Trickler:
    """`count` connections, each sending `ATTACK` one byte every `TRICKLE_EVERY_S`, from
    one thread; `answers` holds what the server said to those it closed (b"": nothing)."""

    def __init__(self, port: int, count: int):
        self.sockets = [connect(port) for _ in range(count)]
        self._answers: dict[int, bytes] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trickler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for offset in range(len(ATTACK)):
            with self._lock:
                open_ = {sock: index for index, sock in enumerate(self.sockets) if index not in self._answers}
            closed, _, _ = select.select(list(open_), [], [], 0)  # readable: answered or closed
            for sock in open_:
                if sock not in closed:
                    try:
                        sock.sendall(ATTACK[offset : offset + 1])
                        continue
                    except OSError:
                        pass
                answer = read_to_close(sock, 5)
                with self._lock:
                    self._answers[open_[sock]] = answer
            if self._stop.wait(TRICKLE_EVERY_S):
                return

    @property
    def answers(self) -> list[bytes]:
        with self._lock:
            return list(self._answers.values())

    @property
    def cut(self) -> int:
        return len(self.answers)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for sock in self.sockets:
            sock.close()


def status_or_none(answer: bytes) -> int | None:
    return parse_answer(answer)[0] if answer else None


def post_until_answered_200(port: int, body: bytes, within: float) -> tuple[int, float]:
    """POST `body` as a client that honours Retry-After on 503 would, for `within` s;
    (the 503s it got, the seconds it took to get 200)."""
    started = time.monotonic()
    refused = 0
    while True:
        status, fields, _ = parse_answer(exchange(port, post_bytes(body), timeout=within))
        if status == 200:
            return refused, time.monotonic() - started
        assert status == 503, f"answered {status}"
        refused += 1
        assert time.monotonic() - started < within, f"no 200 within {within} s: {refused} answers 503"
        time.sleep(float(fields.get("retry-after", "1")))


# -- the attack, end to end ---------------------------------------------------------------


def test_a_slowloris_attack_holding_every_connection_does_not_keep_real_posts_out():
    # 25 connections trickle their headers into 20 slots; the headers' deadline (30 s) is
    # far off, so the attack lasts the whole test.
    with Listener(max_connections=20, header_timeout="30 sec", idle_timeout="30 sec") as listener:
        attack = Trickler(listener.port, 25)
        try:
            # Five of them find every slot taken: each is turned away, or cuts an older one.
            wait_until(lambda: attack.cut >= 5, 10, "five of the 25 tricklers answered 503")
            assert {status_or_none(answer) for answer in attack.answers} <= {503, None}
            # Every slot is a trickler's, and real clients are served meanwhile: the first
            # takes a trickler's place, the others the place each real client leaves.
            for index in range(5):
                post_until_answered_200(listener.port, f"real {index}".encode(), within=15)
            assert sorted(listener.bodies()) == [f"real {index}".encode() for index in range(5)]
            # The trickler cut is told why (503, best effort); nothing of the attack is kept.
            wait_until(lambda: attack.cut >= 6, 10, "a trickler cut for the first real client")
            assert {status_or_none(answer) for answer in attack.answers} <= {503, None}
        finally:
            attack.close()


def test_headers_trickled_past_header_timeout_are_answered_408_and_nothing_is_kept():
    with Listener(header_timeout="1 sec", idle_timeout="30 sec") as listener:
        attack = Trickler(listener.port, 3)
        started = time.monotonic()
        try:
            wait_until(lambda: attack.cut == 3, 15, "the trickled headers cut at their deadline")
            assert time.monotonic() - started < 10  # the deadline is 1 s; the idle timeout, never reached, 30 s
            for answer in attack.answers:
                if answer:  # the client may have found the connection reset instead
                    status, _, message = parse_answer(answer)
                    assert status == 408 and b"header_timeout" in message
        finally:
            attack.close()
        assert parse_answer(exchange(listener.port, post_bytes(b"on time")))[0] == 200
        assert listener.bodies() == [b"on time"]


def test_a_body_trickled_below_body_min_rate_is_answered_408_and_nothing_is_kept():
    with Listener(body_timeout="1 sec", body_min_rate="100 B", idle_timeout="30 sec") as listener:
        with connect(listener.port) as slow:
            slow.sendall(b"POST /contentListener HTTP/1.1\r\nContent-Length: 1000\r\n\r\n")
            started = time.monotonic()
            # 10 bytes a second: cut after 1 s of grace plus 0.01 s for each byte received.
            for _ in range(1000):
                if select.select([slow], [], [], TRICKLE_EVERY_S)[0]:
                    break  # answered
                slow.sendall(b"x")
            answer = read_to_close(slow, 10)
            took = time.monotonic() - started
        status, _, message = parse_answer(answer)
        assert status == 408 and b"body_min_rate" in message
        assert took < 10, f"cut after {took:.1f} s"
        # A body at twice the rate is taken, however long it takes past body_timeout.
        with connect(listener.port) as steady:
            steady.sendall(b"POST /contentListener HTTP/1.1\r\nContent-Length: 300\r\n\r\n")
            for _ in range(15):
                steady.sendall(b"y" * 20)
                time.sleep(TRICKLE_EVERY_S)  # the client's pace: 200 bytes a second
            assert parse_answer(read_to_close(steady, 10))[0] == 200
        assert listener.bodies() == [b"y" * 300]


def test_a_silent_connection_is_cut_for_a_real_client_when_every_slot_is_taken():
    with Listener(max_connections=1, header_timeout="30 sec", idle_timeout="30 sec") as listener:
        with connect(listener.port) as silent:
            # Turned away while the silent one is younger than EVICTABLE_AFTER_SECONDS,
            # served once it is older: the client honours Retry-After.
            post_until_answered_200(listener.port, b"served", within=15)
            status, fields, message = parse_answer(read_to_close(silent, 10))
            assert (status, fields["retry-after"]) == (503, "1") and b"send the request at once" in message
        assert listener.bodies() == [b"served"]


def test_a_tls_handshake_stalled_past_header_timeout_is_cut(tmp_path):
    cert, key = self_signed(tmp_path)
    with Listener(tls_cert=cert, tls_key=key, header_timeout="1 sec", idle_timeout="30 sec") as listener:
        with connect(listener.port) as stalled:
            stalled.sendall(b"\x16\x03\x01")  # the start of a ClientHello, and no more
            started = time.monotonic()
            assert read_to_close(stalled, 15) == b""
            assert time.monotonic() - started < 10, "held until the idle timeout"


@pytest.mark.parametrize(
    "properties, complaint",
    [
        ({"header_timeout": "0 sec"}, "header_timeout': must be more than 0 seconds"),
        ({"body_timeout": "0 sec"}, "body_timeout': must be more than 0 seconds"),
        ({"body_min_rate": "0 B"}, "body_min_rate': must be at least 1 byte"),
    ],
)
def test_the_deadlines_are_validated(properties, complaint):
    with pytest.raises(FlowDefinitionError, match=f"property '{complaint}"):
        listen_flow(port=0, **properties)


# -- the rules, without sockets -----------------------------------------------------------


def test_the_header_block_has_one_deadline_however_its_bytes_are_paced():
    deadlines = RequestDeadlines(100.0, header_timeout=10, body_timeout=5, body_min_rate=1000)
    assert deadlines.allowance(100.0, idle_timeout=30) == (10.0, True)
    deadlines.received(1)  # a byte of the headers buys no time
    assert deadlines.allowance(109.0, idle_timeout=30) == (1.0, True)
    assert deadlines.allowance(100.0, idle_timeout=2) == (2, False)  # the idle timeout bounds a read first
    with pytest.raises(RequestTimeout) as late:
        deadlines.allowance(110.0, idle_timeout=30)
    assert late.value.phase == HEADERS and "header_timeout" in late.value.message


def test_the_body_gets_its_grace_and_one_second_for_every_body_min_rate_bytes():
    deadlines = RequestDeadlines(100.0, header_timeout=10, body_timeout=5, body_min_rate=1000)
    deadlines.body_started(104.0)
    assert deadlines.phase == BODY and deadlines.allowance(104.0, idle_timeout=30) == (5.0, True)
    deadlines.received(3000)  # three seconds more
    assert deadlines.allowance(110.0, idle_timeout=30) == (2.0, True)
    with pytest.raises(RequestTimeout) as late:
        deadlines.allowance(112.0, idle_timeout=30)
    assert late.value.phase == BODY and "body_min_rate" in late.value.message


def test_the_connection_cut_is_the_oldest_still_reading_headers_past_the_threshold():
    def connection(opened_at, reading_headers=True, evicted=False):
        made = _Connection(None, opened_at, None)
        made.reading_headers, made.evicted = reading_headers, evicted
        return made

    oldest, younger = connection(1.0), connection(2.0)
    body, cut_already, fresh = connection(0.0, reading_headers=False), connection(0.5, evicted=True), connection(9.9)
    everyone = [younger, body, fresh, oldest, cut_already]
    assert oldest_reading_headers(everyone, now=10.0, grace=1.0) is oldest
    assert oldest_reading_headers([younger, fresh], now=10.0, grace=1.0) is younger
    assert oldest_reading_headers([body, cut_already, fresh], now=10.0, grace=1.0) is None
