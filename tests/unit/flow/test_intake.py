"""The intake state of sources: its layout (every entry, every refusal), the pure
decisions, and finishing a taken file on disk."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flow.processors.intake import completion, ledger
from flow.processors.intake.format import (
    DELETE,
    MAX_KEY_LENGTH,
    MOVE,
    CommittedKey,
    FileIdentity,
    IntakeState,
    IntakeStateError,
    ListingMark,
    TakenFile,
    pack,
    payload_fingerprint,
    unpack,
    valid_key,
)

# -- the layout -------------------------------------------------------------------------

identities = st.builds(FileIdentity, st.integers(0, 2**64 - 1), st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1))
paths = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), min_size=1, max_size=40)
keys = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=MAX_KEY_LENGTH)
fingerprints = st.binary(min_size=0, max_size=64).map(lambda body: payload_fingerprint(body, {}))
committed_keys = st.builds(CommittedKey, st.integers(0, 2**62), st.one_of(st.none(), fingerprints))


@st.composite
def states(draw):
    taken = {}
    for identity in draw(st.lists(identities, max_size=5, unique=True)):
        if draw(st.booleans()):
            taken[identity] = TakenFile(identity, draw(paths))
        else:
            taken[identity] = TakenFile(identity, draw(paths), MOVE, draw(paths))
    listing = ListingMark()
    if draw(st.booleans()):
        listing = ListingMark(draw(st.integers(0, 2**62)), frozenset(draw(st.lists(paths, max_size=4))))
    recent = draw(st.dictionaries(keys, committed_keys, max_size=5))
    return IntakeState(taken, listing, recent)


@given(states())
def test_every_state_reads_back_as_written(state):
    packed = pack(state)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in packed.items())
    assert unpack(packed) == state


def test_the_entries_are_as_documented():
    identity = FileIdentity(12, 1_700_000_000_123_456_789, 5)
    state = IntakeState(
        {
            identity: TakenFile(identity, "/in/a b.txt"),
            FileIdentity(13, 1, 0): TakenFile(FileIdentity(13, 1, 0), "/in/c", MOVE, "/done"),
        },
        ListingMark(1700, frozenset({"/in/x"})),
        {"order-7": CommittedKey(1_700_000_000_000, "Xo2nUdtlBNA"), "from-version-1": CommittedKey(1_600_000_000_000)},
    )
    assert pack(state) == {
        "intake.layout": "2",
        "taken:12:1700000000123456789:5": "delete\0/in/a b.txt",
        "taken:13:1:0": "move\0/in/c\0/done",
        "listed.timestamp_ms": "1700",
        "listed:/in/x": "",
        "key:order-7": "1700000000000:Xo2nUdtlBNA",
        "key:from-version-1": "1600000000000",
    }
    assert pack(IntakeState()) == {"intake.layout": "1"}  # the oldest version that holds it
    assert pack(IntakeState(keys={"from-version-1": CommittedKey(1)})) == {
        "intake.layout": "1",
        "key:from-version-1": "1",
    }


def test_a_payloads_fingerprint_is_as_documented_and_never_changes():
    # A retry after an upgrade must find the fingerprint its first request left: these
    # values are the layout's, computed by hand from its description.
    import base64
    import hashlib
    import struct

    attributes = {"mime.type": "text/plain", "source": "é"}
    material = b"custody.listenhttp.fingerprint.1\0"
    for name in ("mime.type", "source"):
        for text in (name.encode(), attributes[name].encode("utf-8")):
            material += struct.pack(">I", len(text)) + text
    material += struct.pack(">Q", 4) + b"body"
    expected = base64.urlsafe_b64encode(hashlib.sha256(material).digest()[:8]).rstrip(b"=").decode()
    assert payload_fingerprint(b"body", attributes) == expected == "aqyt7RKBh10"
    assert payload_fingerprint(b"", {}) == "Z2ihGH3wyE4"
    assert payload_fingerprint(b"body", {"source": "é"}) != expected  # an attribute less
    assert payload_fingerprint(b"bodz", attributes) != expected


def test_version_1_keys_are_read_without_a_fingerprint_and_kept_beside_new_ones():
    state = unpack({"intake.layout": "1", "key:order-7": "1700000000000"})
    assert state == IntakeState(keys={"order-7": CommittedKey(1_700_000_000_000)})
    added = state.replace(keys={**state.keys, "order-8": CommittedKey(1_700_000_000_001, "Xo2nUdtlBNA")})
    assert pack(added) == {
        "intake.layout": "2",
        "key:order-7": "1700000000000",
        "key:order-8": "1700000000001:Xo2nUdtlBNA",
    }
    assert unpack(pack(added)) == added


def test_list_files_state_before_the_layout_is_read_as_version_0():
    assert unpack({"timestamp": "1700", "names": "/in/a\0/in/b"}) == IntakeState(
        listing=ListingMark(1700, frozenset({"/in/a", "/in/b"}))
    )
    assert unpack({}) == IntakeState()


@pytest.mark.parametrize(
    "state, complaint",
    [
        ({"intake.layout": "3"}, "layout version '3'"),
        ({"intake.layout": "1", "taken:1:2": "delete\0/a"}, "not taken:<inode>:<mtime_ns>:<size>"),
        ({"intake.layout": "1", "taken:01:2:3": "delete\0/a"}, "not taken:<inode>:<mtime_ns>:<size>"),
        ({"intake.layout": "1", "taken:1:2:3": "delete"}, "neither delete NUL path"),
        ({"intake.layout": "1", "taken:1:2:3": "delete\0"}, "neither delete NUL path"),
        ({"intake.layout": "1", "taken:1:2:3": "move\0/a"}, "neither delete NUL path"),
        ({"intake.layout": "1", "taken:1:2:3": "shred\0/a"}, "neither delete NUL path"),
        ({"intake.layout": "1", "listed.timestamp_ms": "-5"}, "not a decimal number"),
        ({"intake.layout": "1", "listed:/a": ""}, "listed paths without"),
        ({"intake.layout": "1", "listed.timestamp_ms": "1", "listed:/a": "x"}, "a listed path with a value"),
        ({"intake.layout": "1", "key:k": "soon"}, "not a decimal number"),
        ({"intake.layout": "1", "key:with space ": "1"}, "not an idempotency key"),
        ({"intake.layout": "1", "key:k": "1:Xo2nUdtlBNA"}, "not a decimal number"),  # no fingerprint in version 1
        ({"intake.layout": "2", "key:k": "1:Xo2nUdtlBN"}, "not <ms> or <ms>:<fingerprint>"),
        ({"intake.layout": "2", "key:k": "1:"}, "not <ms> or <ms>:<fingerprint>"),
        ({"intake.layout": "2", "key:k": "01:Xo2nUdtlBNA"}, "not <ms> or <ms>:<fingerprint>"),
        ({"intake.layout": "1", "next": "4"}, "of no kind of layout version 1"),
        ({"intake.layout": "2", "next": "4"}, "of no kind of layout version 2"),
        ({"next": "4"}, "not an intake state"),
        ({"timestamp": "yesterday"}, "not a decimal number"),
    ],
)
def test_a_state_that_cannot_be_read_whole_is_refused_naming_the_processor_and_the_entry(state, complaint):
    with pytest.raises(
        IntakeStateError,
        match="^get: its intake state cannot be read: .*" + complaint.replace("(", r"\(").replace(")", r"\)"),
    ):
        unpack(state, "get")


def test_idempotency_keys_are_printable_ascii_of_bounded_length():
    assert valid_key("a") and valid_key("x" * MAX_KEY_LENGTH) and valid_key("order 7/retry")
    assert not valid_key("") and not valid_key("x" * (MAX_KEY_LENGTH + 1)) and not valid_key(" padded")
    assert not valid_key("tab\there") and not valid_key("é")


# -- the decisions ------------------------------------------------------------------------

A, B, C, D = (FileIdentity(n, 10 * n, n) for n in range(1, 5))


def taken(*identities):
    return {identity: TakenFile(identity, f"/in/{identity.inode}") for identity in identities}


def test_choose_files_never_a_recorded_or_claimed_file_and_at_most_the_limit():
    found = [(A, "a"), (B, "b"), (B, "b again"), (C, "c"), (D, "d")]
    state = IntakeState(taken(A))
    assert ledger.choose_files(found, state, {C}, limit=5) == [(B, "b"), (D, "d")]
    assert ledger.choose_files(found, state, set(), limit=1) == [(B, "b")]


def test_the_committed_state_prunes_what_is_durably_finished_and_records_what_is_taken():
    committed = IntakeState(taken(A, B), ListingMark(5), {"k": CommittedKey(1)})
    state, pruned = ledger.state_after_commit(committed, taken(C).values(), completed={A, D})
    assert state == IntakeState(taken(B, C), ListingMark(5), {"k": CommittedKey(1)}) and pruned == {A}


def test_orphans_are_the_records_no_session_holds_or_finished():
    assert ledger.orphans(IntakeState(taken(A, B, C)), claimed={B}, completed={C}) == [taken(A)[A]]


def test_list_new_lists_each_file_once_per_modification():
    listed, mark = ledger.list_new([("/a", 100), ("/b", 100), ("/c", 90)], ListingMark())
    assert sorted(listed) == ["/a", "/b", "/c"] and mark == ListingMark(100, frozenset({"/a", "/b"}))
    assert ledger.list_new([("/a", 100), ("/b", 100), ("/c", 90)], mark) == ([], mark)
    listed, mark = ledger.list_new([("/a", 100), ("/b", 100), ("/d", 100)], mark)  # the same millisecond
    assert listed == ["/d"] and mark == ListingMark(100, frozenset({"/a", "/b", "/d"}))
    listed, mark = ledger.list_new([("/a", 150), ("/b", 100)], mark)  # /a modified again
    assert listed == ["/a"] and mark == ListingMark(150, frozenset({"/a"}))


F1, F2 = payload_fingerprint(b"one", {}), payload_fingerprint(b"two", {})


def test_recent_keys_are_bounded_by_age_and_by_count_the_oldest_going_first():
    keys = {"old": CommittedKey(1_000, F1), "mid": CommittedKey(5_000), "new": CommittedKey(9_000, F2)}
    assert ledger.recent_keys(keys, now_ms=10_000, max_age_ms=6_000) == {"mid": keys["mid"], "new": keys["new"]}
    assert ledger.remember_keys(keys, {"x": F1, "y": F2}, 10_000, max_count=3, max_age_ms=60_000) == {
        "new": keys["new"],
        "x": CommittedKey(10_000, F1),
        "y": CommittedKey(10_000, F2),
    }
    assert ledger.remember_keys(keys, {}, 10_000, max_count=10, max_age_ms=6_000) == {
        "mid": keys["mid"],
        "new": keys["new"],
    }


def test_a_key_is_new_replayed_with_its_payload_or_reused_with_another():
    committed = {"k": CommittedKey(1, F1), "from-version-1": CommittedKey(1)}
    assert ledger.key_decision("other", F1, committed) == ledger.NEW
    assert ledger.key_decision("k", F1, committed) == ledger.REPLAY
    assert ledger.key_decision("k", F2, committed) == ledger.REUSED
    # No fingerprint known: answered as version 1 answered it, whatever the payload.
    assert ledger.key_decision("from-version-1", F2, committed) == ledger.REPLAY


def test_hand_over_keeps_every_record_the_later_mark_and_each_key_at_its_latest():
    previous = IntakeState(
        taken(A, B), ListingMark(200, frozenset({"/p"})), {"k": CommittedKey(5, F1), "old": CommittedKey(1)}
    )
    current = IntakeState(
        taken(C), ListingMark(100, frozenset({"/c"})), {"k": CommittedKey(7, F2), "new": CommittedKey(9, F1)}
    )
    assert ledger.hand_over(previous, current) == IntakeState(
        taken(A, B, C),
        ListingMark(200, frozenset({"/p"})),
        {"k": CommittedKey(7, F2), "old": CommittedKey(1), "new": CommittedKey(9, F1)},
    )
    same_time = IntakeState(listing=ListingMark(200, frozenset({"/c"})))
    assert ledger.hand_over(previous, same_time).listing == ListingMark(200, frozenset({"/p", "/c"}))


# -- finishing a taken file -----------------------------------------------------------------


def test_finish_deletes_or_moves_the_file_taken_and_nothing_else(tmp_path):
    source, done = tmp_path / "in", tmp_path / "done"
    source.mkdir()
    for name in ("a", "b", "c"):
        (source / name).write_bytes(name.encode())
    a, b, c = (completion.current_identity(str(source / name)) for name in ("a", "b", "c"))
    replaced = source / "b.new"
    replaced.write_bytes(b"a new b")
    os.replace(replaced, source / "b")  # a new file under the name taken
    records = [
        TakenFile(a, str(source / "a")),
        TakenFile(b, str(source / "b")),
        TakenFile(c, str(source / "c"), MOVE, str(done)),
        TakenFile(FileIdentity(1, 1, 1), str(source / "gone")),
    ]
    finished = completion.finish(records)
    assert finished.completed == {a, b, c, FileIdentity(1, 1, 1)} and finished.failed == []
    assert sorted(os.listdir(source)) == ["b"] and (source / "b").read_bytes() == b"a new b"
    assert os.listdir(done) == ["c"] and (done / "c").read_bytes() == b"c"
    assert completion.finish(records).completed == {a, b, c, FileIdentity(1, 1, 1)}  # again: nothing left to do


def test_a_finish_that_fails_is_reported_not_completed(tmp_path):
    (tmp_path / "a").write_bytes(b"a")
    (tmp_path / "not-a-directory").write_bytes(b"")
    identity = completion.current_identity(str(tmp_path / "a"))
    record = TakenFile(identity, str(tmp_path / "a"), MOVE, str(tmp_path / "not-a-directory"))
    finished = completion.finish([record])
    assert finished.completed == set() and [r for r, _ in finished.failed] == [record]
    assert (tmp_path / "a").exists()
    assert DELETE == TakenFile(identity, "/x").action
