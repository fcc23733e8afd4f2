"""Every store's fault seams refuse a misspelt seam, however a test supplies them:
by keyword, by mapping, by a subclass method, or as a plain object given to the store."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from cluster.failover.fencing import FenceHooks
from cluster.failover.leader import LeaderHooks
from flow.commit import CommitHooks
from repositories.content import ContentHooks
from repositories.flowfile import Delete, WalHooks, WriteAheadLog
from repositories.provenance import ProvenanceHooks, ProvenanceRepository
from repositories.provenance import hooks as provenance_seams
from repositories.provenance.hooks import RunMergeHooks
from repositories.seams import FaultSeams, UnknownSeam
from repositories.storage import LocalStorage
from repositories.swap import SwapHooks, SwapStore

from .provenance.conftest import make_config

SEAM_SETS = [WalHooks, SwapHooks, ProvenanceHooks, RunMergeHooks, ContentHooks, CommitHooks, FenceHooks, LeaderHooks]


def test_every_set_of_fault_seams_of_the_product_is_checked_here():
    for package in ("repositories", "replication", "flow", "cluster"):
        root = importlib.import_module(package)
        for module in pkgutil.walk_packages(root.__path__, f"{package}."):
            if ".services" not in module.name and ".commands" not in module.name:
                importlib.import_module(module.name)
    declared = {cls for cls in FaultSeams.__subclasses__() if cls.__module__.split(".")[0] != "tests"}
    assert declared == set(SEAM_SETS), "add new sets of seams to SEAM_SETS"


def nothing(*args, **kwargs) -> None:
    pass


@pytest.mark.parametrize("seams", SEAM_SETS)
def test_a_misspelt_keyword_raises(seams):
    with pytest.raises(UnknownSeam, match="before_synk"):
        seams(before_synk=nothing)


@pytest.mark.parametrize("seams", SEAM_SETS)
def test_a_misspelt_name_in_a_mapping_raises(seams):
    with pytest.raises(UnknownSeam, match="before_synk"):
        seams({"before_synk": nothing})


@pytest.mark.parametrize("seams", SEAM_SETS)
def test_a_misspelt_method_of_a_subclass_raises(seams):
    with pytest.raises(UnknownSeam, match="before_synk"):
        type("Misspelt", (seams,), {"before_synk": nothing})


class MisspeltDuck:
    """A test's small recorder whose one method names no seam."""

    def before_synk(self, path: str) -> None:
        pass


def test_a_duck_with_a_misspelt_method_given_to_the_wal_raises(tmp_path):
    with pytest.raises(UnknownSeam, match="before_synk"):
        WriteAheadLog(LocalStorage(), str(tmp_path / "wal"), hooks=MisspeltDuck())


def test_a_duck_with_a_misspelt_method_given_to_the_swap_store_raises(tmp_path):
    with pytest.raises(UnknownSeam, match="before_synk"):
        SwapStore(LocalStorage(), str(tmp_path / "swap"), hooks=MisspeltDuck())


def test_a_duck_with_a_misspelt_method_given_to_the_provenance_repository_raises(tmp_path):
    with pytest.raises(UnknownSeam, match="before_synk"):
        ProvenanceRepository(make_config(tmp_path), hooks=MisspeltDuck())


def test_a_duck_whose_methods_are_seams_is_accepted_and_called(tmp_path):
    calls = []

    class Recorder:
        def before_sync(self, path: str) -> None:
            calls.append(path)

    wal = WriteAheadLog(LocalStorage(), str(tmp_path / "wal"), partitions=1, checkpoint_interval=None, hooks=Recorder())
    wal.recover()
    wal.update([Delete("nobody")])
    wal.close()
    assert calls


def test_the_provenance_seam_constants_are_the_method_names():
    assert provenance_seams.SEAMS == (
        "rollover_before_merge_queue",
        "merge_journals_read",
        "merge_before_commit",
        "merge_toc_committed",
        "merge_before_journal_delete",
        "merge_journal_deleted",
        "index_before_commit",
        "index_before_manifest",
    )
    assert ProvenanceHooks.seam_names() == frozenset(provenance_seams.SEAMS)
