"""Wire shapes of /v1/metrics (the names and fields of amgix-client's metrics models)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class WindowSample(BaseModel):
    value: float = Field(description="Mergeable numerator for the window")
    n: int | None = Field(None, description="Denominator for average-like metrics")


class NodeMetricSeries(BaseModel):
    key: str
    dims: list[str] = Field(default_factory=list)
    windows: dict[str, WindowSample] = Field(
        default_factory=dict, description="Samples keyed by window size in seconds"
    )
    last_seen: float | None = None


class NodeView(BaseModel):
    role: str
    is_leader: bool = False
    last_seen: float
    meta: dict[str, str] = Field(default_factory=dict)
    metrics: list[NodeMetricSeries] = Field(default_factory=list)


class Metrics(BaseModel):
    nodes: dict[str, NodeView]


class MetricsBucket(BaseModel):
    key: str
    dims: list[str] = Field(default_factory=list)
    bucket_start: int = Field(description="Unix time of the inclusive bucket start")
    bucket_seconds: int
    value: float = Field(description="Increase of the counter over the bucket")
    n: int | None = Field(None, description="Denominator for average-like metrics")


class MetricTrend(BaseModel):
    key: str
    bucket_seconds: int
    buckets: list[MetricsBucket] = Field(description="Ordered by bucket_start ascending")


class MetricDefinitionItem(BaseModel):
    key: str
    unit: str
    description: str
