"""What a decommissioned node's sources took: split into what a survivor can use (its
ListenHTTP's idempotency keys) and what names files on its machine (dropped, with a
warning that says which); and the survivor's merge, made with the processor stopped."""

import logging

import pytest

from cluster.failover.kept_states import HandOverPostponed, hands_over, sources_states, split_state
from cluster.node.hand_over import take_over_running
from flow.errors import ProcessorStateError
from flow.processors.files import GetFile
from flow.processors.http import ListenHTTP
from flow.processors.intake import CommittedKey, FileIdentity, IntakeState, ListingMark, TakenFile, pack, unpack
from flow.shard import open_shard
from repositories.storage import LocalStorage

KEY = CommittedKey(1_700_000_000_000, "AAAAAAAAAAA")


def taken(*paths):
    return {FileIdentity(i + 1, 10, 3): TakenFile(FileIdentity(i + 1, 10, 3), path) for i, path in enumerate(paths)}


def test_idempotency_keys_go_to_a_survivor_and_nothing_is_dropped():
    split = split_state("listen", pack(IntakeState(keys={"k1": KEY, "k2": KEY})), "n3")
    assert split.dropped is None and split.keys == 2
    assert unpack(split.portable) == IntakeState(keys={"k1": KEY, "k2": KEY})


def test_files_taken_on_the_nodes_machine_are_dropped_and_named():
    paths = [f"/in/{i}" for i in range(7)]
    split = split_state("get", pack(IntakeState(taken=taken(*paths))), "n3")
    assert split.portable is None and split.keys == 0
    assert "7 file(s) it took on n3's machine" in split.dropped
    assert "/in/0, /in/1, /in/2, /in/3, /in/4 and 2 more" in split.dropped
    assert "if n3 is connected again, it takes them again" in split.dropped


def test_a_listing_mark_is_the_machines_and_a_mixed_state_is_split():
    state = pack(IntakeState(listing=ListingMark(1_700_000_000_000, frozenset({"/in/a"})), keys={"k1": KEY}))
    split = split_state("list", state, "n3")
    assert "its listing mark on n3's machine (files modified up to 2023-11-14 22:13:20 UTC" in split.dropped
    assert unpack(split.portable) == IntakeState(keys={"k1": KEY})


def test_a_state_that_is_no_intake_state_is_dropped_whole_and_an_empty_one_is_nothing():
    split = split_state("custom", {"counter": "12"}, "n3")
    assert split.portable is None and "dropped whole" in split.dropped
    for empty in ({}, pack(IntakeState())):
        assert split_state("get", empty, "n3") == split_state("get", {}, "n3")
        assert (split_state("get", empty, "n3").portable, split_state("get", empty, "n3").dropped) == (None, None)


# -- the survivor's merge -------------------------------------------------------------------------
class Engine:
    """The engine calls the merge makes: each processor's type and state, stop and start."""

    def __init__(self, states, *, held=False, start_fails=False):
        self.types = {"listen": "ListenHTTP", "get": "GetFile"}
        self.states = dict(states)
        self.sources_held = held
        self.start_fails = start_fails
        self.calls = []

    def status(self):
        return {"processors": {pid: {"type": kind, "state": self.states[pid]} for pid, kind in self.types.items()}}

    def stop_processor(self, processor, timeout):
        self.calls.append(("stop", processor))
        self.states[processor] = "STOPPED"
        return "STOPPED"

    def start_processor(self, processor):
        self.calls.append(("start", processor))
        if self.start_fails:
            raise ProcessorStateError(f"{processor} could not be scheduled: port taken")
        self.states[processor] = "RUNNING"
        return "RUNNING"


@pytest.fixture
def shard(tmp_path):
    made = open_shard(LocalStorage(), str(tmp_path / "n1-20"), "n1-20", [], partitions=1, checkpoint_interval=None)
    made.recover()
    own = pack(IntakeState(keys={"mine": CommittedKey(1_700_000_100_000, "BBBBBBBBBBB")}))
    made.wal.update(made.state_updates("listen", own, 1))
    made.set_state_committed("listen", own)
    yield made
    made.wal.close()


PROCESSORS = {"listen": ListenHTTP, "get": GetFile}
HANDED = {"listen": ("ListenHTTP", pack(IntakeState(keys={"k1": KEY})))}


