"""The answers of the queue, FlowFile, replay and processor endpoints (`routes_queues`).
Dates are milliseconds since the epoch (`_ms`), as FlowFiles keep them; sizes are bytes."""

from __future__ import annotations

from pydantic import BaseModel, Field


class FlowFileFigures(BaseModel):
    uuid: str
    filename: str
    size: int = Field(description="bytes of content")
    entry_date_ms: int = Field(description="when it entered its current queue")
    lineage_start_date_ms: int = Field(description="when its oldest ancestor entered the flow")
    penalty_expiration_ms: int | None = Field(None, description="until when it was penalized, if it ever was")


class ListedFlowFile(FlowFileFigures):
    position: int = Field(description="1 for the FlowFile the queue hands out next")
    penalized: bool = Field(description="held back until its penalty expires; it keeps its place")


class QueueListing(BaseModel):
    """NiFi's queue listing: the FlowFiles a queue holds in memory, in the order it hands
    them out. Swapped-out FlowFiles and those a running task holds are counted, not listed:
    listable + swapped_count + in_flight = count."""

    shard: str
    queue: str
    offset: int
    limit: int
    listable: int = Field(description="FlowFiles in memory, which the listing pages through")
    count: int = Field(description="every FlowFile the queue is responsible for")
    bytes: int
    swapped_count: int = Field(description="swapped out to swap files: not listed")
    swapped_bytes: int
    in_flight: int = Field(description="polled by a running task, not committed yet: not listed")
    flowfiles: list[ListedFlowFile]


class ContentClaimView(BaseModel):
    container: str
    section: int
    resource: str
    offset: int
    length: int = Field(description="bytes of the claim: the FlowFile's content size")


class FlowFileDetails(FlowFileFigures):
    shard: str
    queue: str
    penalized: bool
    swapped: bool = Field(description="found in a swap file, not in memory")
    attributes: dict[str, str]
    content_claim: ContentClaimView | None = Field(None, description="where its content is; none when empty")


class DropResult(BaseModel):
    shard: str
    queue: str
    dropped: int = Field(description="FlowFiles dropped, each with a DROP provenance event")
    dropped_bytes: int
    swap_files: int = Field(description="swap files dropped whole")
    swapped_dropped: int = Field(description="FlowFiles of those swap files (included in dropped)")
    in_flight: int = Field(description="held by running tasks when the drop ended: not dropped")
    remaining: int = Field(description="the queue's count after the drop (arrivals and in-flight ones)")


class ReplayResult(FlowFileFigures):
    """The new FlowFile, queued and durable, with a REPLAY event whose parent is `parent_uuid`."""

    event_id: int = Field(description="the provenance event replayed")
    parent_uuid: str = Field(description="the FlowFile of that event")
    shard: str
    queue: str


class WorkerControlAnswer(BaseModel):
    """One other worker's answer to a processor's stop or start (`worker_siblings`)."""

    worker: int
    answered: bool = Field(description="false: it was not reached or refused; error says why")
    state: str | None = None
    running: int | None = None
    error: str | None = None


class ProcessorState(BaseModel):
    shard: str
    processor: str
    state: str = Field(description="RUNNING, STOPPING (tasks still running) or STOPPED")
    running: int = Field(description="tasks running now")
    scope: str | None = Field(
        None,
        description="where the run state is kept and which shards it covers (a "
        "clustered node: every shard of the shard's node, in ZooKeeper)",
    )
    workers: list[WorkerControlAnswer] | None = Field(
        None,
        description="on a node of worker processes: what each other worker said (the fields above are "
        "this worker's); null elsewhere",
    )


class DownloadTicket(BaseModel):
    """NiFi's download token, for one FlowFile's content: a browser link may carry it
    where it cannot carry a bearer header (`cluster.admin.download_tickets`)."""

    ticket: str = Field(description="serves this FlowFile's content without a token, on this node, until expires_at")
    expires_at: float = Field(description="unix seconds")
    url: str = Field(
        description="the content's download link, relative to the node's page: "
        "api/v1/flowfiles/<uuid>/content?ticket=...&download=true (&shard=... when given)"
    )
