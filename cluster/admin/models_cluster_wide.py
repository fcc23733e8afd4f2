"""The answers of `GET /api/v1/cluster/processors` and `/api/v1/cluster/queues`
(`routes_cluster`, `fan_out`): every member's node figures, merged by shard."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .models import ProcessorFigures, QueueFigures


class MemberReply(BaseModel):
    node: str
    incarnation: str
    admin: str = Field(description="the admin API address it advertises, which was asked")
    answered: bool
    error: str | None = Field(description="why it gave no answer (unreachable, refused the token, timed out)")
    answered_at: float | None = Field(description="unix seconds, when its answer came")


class ClusterProcessors(BaseModel):
    """NiFi's replicated request: each live member's GET /api/v1/node/processors, merged."""

    shards: dict[str, list[ProcessorFigures]] = Field(
        description="shard -> its processors, from the member running it (its owner during a takeover)"
    )
    members: list[MemberReply]


class ClusterQueues(BaseModel):
    """NiFi's replicated request: each live member's GET /api/v1/node/queues, merged."""

    shards: dict[str, list[QueueFigures]] = Field(
        description="shard -> its queues, from the member running it (its owner during a takeover)"
    )
    members: list[MemberReply]
