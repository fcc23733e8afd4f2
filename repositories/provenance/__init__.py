"""The provenance repository (NiFi's design): the chain of custody of every FlowFile.

Events go to several journals per container, uncompressed and unindexed; a rollover
merges them into one event file per generation, in id order, compressed in ~1 MB
blocks with a table of contents; a background thread indexes each file into
size-capped shards of sorted runs. Queries by indexed field and time range, retrieval
by id and in sequence, lineage, age-off by age and size, and recovery of an
interrupted merge.

Formats: `journal_format` (journals), `event_file_format` (event files and TOCs),
`event_batch.SCHEMA` (the Arrow schema inside both), `run_format` (sorted runs).

The index: sorted runs, not a tantivy document per event. One indexing thread had
to keep up with ingest, and tantivy cost it about 13 us/event (adding documents and
committing, mostly the unique uuid and filename terms), which topped out near 75,000
events/s. Now each event file gives three Arrow IPC runs, built in Arrow's C++
kernels and numpy (`sorted_runs`): uuid keys and filenames, each sorted by (key, id),
looked up by binary search; and the low-cardinality fields (type, component,
relationship) with id and time, dictionary-encoded in id order, filtered in numpy.
Runs of a shard are merged LSM-style, `run_fan_in` (8) of one level into one of the
next. tantivy keeps one document per event file, the set of values of each
low-cardinality field, so that a query skips the files that cannot match. Shards
written before runs are still searched as they were (`index`).

What it measured (`custody bench provenance --quick`, 480,000 events, the release
before and this one alternated in one session on the shared 2-core host at load 8-9;
the figures are in `benchmarks.provenance`): ingest CPU fell from 15-17 to 6.5
us/event and ingest rose 2-3 fold (19,500-25,400 to 49,300-58,000 events/s on that
loaded host), searchable lag p50 from 7-9 s to 4-5 s. The runs of an event file cost
about 1.4 us/event of CPU (best of 5 on 100,000 events of the benchmark's mix: uuid
0.9, filename 0.6, fields 0.07, writing 0.1), where tantivy took about 9 us/event of
CPU to add and commit every field, after 1.5 to build its JSON documents. The price: the
index takes 110 bytes/event instead of 58 (runs are kept uncompressed, so that a
lookup maps them instead of decompressing them), and on 480,000 events a time-range
search in the index alone takes about 1 ms instead of 0.1-0.5. At full size (10
million events, load 7-11) ingest went from 19,000 to 94,600 events/s (27.7 to 6.2
us/event of CPU), lag p50 from 10.4 to 2.6 s, a uuid query p50 from 10.0 to 2.1 ms,
a time-range query p50 from 25.6 to 15.2 ms. The goal of 250,000 events/s was not
shown on that host, where the process got 0.58 of a core.

Merges of runs then moved off the index thread to a thread of their own
(`background`), merges of runs of one key width became numpy's timsort of the
concatenation, and a run is sorted in numpy over 8-byte key prefixes: at full size,
in one session, ingest went from 106,600 to 132,300 events/s, CPU from 6.06 to 5.50
us/event, lag p50 / p99 from 2.5 / 5.8 s to 1.7 / 3.6 s; building runs without
copying the whole table of events brought CPU to 4.4-4.7 us/event on 3 million events
(5.5-6.1 before) (`benchmarks.provenance`). Then sorting key prefixes unstably, cutting
uuid keys from their bytes and dropping the uuid and filename runs' time column (run
format 2): at full size, in one session, CPU 4.4-4.5 -> 3.7 us/event (the index
thread 1.27 -> 0.78), index 110 -> 93 bytes/event.

On this 2-core machine when it was quiet (load 0.6, the process getting 1.4 of a core),
three full-size runs of `custody bench provenance` ingested 580,700, 601,800 and
613,900 events/s with indexing keeping up (searchable lag p50 0.38-0.41 s, p99
1.03-1.16 s), at 2.25-2.45 us/event of CPU: the goal of 250,000 events/s is met
2.3-2.5 times over where the process gets its cores.
"""

from .config import ProvenanceConfig
from .errors import (
    CorruptBlockError,
    CorruptFileError,
    EventNotFoundError,
    InvalidEventError,
    ProvenanceError,
    RepositoryClosedError,
)
from .event import LINEAGE_TYPES, EventType, ProvenanceEvent
from .event_batch import BODY_SCHEMA, SCHEMA, EventBatch
from .hooks import ProvenanceHooks
from .lineage import LineageEdge, LineageGraph, compute_lineage
from .policies import RolloverPolicy
from .query import ProvenanceQuery, QueryResult
from .repository import ProvenanceRepository

__all__ = [
    "BODY_SCHEMA",
    "SCHEMA",
    "CorruptBlockError",
    "CorruptFileError",
    "EventBatch",
    "EventNotFoundError",
    "EventType",
    "InvalidEventError",
    "LINEAGE_TYPES",
    "LineageEdge",
    "LineageGraph",
    "ProvenanceConfig",
    "ProvenanceError",
    "ProvenanceEvent",
    "ProvenanceHooks",
    "ProvenanceQuery",
    "ProvenanceRepository",
    "QueryResult",
    "RepositoryClosedError",
    "RolloverPolicy",
    "compute_lineage",
]
