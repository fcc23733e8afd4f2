"""ListenHTTP's idempotency keys as the IETF Idempotency-Key draft has them, over a
loopback socket: a retry that repeats its first request is answered 200 and not taken
again; a key reused with another payload (body or attributes) is answered 422, and a
request whose key is in flight 409, at once; nothing of a refused request is kept.
(Across a restart, and the previous release's keys: tests/integration/test_flow_http.py.)"""

from __future__ import annotations

import time

from tests.unit.flow.listen_http_support import Listener, exchange, parse_answer, post_bytes, wait_until
from tests.unit.flow.test_listen_http_hardening import post_in_background


def answer(listener, body: bytes, key: str, **headers) -> tuple[int, dict, bytes]:
    return parse_answer(exchange(listener.port, post_bytes(body, {"Idempotency-Key": key, **headers}), timeout=5))


def test_a_key_reused_with_another_payload_is_answered_422_and_nothing_is_kept():
    with Listener() as listener:
        assert answer(listener, b"order 1", "order-1", **{"X-Attr-kind": "order"})[0] == 200
        # The retry of that request: answered, not taken again.
        assert answer(listener, b"order 1", "order-1", **{"X-Attr-kind": "order"})[0] == 200
        # The same key for other data: refused, whatever differs.
        for body, headers in (
            (b"order 2", {"X-Attr-kind": "order"}),
            (b"order 1", {"X-Attr-kind": "refund"}),
            (b"order 1", {}),
        ):
            status, _, message = answer(listener, body, "order-1", **headers)
            assert status == 422, (body, headers)
            assert b"Idempotency-Key order-1 was first used with another payload" in message
        assert listener.bodies() == [b"order 1"]
        # The client's address is no part of the payload: a retry from another is answered alike.
        assert listener.outputs[0][0]["kind"] == "order"


def test_a_request_whose_key_is_in_flight_is_answered_409_or_422_at_once_and_its_retry_after_200():
    with Listener(run=False, ack_timeout="60 sec") as listener:
        first = []
        client = post_in_background(listener, b"payment 7", first, **{"Idempotency-Key": "pay-7"})
        wait_until(lambda: listener.waiting == 1, what="the first request queued")
        started = time.monotonic()
        status, fields, message = answer(listener, b"payment 7", "pay-7")
        assert (status, fields.get("retry-after")) == (409, "1") and b"is in flight" in message
        assert answer(listener, b"payment 8", "pay-7")[0] == 422  # another payload: reused, in flight or not
        assert time.monotonic() - started < 5, "answered at once, not after the first request"
        assert listener.waiting == 1
        listener.trigger().acknowledge()
        client.join(10)
        assert first == [200]
        # Answered: a retry now finds the key committed.
        retry = []
        client = post_in_background(listener, b"payment 7", retry, **{"Idempotency-Key": "pay-7"})
        wait_until(lambda: listener.waiting == 1, what="the retry queued")
        result = listener.trigger()
        result.acknowledge()
        client.join(10)
        assert retry == [200] and result.outputs == []
        assert listener.bodies() == [b"payment 7"]


def test_a_key_whose_first_request_failed_is_free_for_a_retry_with_another_payload():
    # The first request's commit failed (503): nothing was kept, so its key holds no payload.
    with Listener(run=False, ack_timeout="60 sec") as listener:
        first = []
        client = post_in_background(listener, b"draft", first, **{"Idempotency-Key": "doc-1"})
        wait_until(lambda: listener.waiting == 1, what="the first request queued")
        listener.trigger().fail(RuntimeError("the flow failed"))
        client.join(10)
        assert first == [503]
        second = []
        client = post_in_background(listener, b"final", second, **{"Idempotency-Key": "doc-1"})
        wait_until(lambda: listener.waiting == 1, what="the second request queued")
        result = listener.trigger()
        result.acknowledge()
        client.join(10)
        assert second == [200] and [data for _, _, data in result.outputs] == [b"final"]
