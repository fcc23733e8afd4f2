"""The ownership transitions page: every state of a shard's ownership record and every
transition between them, rendered from the table the code moves and audits records by
(`cluster.core.transitions.TRANSITIONS`), so that a transition cannot be added,
dropped or changed without the page."""

from __future__ import annotations

from cluster.core.transitions import MEANINGS, EpochRule, OwnerRule, ShardState, transition_table_markdown

from . import markdown as md

TITLE = "Ownership transitions"
INTRO = (
    "A shard's ownership record is its ZooKeeper znode `shards/<shard-id>`: an owner (an incarnation), an "
    "epoch and a state. The state says what is being done with the shard's data (its WAL and swap files on "
    "HDFS). An event is one of the functions of `cluster/core/ownership.py`, each a pure function of the "
    "record that returns the next one or refuses: a node's `new_shard` creates its home shard; the leader's "
    "`reassign` and `split` move a dead (or offloaded) incarnation's shard, and `retire_split_parent` ends a "
    "divvied one; the owner's `adopted`, `hold` and `retire` act on a shard at the epoch it was given. The "
    "record is written only by compare-and-set, and only with a transition listed here; the failover drills "
    "and the integration tests audit every shard's history against the same table "
    "(`cluster/core/validation.py`). The epoch is Kafka's leader epoch: a new owner always comes with a higher "
    'one, and a claim from any other owner or epoch is answered "you are dead". How failover uses them: '
    "[The cluster and failover](../concepts/cluster.md)."
)


def meaning_rows(rules) -> list[tuple[str, str]]:
    return [(md.code(rule.value), md.text(MEANINGS[rule])) for rule in rules]


def ownership_page() -> str:
    body = ["## States", ""]
    body += md.table(("state", "meaning"), meaning_rows(ShardState)) + [""]
    body += [
        "## Transitions",
        "",
        "One row per transition: the state before (`(no record)`: a record being created) and after, the event "
        "that makes it, what it does to the epoch and to the owner (below), and when it happens. Any other "
        "change of state is refused.",
        "",
        *transition_table_markdown().splitlines(),
        "",
        "## Epoch and owner",
        "",
    ]
    body += md.table(("epoch", "meaning"), meaning_rows(EpochRule)) + [""]
    body += md.table(("owner", "meaning"), meaning_rows(OwnerRule))
    return md.page(TITLE, INTRO, body)
