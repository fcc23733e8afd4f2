"""Download tickets (`cluster.admin.download_tickets`) on an injected clock: a ticket
serves the FlowFile it was made for, until it expires, on the node that made it."""

from __future__ import annotations

import pytest

from cluster.admin.download_tickets import REFUSED, DownloadTickets, TicketRefused, attachment_filename

UUID = "0f8e2a34-1c5d-4b6e-9a7f-3d2c1b0a9e8f"
OTHER = "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d"


class Clock:
    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def tickets(clock, secret=b"s" * 32) -> DownloadTickets:
    return DownloadTickets(secret=secret, clock=clock)


def refused(tickets_, value, uuid=UUID) -> str:
    with pytest.raises(TicketRefused) as caught:
        tickets_.check(value, uuid)
    assert str(caught.value) == REFUSED  # one message, whatever the reason
    return caught.value.reason


def test_a_ticket_serves_its_flowfile_until_it_expires_60_seconds_later():
    clock = Clock()
    made = tickets(clock)
    ticket = made.issue(UUID)
    assert ticket.expires_at == clock.now + 60
    made.check(ticket.value, UUID)
    made.check(ticket.value, UUID.upper())  # the same uuid, as a client may spell it
    clock.now += 59.999
    made.check(ticket.value, UUID)
    clock.now += 0.001
    assert refused(made, ticket.value) == "expired"


def test_a_ticket_serves_no_other_flowfile_and_no_other_node():
    clock = Clock()
    ticket = tickets(clock).issue(UUID).value
    assert refused(tickets(clock), ticket, OTHER) == "not made by this node for this FlowFile"
    assert refused(tickets(clock, secret=b"t" * 32), ticket) == "not made by this node for this FlowFile"
    assert tickets(clock).issue(UUID).value == ticket  # the same secret and time: the same ticket
    fresh = DownloadTickets(clock=clock)  # a random secret of its own
    assert fresh.issue(UUID).value != ticket
    refused(fresh, ticket)


def test_a_later_expiry_cannot_be_written_into_a_ticket():
    clock = Clock()
    made = tickets(clock)
    expires, mac = made.issue(UUID).value.split(".")
    assert refused(made, f"{int(expires) + 3_600_000}.{mac}") == "not made by this node for this FlowFile"


@pytest.mark.parametrize(
    "value",
    ["", ".", "abc", "1800000060000", "1800000060000.", "x.y", "1." + "A" * 44, "1 ." + "A" * 43, "9" * 200],
)
def test_a_malformed_ticket_is_refused(value):
    assert refused(tickets(Clock()), value) == "malformed"


@pytest.mark.parametrize(
    ("filename", "saved_as"),
    [
        ("report 2026 (final).csv", "report 2026 (final).csv"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\x\\data.bin", "data.bin"),
        ('say "hi";\r\nX-Evil: 1', "say _hi____X-Evil_ 1"),
        ("naïve.txt", "na_ve.txt"),
        ("...", UUID),
        ("", UUID),
        (None, UUID),
        ("????", UUID),
        ("a" * 300, "a" * 200),
    ],
)
def test_the_attachment_filename_is_the_filename_attribute_made_safe_or_the_uuid(filename, saved_as):
    assert attachment_filename(filename, UUID) == saved_as
