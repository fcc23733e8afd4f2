"""Node names: what the pattern refuses (each would let a name pass for a derived
name, or leave its path segment), and what it keeps taking."""

from __future__ import annotations

import pytest

from cluster.core.incarnation import Incarnation
from cluster.core.layout import FENCED_MARK
from cluster.core.names import check_node_name, node_name_problem


@pytest.mark.parametrize("name", ["n1", "custody1", "spark-solo", "node_a", "A", "x" * 64, "n1-a2"])
def test_names_people_use_are_taken(name):
    assert node_name_problem(name) is None and check_node_name(name) == name


@pytest.mark.parametrize(
    "name, why",
    [
        ("", "empty"),
        (None, "empty"),
        ("x" * 65, "longer than 64"),
        ("a/b", "character"),
        ("../etc", "character"),
        ("a b", "character"),
        ("n1.e3s0", "character"),
        ("-n1", "start"),
        ("é", "character"),
        ("n1\n", "character"),
        ("n-1", "-<digits>"),
        ("n1-20", "-<digits>"),
        ("n1-20-fenced", "-fenced"),
        ("a-fenced-x", "-fenced"),
    ],
)
def test_a_name_that_could_pass_for_another_is_refused(name, why):
    problem = node_name_problem(name)
    assert problem is not None and why in problem.replace("start with", "start"), problem
    with pytest.raises(ValueError, match="node name"):
        check_node_name(name)


def test_no_incarnation_of_a_valid_name_looks_fenced_or_like_another_nodes():
    # The collision a review found: fencing shard n1-20 looked for "n1-20-fenced-*", which
    # a node named n1-20-fenced's shards matched.
    shard = Incarnation("n1", 20).id
    for name in ("n1", "n1-a", "n1_20", "n1-20x"):
        assert node_name_problem(name) is None
        assert not Incarnation(name, 7).id.startswith(shard + FENCED_MARK)
        assert Incarnation.parse(Incarnation(name, 7).id) == Incarnation(name, 7)
