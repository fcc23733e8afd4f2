"""The provenance repository (seed 002): the chain of custody of every FlowFile.

Events go to several journals per container, uncompressed and unindexed; a rollover
merges them into one event file per generation, in id order, compressed in ~1 MB
blocks with a table of contents; background threads index each file into size-capped
tantivy shards. Queries by indexed field and time range, retrieval by id and in
sequence, lineage, age-off by age and size, and recovery of an interrupted merge.

Formats: `journal_format` (journals), `event_file_format` (event files and TOCs),
`event_batch.SCHEMA` (the Arrow schema inside both).
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
from .hooks import Hooks
from .lineage import LineageEdge, LineageGraph, compute_lineage
from .policies import RolloverPolicy
from .query import ProvenanceQuery, QueryResult
from .repository import ProvenanceRepository

__all__ = [
    "BODY_SCHEMA", "SCHEMA", "CorruptBlockError", "CorruptFileError", "EventBatch", "EventNotFoundError",
    "EventType", "Hooks", "InvalidEventError", "LINEAGE_TYPES", "LineageEdge", "LineageGraph",
    "ProvenanceConfig", "ProvenanceError", "ProvenanceEvent", "ProvenanceQuery", "ProvenanceRepository",
    "QueryResult", "RepositoryClosedError", "RolloverPolicy", "compute_lineage",
]
