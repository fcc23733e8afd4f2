"""A shard history entry's `step`: written and read as a field of its own, and derived
from the reason's tag only for entries the previous release wrote (without the field),
as `tests/data/shard-history-v0` holds one."""

from __future__ import annotations

import json
from pathlib import Path

from cluster.core import ownership as own
from cluster.core.ownership import HistoryEntry, ShardOwnership, ShardState
from cluster.core.story import tag

OLD_SHARD = Path(__file__).resolve().parents[2] / "data" / "shard-history-v0" / "held-shard.json"
STEP = "n3-17:failover/move-n3-17@17"


def test_a_shard_the_previous_release_wrote_is_read_with_the_steps_its_reasons_tag():
    data = OLD_SHARD.read_bytes()
    assert all("step" not in entry for entry in json.loads(data)["history"])  # the old format indeed
    shard = ShardOwnership.from_json(data)
    assert (shard.shard, shard.owner, shard.epoch, shard.state) == ("n3-17", "n1-18", 18, ShardState.HELD)
    assert [entry.step for entry in shard.history] == [None, STEP, STEP]
    assert shard.history[-1].reason == f"held by n1-18: WalDamagedError: journal-1 is missing {tag(STEP)}"
    assert shard.step == STEP  # its adopter still finds the move that gave it the shard


def test_an_old_shard_written_again_keeps_its_steps_as_fields_and_its_reasons_as_they_were():
    old = ShardOwnership.from_json(OLD_SHARD.read_bytes())
    adopted = own.adopted(old, "n1-18", 18, at=1764326410.0)
    body = json.loads(adopted.to_json())
    assert [entry["step"] for entry in body["history"]] == [None, STEP, STEP, None]
    assert [entry["reason"] for entry in body["history"][:3]] == [entry.reason for entry in old.history]
    assert ShardOwnership.from_json(adopted.to_json()) == adopted
    assert adopted.step == STEP


def test_a_new_entry_says_its_step_in_its_field_and_its_reason_is_never_parsed():
    moved = own.reassign(
        own.new_shard("n3-17", "n3-17", 17, at=1.0), "n1-18", expected_epoch=17, at=2.0, reason="n3-17 died", step=STEP
    )
    written = json.loads(moved.to_json())["history"][-1]
    assert written["step"] == STEP and written["reason"] == f"n3-17 died {tag(STEP)}"
    # An entry of this release without a step stays without one, whatever its reason says.
    entry = HistoryEntry.from_dict(
        {
            "epoch": 3,
            "owner": "a-3",
            "state": "adopting",
            "at": 1.0,
            "reason": "an operator's note [a-2:failover/move-a-2@2]",
            "step": None,
        }
    )
    assert entry.step is None
