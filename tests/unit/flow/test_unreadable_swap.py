"""What to do with a swap file that cannot be read is a pure decision: when to quarantine,
when to retry, when to log, and what the operator is told."""

import pytest

from flow.unreadable_swap import (
    ReadFailure,
    RetryBackoff,
    alarm_text,
    on_read_failed,
    on_registered,
    quarantined,
    retry_now,
)

BACKOFF = RetryBackoff(first_ms=1_000, max_ms=8_000)


def fail(
    previous,
    reason=ReadFailure.CORRUPT,
    now=0,
    *,
    location="/d/swap/q.0.x.swap",
    is_quarantined=False,
    error="records CRC mismatch",
):
    return on_read_failed(
        previous,
        location=location,
        queue="q",
        flowfiles=200,
        size=2_000,
        reason=reason,
        error=error,
        quarantined=is_quarantined,
        now_ms=now,
        backoff=BACKOFF,
    )


def test_a_corrupt_file_found_in_the_line_is_quarantined_logged_and_retried_after_the_first_backoff():
    decision = fail(None, now=10_000)
    assert decision.quarantine and decision.log
    assert (decision.file.failures, decision.file.since_ms, decision.file.next_attempt_ms) == (1, 10_000, 11_000)
    assert not decision.file.quarantined  # until the move is done and recorded


def test_a_quarantined_file_that_fails_again_stays_and_backs_off_doubling_up_to_the_maximum():
    alarm = quarantined(fail(None, now=0).file, "/d/swap-quarantine/q.0.x.swap")
    gaps = []
    now = 0
    for _ in range(6):
        now = alarm.next_attempt_ms
        decision = fail(alarm, now=now, location=alarm.location, is_quarantined=True)
        assert not decision.quarantine and decision.log  # once per backoff: every due attempt
        alarm = decision.file
        gaps.append(alarm.next_attempt_ms - now)
    assert gaps == [2_000, 4_000, 8_000, 8_000, 8_000, 8_000]
    assert alarm.since_ms == 0 and alarm.failures == 7 and alarm.quarantined


@pytest.mark.parametrize("reason", [ReadFailure.MISSING, ReadFailure.UNAVAILABLE])
def test_a_missing_or_unavailable_file_is_never_moved_only_retried(reason):
    decision = fail(None, reason=reason)
    assert not decision.quarantine and decision.log and decision.file.next_attempt_ms == 1_000
    again = fail(decision.file, reason=reason, now=1_000)
    assert not again.quarantine and again.file.next_attempt_ms == 3_000


def test_a_file_that_could_not_be_moved_is_moved_at_its_next_failure():
    first = fail(None, now=0)  # the move failed: the state stays unquarantined
    assert fail(first.file, now=first.file.next_attempt_ms).quarantine


def test_a_read_the_backoff_did_not_schedule_logs_nothing_unless_the_reason_changed():
    alarm = fail(None, now=0).file
    early = fail(alarm, now=500, location=alarm.location)  # a drop read it before its retry
    assert not early.log and early.file.failures == 2
    assert fail(alarm, reason=ReadFailure.UNAVAILABLE, now=500).log


def test_a_restart_puts_a_set_aside_file_in_alarm_due_at_once_and_an_operator_can_ask_for_a_retry():
    alarm = on_registered(
        location="/d/swap-quarantine/q.0.x.swap",
        queue="q",
        flowfiles=3,
        size=30,
        reason=ReadFailure.CORRUPT,
        error="quarantined by an earlier run",
        quarantined=True,
        now_ms=5_000,
    )
    assert alarm.due(5_000) and alarm.failures == 0
    later = fail(alarm, now=5_000, location=alarm.location, is_quarantined=True).file
    assert not later.due(5_500) and retry_now(later, 5_500).due(5_500)
    assert retry_now(later, 99_000).next_attempt_ms == later.next_attempt_ms  # never later than planned


@pytest.mark.parametrize(
    "reason,is_quarantined",
    [
        (ReadFailure.CORRUPT, True),
        (ReadFailure.CORRUPT, False),
        (ReadFailure.MISSING, False),
        (ReadFailure.UNAVAILABLE, False),
    ],
)
def test_the_alarm_says_what_happened_and_what_to_do_and_never_to_drop_anything(reason, is_quarantined):
    alarm = fail(None, reason=reason, is_quarantined=is_quarantined).file
    text = alarm_text(alarm, BACKOFF)
    assert alarm.location in text and "200 FlowFiles" in text and "stay recorded in the FlowFile WAL" in text
    assert "POST /api/v1/node/alarms/retry" in text and "1 s doubling up to 8 s" in text
    lowered = text.lower()
    for dropping in ("remove the", "delete the", "drop", "accept the loss", "knowingly"):
        assert dropping not in lowered
    if reason is ReadFailure.CORRUPT:
        assert "good copy of the same name" in text and "Do not delete it" in text
    if reason is ReadFailure.MISSING:
        assert "Put the file back at this path" in text


def test_a_backoff_must_start_positive_and_not_past_its_maximum():
    with pytest.raises(ValueError, match="must be positive"):
        RetryBackoff(0, 10)
    with pytest.raises(ValueError):
        RetryBackoff(10, 5)
    assert RetryBackoff(1, 1).delay_ms(1_000) == 1
