"""Every committer takes the content claims of a commit whose WAL outcome is unknown
(`flow.session.Committer.hold_claims`): the durable one releases them when the WAL
has settled the transaction (`test_commit_outcomes`); the held one of the stateless
engine, in memory, where no recovery replays anything, releases them at once."""

from __future__ import annotations

from flow.commit import HeldCommitter
from flow.memory_content import InMemoryContentRepository
from flow.queue import FlowFileQueue
from flow.shard import QueueShard


def test_the_held_committer_releases_the_claims_it_is_handed_at_once():
    content = InMemoryContentRepository()
    claims = [content.write_bytes(b"a"), content.write_bytes(b"bc")]
    kept = content.write_bytes(b"d")
    committer = HeldCommitter(QueueShard("stateless", [FlowFileQueue("q")]), content)

    committer.hold_claims(iter(claims))

    assert [content.claimant_count(claim) for claim in claims] == [0, 0]
    assert content.claimant_count(kept) == 1
