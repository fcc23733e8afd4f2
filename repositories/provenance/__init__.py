"""The provenance repository (NiFi's design): the chain of custody of every FlowFile.

Events go to several journals per container, uncompressed and unindexed; a rollover
merges them into one event file per generation, in id order, compressed in ~1 MB
blocks with a table of contents; background threads index each file into size-capped
tantivy shards. Queries by indexed field and time range, retrieval by id and in
sequence, lineage, age-off by age and size, and recovery of an interrupted merge.

Formats: `journal_format` (journals), `event_file_format` (event files and TOCs),
`event_batch.SCHEMA` (the Arrow schema inside both).

Why tantivy, and what it costs (measured on the 2-core shared host, load 4-5, quick
benchmark of 480,000 events, medians). The single indexing thread is the limit of
ingest. Indexing a uuid by a 20-character key (`index_documents.uuid_key`) and one
tantivy thread per writer took ingest CPU from about 30 to about 22 us/event and the
index from 76 to 58 bytes/event; tantivy still costs about 13 us/event of that
(adding documents and committing), so one indexing thread tops out near 75,000
events/s, well short of the 250,000 goal. A uuid-key-sorted run of (key, id) built
with Arrow's C++ sort and written as zstd Arrow IPC measured 1-2 us/event
(17 bytes/event) on the same events: that, merged LSM-style, is the measured case for
replacing tantivy for the uuid field; it is not built yet.
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
