"""The statistics of a processor in the admin API's answers (`ProcessorFigures`), as
NiFi's canvas shows them: what it took in, read, wrote and sent out, its tasks and
their time, over the last five minutes and since its engine started, and its last
bulletin (`flow.processor_stats` counts them). Dates are milliseconds since the epoch
(`_ms`); sizes are bytes."""

from __future__ import annotations

from pydantic import BaseModel, Field

from flow.processor_stats import zero_figures


class ProcessorActivity(BaseModel):
    """Counted from committed sessions only: a session that rolled back counts its task,
    not its FlowFiles."""

    in_count: int = Field(description="FlowFiles taken from its incoming queues (not those sent back to them)")
    in_bytes: int = Field(description="their content's bytes")
    read_bytes: int = Field(description="bytes of the contents it opened for reading")
    written_bytes: int = Field(description="bytes of content it wrote")
    out_count: int = Field(
        description="FlowFiles put in connections: one per connection of the relationship; "
        "none for an auto-terminated relationship (a drop)"
    )
    out_bytes: int = Field(description="their content's bytes")
    tasks: int = Field(description="tasks run, committed or not")
    task_seconds: float = Field(description="the time those tasks took")
    failures: int = Field(description="FlowFiles routed to its relationship 'failure'")


class ProcessorBulletin(BaseModel):
    """The last error a processor met, as NiFi's bulletin: an exception out of its task
    (the session rolled back), or a FlowFile it routed to failure, with the error its
    attributes carry (an attribute `error` or `*.error`)."""

    at_ms: int
    message: str
    flowfile_id: str | None = Field(default=None, description="the FlowFile it was about, when known")


def activity(figures: dict | None) -> ProcessorActivity:
    """The model of one `ProcessorStats.snapshot()` part; zeros for none."""
    return ProcessorActivity(**{**zero_figures(), **(figures or {})})


def bulletin(figures: dict | None) -> ProcessorBulletin | None:
    return ProcessorBulletin(**figures) if figures else None
