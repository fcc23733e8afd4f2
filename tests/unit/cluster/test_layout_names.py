"""The names of shard directories on HDFS (`ClusterLayout`): one formatter, one parser.
Every name the formatter writes reads back as what it was written for; a name it never
writes is refused, because fencing picks a shard's current directory by these names
and a name taken wrongly would hand a shard another shard's data."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster.core import ownership as own
from cluster.core.incarnation import Incarnation
from cluster.core.layout import ClusterLayout, ShardDirectoryName
from cluster.core.names import node_name_problem
from cluster.failover.fencing import current_directory
from cluster.failover.runtime import ShardCallbacks, ShardHandle, WalOptions
from repositories.storage import LocalStorage

LAYOUT = ClusterLayout("c1", "/custody")
SHARDS = "/custody/c1/shards"

node_names = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,20}", fullmatch=True).filter(
    lambda name: node_name_problem(name) is None
)
epochs = st.integers(min_value=0, max_value=2**63)


@given(node_names, epochs, st.one_of(st.none(), epochs), st.booleans())
def test_every_name_written_reads_back_as_written(node, incarnation_epoch, fenced_epoch, slice_of_it):
    shard = Incarnation(node, incarnation_epoch).id + (".e9s2" if slice_of_it else "")
    name = ClusterLayout.shard_directory_name(shard, fenced_epoch)
    assert ClusterLayout.parse_shard_directory_name(name) == ShardDirectoryName(shard, fenced_epoch)


@pytest.mark.parametrize(
    "shard, epoch, name",
    [
        ("n1-4", None, "n1-4"),
        ("n1-4", 0, "n1-4-fenced-0"),
        ("n1-4", 17, "n1-4-fenced-17"),
        ("n1-4.e5s0", 6, "n1-4.e5s0-fenced-6"),
    ],
)
def test_the_names_are_those_on_hdfs(shard, epoch, name):
    assert ClusterLayout.shard_directory_name(shard, epoch) == name
    if epoch is not None:
        assert LAYOUT.fenced_directory(shard, epoch) == f"{SHARDS}/{name}"


@pytest.mark.parametrize(
    "name",
    [
        "",  # no name at all
        "n1-4/wal",  # more than one path segment
        "-fenced-3",  # a fenced mark without a shard
        "n1-4-fenced-",  # ... without an epoch
        "n1-4-fenced-x",  # ... with an epoch that is no number
        "n1-4-fenced--1",  # ... negative
        "n1-4-fenced-07",  # ... not as `str` writes it
        "n1-4-fenced-\u00b2",  # digits `isdigit` takes and `int` refuses
        "n1-4-fenced-\u0663",  # digits of another script
        "n1-4-fenced-3-fenced-4",  # two marks
    ],
)
def test_a_name_never_written_is_refused(name):
    assert ClusterLayout.parse_shard_directory_name(name) is None


@pytest.mark.parametrize("shard, epoch", [("", 3), ("n1-4/x", 3), ("n1-4-fenced-3", 4), ("n1-4", -1), ("", None)])
def test_no_name_is_written_that_would_not_read_back(shard, epoch):
    with pytest.raises(ValueError, match="no shard directory"):
        ClusterLayout.shard_directory_name(shard, epoch)


@pytest.mark.parametrize(
    "location, below",
    [
        (f"{SHARDS}/n1-4/swap/a.swap", "swap/a.swap"),
        (f"{SHARDS}/n1-4-fenced-5/swap/a.swap", "swap/a.swap"),
        (f"{SHARDS}/n1-4-fenced-5/", ""),
        (f"{SHARDS}/n1-4", None),  # the directory itself, nothing below it
        (f"{SHARDS}/n1-40/swap/a.swap", None),  # another shard whose id starts alike
        (f"{SHARDS}/n1-4.e5s0/swap/a.swap", None),  # a slice of it is another shard
        (f"{SHARDS}/n1-4-fenced-x/swap/a.swap", None),  # no directory of it
        ("/custody/c2/shards/n1-4/swap/a.swap", None),  # another cluster's
    ],
)
def test_a_path_is_found_below_the_shard_under_any_of_its_names(location, below):
    assert LAYOUT.path_in_shard(location, "n1-4") == below


def test_an_adopted_shard_finds_its_swap_files_under_its_fenced_directory():
    ownership = own.reassign(
        own.new_shard("n1-4", "n1-4", 4, at=0.0), "n2-5", expected_epoch=4, at=1.0, reason="n1-4 died"
    )
    handle = ShardHandle(
        ownership, LAYOUT.fenced_directory("n1-4", 5), LAYOUT, LocalStorage(), False, WalOptions(), ShardCallbacks()
    )
    for earlier in (f"{SHARDS}/n1-4", LAYOUT.fenced_directory("n1-4", 3)):
        assert handle.relocate(f"{earlier}/swap/a.swap") == f"{SHARDS}/n1-4-fenced-5/swap/a.swap"
    assert handle.relocate(f"{SHARDS}/n1-40/swap/a.swap") == f"{SHARDS}/n1-40/swap/a.swap"


def test_fencing_takes_no_directory_for_a_fence_whose_name_it_never_wrote(tmp_path):
    layout = ClusterLayout("c1", str(tmp_path))
    storage = LocalStorage()
    for name in ("n1-4", "n1-4-fenced-3", "n1-4-fenced-\u00b2", "n1-4-fenced-07", "n1-40-fenced-9"):
        storage.mkdir(f"{layout.hdfs_shards}/{name}", parents=True, exist_ok=True)
    assert current_directory(storage, layout, "n1-4") == (layout.fenced_directory("n1-4", 3), 3)