def test_the_keys_are_merged_while_the_processor_is_stopped_and_it_runs_again_after(shard, tmp_path):
    engine = Engine({"listen": "RUNNING", "get": "RUNNING"})
    seen_while_writing = []
    update = shard.wal.update
    shard.wal.update = lambda updates: (seen_while_writing.append(engine.states["listen"]), update(updates))[1]
    outcomes = take_over_running(engine, shard, PROCESSORS, HANDED, origin="n3-17", clock=iter([1.0, 1.25]).__next__)
    assert outcomes == {"listen": (True, "merged into its state on shard n1-20 (stopped for 250 ms)")}
    assert engine.calls == [("stop", "listen"), ("start", "listen")] and seen_while_writing == ["STOPPED"]
    assert set(unpack(shard.get_state("listen")).keys) == {"mine", "k1"}
    shard.wal.close()
    again = open_shard(LocalStorage(), str(tmp_path / "n1-20"), "n1-20", [], partitions=1, checkpoint_interval=None)
    again.recover()
    assert set(unpack(again.get_state("listen")).keys) == {"mine", "k1"}  # durable: in the WAL
    again.wal.close()


def test_a_processor_an_operator_stopped_takes_them_and_stays_stopped(shard):
    engine = Engine({"listen": "STOPPED", "get": "RUNNING"})
    assert take_over_running(engine, shard, PROCESSORS, HANDED, origin="n3-17")["listen"][0]
    assert engine.calls == [] and set(unpack(shard.get_state("listen")).keys) == {"mine", "k1"}


def test_a_processor_an_operator_stopped_during_the_merge_is_not_started_again(shard):
    engine = Engine({"listen": "RUNNING", "get": "RUNNING"})
    assert take_over_running(
        engine, shard, PROCESSORS, HANDED, origin="n3-17", operator_stopped=lambda: frozenset({"listen"})
    )["listen"][0]
    assert engine.calls == [("stop", "listen")] and engine.states["listen"] == "STOPPED"


def test_no_processor_of_that_id_and_type_means_dropped_and_nothing_stopped(shard):
    engine = Engine({"listen": "RUNNING", "get": "RUNNING"})
    outcomes = take_over_running(
        engine,
        shard,
        PROCESSORS,
        {"listen": ("GetFile", HANDED["listen"][1]), "other": ("ListenHTTP", HANDED["listen"][1])},
        origin="n3-17",
    )
    assert outcomes == {
        "listen": (False, "shard n1-20 runs no GetFile 'listen' that takes state over"),
        "other": (False, "shard n1-20 runs no ListenHTTP 'other' that takes state over"),
    }
    assert engine.calls == [] and set(unpack(shard.get_state("listen")).keys) == {"mine"}


def test_it_waits_while_the_survivors_own_hand_over_runs_or_a_processor_stops(shard):
    with pytest.raises(HandOverPostponed, match="has not taken its own earlier incarnations' state over yet"):
        take_over_running(
            Engine({"listen": "RUNNING", "get": "RUNNING"}, held=True), shard, PROCESSORS, HANDED, origin="n3-17"
        )
    with pytest.raises(HandOverPostponed, match="listen of shard n1-20 is stopping"):
        take_over_running(Engine({"listen": "STOPPING", "get": "RUNNING"}), shard, PROCESSORS, HANDED, origin="n3-17")
    assert set(unpack(shard.get_state("listen")).keys) == {"mine"}


def test_a_processor_that_cannot_start_again_stays_stopped_and_the_log_says_how_to_start_it(shard, caplog):
    engine = Engine({"listen": "RUNNING", "get": "RUNNING"}, start_fails=True)
    with caplog.at_level(logging.ERROR):
        assert take_over_running(engine, shard, PROCESSORS, HANDED, origin="n3-17")["listen"][0]
    assert "could not start again and stays STOPPED" in caplog.text
    assert "POST /api/v1/processors/n1-20/listen/start" in caplog.text


def test_only_the_states_of_processors_that_hand_theirs_over_are_the_sources():
    states = {"get": {"taken:1:2:3": "delete\0/in/a"}, "generate": {"count": "12"}, "plugin": {"x": "1"}}
    types = {"get": "GetFile", "generate": "GenerateFlowFile", "plugin": "SomePackagesSource"}
    assert set(sources_states(states, types)) == {"get", "plugin"}  # a type it does not ship is judged by its state
    assert hands_over("ListenHTTP") and hands_over("ListFile") and hands_over(None)
    assert not hands_over("PutFile")
