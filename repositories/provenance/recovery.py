"""Recovery on open: finish what a crash interrupted, decided from file names and the
index manifests.

`policies.plan_recovery` decides; this module carries it out on disk and reads what
must be merged again:
  * partial event files and TOCs (a merge that had not committed) are deleted;
  * the journals of a generation whose event file is committed are deleted: the merge
    had finished, and a crash stopped it while it deleted them;
  * a generation whose journals survived without an event file is merged again;
  * TOCs without their event file are deleted;
  * index documents that no shard manifest claims are forgotten;
  * the id generator resumes above every id in any journal or event file.
The repository performs the merges and queues the indexing (see `RecoveredWork`).

The order the index relies on (`index`, rules 1-3): while running, event files are
indexed in increasing first id; recovery keeps that order. It forgets the unclaimed
documents (those of the one indexing a crash interrupted) before anything is indexed
again, then hands over the generations to merge again and the committed files no
manifest claims as one sequence in increasing first id, merges and re-indexings
interleaved; the index thread indexes them in that order, and then the generations
rolled over after the restart, whose ids are higher. So however many times a crash
interrupts recovery's own merges and indexing, every file a manifest claims stays
below the documents the next recovery forgets, and forgetting never touches them.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

import pyarrow as pa

from . import event_file_format as eff
from . import files
from .event_files import EventFileTable
from .index import ShardedIndex
from .journal import read_journal
from .layout import ProvenanceLayout
from .policies import plan_recovery

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RedoMerge:
    """A generation to merge again (then index): its batches and journal paths."""

    first_id: int
    batches: list[pa.RecordBatch]
    journal_paths: list[str]


@dataclass(frozen=True)
class Reindex:
    """A committed event file that no index manifest claims: index it (read from disk)."""

    first_id: int


@dataclass
class RecoveredWork:
    next_id: int
    # In increasing first id, to be carried out in this order (see the module docstring).
    steps: list[RedoMerge | Reindex] = field(default_factory=list)
    report: dict = field(default_factory=dict)


def recover(layout: ProvenanceLayout, table: EventFileTable, index: ShardedIndex) -> RecoveredWork:
    journals = layout.existing_journals()
    partials, tocs = [], set()
    for container in layout.containers:
        directory = layout.events_directory(container)
        for name in files.list_names(directory):
            parsed = eff.parse_name(name)
            if parsed is None:
                continue
            if parsed[2]:
                partials.append(os.path.join(directory, name))
            elif parsed[1] == eff.TOC_SUFFIX:
                tocs.add(parsed[0])
    plan = plan_recovery(
        journal_generations=set(journals),
        event_files=table.ids(),
        indexed_files=index.indexed_files(),
        tocs=tocs,
        partial_paths=partials,
    )
    for path in plan.delete_partials:
        files.delete(path)
    for first_id in plan.delete_orphan_tocs:
        for container in layout.containers:
            files.delete(os.path.join(layout.events_directory(container), eff.toc_name(first_id)))
    for container in layout.containers:
        files.fsync_directory(layout.events_directory(container))
    merged_journals = [path for first_id in plan.delete_merged_journals for path in journals[first_id]]
    for path in merged_journals:
        files.delete(path)
    for directory in {os.path.dirname(path) for path in merged_journals}:
        files.fsync_directory(directory)
    forgotten = index.forget_unclaimed()
    largest = table.largest_id()
    work = RecoveredWork(next_id=0)
    redo = set(plan.redo_merges)
    for first_id in plan.index_order:
        if first_id not in redo:
            work.steps.append(Reindex(first_id))
            continue
        contents = [read_journal(p) for p in sorted(journals[first_id])]
        for c in contents:
            if c.cut_offset is not None:
                log.warning(
                    "journal %s: cut %d bytes at offset %d (%s); those events were never acknowledged",
                    c.path,
                    c.file_length - c.cut_offset,
                    c.cut_offset,
                    c.cut_reason,
                )
            if c.max_id is not None:
                largest = max(largest, c.max_id)
        work.steps.append(RedoMerge(first_id, [b for c in contents for b in c.batches], journals[first_id]))
    work.next_id = largest + 1
    work.report = {
        "deleted_partials": plan.delete_partials,
        "deleted_merged_journals": plan.delete_merged_journals,
        "redone_merges": plan.redo_merges,
        "reindexed_files": plan.index_order,
        "forgotten_documents": forgotten,
        "next_id": work.next_id,
    }
    if plan.redo_merges or plan.delete_partials or plan.delete_merged_journals or forgotten:
        log.info("provenance recovery: %s", work.report)
    return work
