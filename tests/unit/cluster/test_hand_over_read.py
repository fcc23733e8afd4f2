"""The hand-over reads an earlier shard's WAL while its adopter may checkpoint it: a
read that a checkpoint overlapped is refused (and retried), never taken for the state."""

import pytest

from cluster.failover import kept_states
from cluster.failover.kept_states import WalChanged, earlier_states
from flow.shard import QueueShard, open_shard
from repositories.flowfile import Put
from repositories.storage import LocalStorage


def shard_with_state(tmp_path, state):
    storage = LocalStorage()
    shard = open_shard(storage, str(tmp_path / "n1-4"), "n1-4", [], partitions=1, checkpoint_interval=None)
    shard.recover()
    shard.wal.update([Put(QueueShard.state_record("get", state, 1).to_record())])
    return storage, shard


def test_the_state_of_an_earlier_shard_is_read_from_its_wal(tmp_path):
    storage, shard = shard_with_state(tmp_path, {"taken": "a,b"})
    assert earlier_states(storage, str(tmp_path / "n1-4")) == {"get": {"taken": "a,b"}}
    shard.wal.close()


def test_a_checkpoint_during_the_read_makes_the_reader_read_again(tmp_path, monkeypatch):
    storage, shard = shard_with_state(tmp_path, {"taken": "a,b"})
    read = kept_states.read_state

    def read_while_the_adopter_checkpoints(*args, **kwargs):
        state = read(*args, **kwargs)
        shard.wal.checkpoint()  # a new snapshot, and the journals begun again
        return state

    monkeypatch.setattr(kept_states, "read_state", read_while_the_adopter_checkpoints)
    with pytest.raises(WalChanged, match="checkpointed while it was read"):
        earlier_states(storage, str(tmp_path / "n1-4"))
    monkeypatch.setattr(kept_states, "read_state", read)
    assert earlier_states(storage, str(tmp_path / "n1-4")) == {"get": {"taken": "a,b"}}
    shard.wal.close()
