"""`stopped_when_quorum_went`: whether a node's events show it stopped processing
when ZooKeeper's quorum went."""

from cluster.drills.faults import stopped_when_quorum_went


def event(name: str, at: float) -> dict:
    return {"event": name, "at": at}


def test_a_pause_or_a_death_after_quorum_went_counts():
    assert stopped_when_quorum_went([event("joined", 1), event("paused", 10.5)], 10)
    assert stopped_when_quorum_went([event("joined", 1), event("dead", 12)], 10)


def test_a_node_paused_by_an_earlier_hiccup_and_never_resumed_counts():
    assert stopped_when_quorum_went([event("paused", 9), event("joined", 1)], 10)


def test_a_node_that_resumed_before_quorum_went_and_never_paused_again_does_not():
    assert not stopped_when_quorum_went([event("paused", 8), event("resumed", 9)], 10)
    assert not stopped_when_quorum_went([event("joined", 1)], 10)
    assert not stopped_when_quorum_went([event("resumed", 11)], 10)
