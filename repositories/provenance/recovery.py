"""Recovery on open: finish what a crash interrupted, decided from file names alone.

`policies.plan_recovery` decides; this module carries it out on disk and reads what
must be merged again:
  * partial event files and TOCs (a merge that had not committed) are deleted;
  * a generation whose journals survived is merged again, after its event file, if
    one was committed, is discarded: where its merge stopped cannot be known;
  * TOCs without their event file are deleted;
  * index documents beyond the last indexed file are forgotten, and committed files
    the index does not list are indexed again;
  * the id generator resumes above every id in any journal or event file.
The repository performs the merges and queues the indexing (see `RecoveredWork`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

import pyarrow as pa

from . import event_file_format as eff, files
from .event_files import EventFileTable
from .index import ShardedIndex
from .journal import read_journal
from .layout import ProvenanceLayout
from .policies import plan_recovery

log = logging.getLogger(__name__)


@dataclass
class RecoveredWork:
    next_id: int
    # Generations to merge again, in order: (first id, their batches, journal paths).
    merges: list[tuple[int, list[pa.RecordBatch], list[str]]] = field(default_factory=list)
    # Committed event files to index again, after the merges.
    reindex: list[int] = field(default_factory=list)
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
    plan = plan_recovery(journal_generations=set(journals), event_files=table.ids(), tocs=tocs,
                         partial_paths=partials)
    for path in plan.delete_partials:
        files.delete(path)
    for first_id in plan.discard_event_files:
        entry = table.remove(first_id)
        if entry is not None:
            files.delete(entry.path)
    for first_id in plan.delete_orphan_tocs:
        for container in layout.containers:
            files.delete(os.path.join(layout.events_directory(container), eff.toc_name(first_id)))
    for container in layout.containers:
        files.fsync_directory(layout.events_directory(container))
    # Index documents that no manifest claims belong to interrupted indexing or to
    # discarded files; they are all at the end of the active shard.
    event_ids = table.ids()
    indexed = index.indexed_files()
    unindexed = sorted((event_ids - indexed) | set(plan.redo_merges))
    if unindexed:
        index.forget_from(unindexed[0])
    largest = table.largest_id()
    work = RecoveredWork(next_id=0)
    for first_id in plan.redo_merges:
        contents = [read_journal(p) for p in sorted(journals[first_id])]
        for c in contents:
            if c.cut_offset is not None:
                log.warning("journal %s: cut %d bytes at offset %d (%s); those events were never "
                            "acknowledged", c.path, c.file_length - c.cut_offset, c.cut_offset, c.cut_reason)
            if c.max_id is not None:
                largest = max(largest, c.max_id)
        work.merges.append((first_id, [b for c in contents for b in c.batches], journals[first_id]))
    work.next_id = largest + 1
    # Files committed but not indexed (a crash during indexing): index them again.
    work.reindex = [first_id for first_id in sorted(event_ids - indexed) if first_id not in plan.redo_merges]
    work.report = {
        "deleted_partials": plan.delete_partials,
        "redone_merges": plan.redo_merges,
        "discarded_event_files": plan.discard_event_files,
        "reindexed_files": unindexed,
        "next_id": work.next_id,
    }
    if plan.redo_merges or plan.delete_partials:
        log.info("provenance recovery: %s", work.report)
    return work
