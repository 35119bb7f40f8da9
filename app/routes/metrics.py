"""Metrics: current counters per node, trends from snapshots, definitions, Prometheus text."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from enum import IntEnum
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from app.deps import Context
from app.http.strict_json import StrictJSONRoute
from app.metrics import prometheus, views
from app.metrics.definitions import DEFINITIONS
from app.metrics.models import MetricDefinitionItem, Metrics, MetricTrend
from app.metrics.sampler import cluster_counters, cluster_series
from app.metrics.store import CLUSTER, RETAIN_S, SLOT_S, MetricsStore, slot_of
from core.metrics_publish import read_nodes

router = APIRouter(prefix="/v1/metrics", tags=["metrics"], route_class=StrictJSONRoute)


class Window(IntEnum):
    S30 = 30
    S60 = 60


class Resolution(IntEnum):
    S60 = 60
    S300 = 300


Keys = Annotated[list[str], Query(description="Only these metric keys; omit for all")]


def _unix(value: datetime) -> float:
    """Query datetimes without a timezone are UTC."""
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


@router.get("/current", response_model=Metrics)
async def metrics_current(
    ctx: Context,
    window: Annotated[Window, Query(description="Window in seconds: 30 or 60")] = Window.S60,
    keys: Keys = [],  # noqa: B006 (FastAPI copies defaults per request)
) -> Metrics:
    store = MetricsStore(ctx.redis)
    now = time.time()
    nodes = await store.nodes()
    first = slot_of(now - window)
    snaps = await store.snapshots(list(range(first, slot_of(now) + 1, SLOT_S)))
    base = snaps[min(snaps)] if snaps else None
    wanted = set(keys) if keys else None
    return Metrics(
        nodes={
            node_id: views.node_view(node_id, node, base, int(window), wanted)
            for node_id, node in sorted(nodes.items())
        }
    )


@router.get("/trends", response_model=list[MetricTrend])
async def metrics_trends(
    ctx: Context,
    since: Annotated[datetime, Query(description="Inclusive start (ISO 8601; UTC if naive)")],
    until: Annotated[datetime, Query(description="Exclusive end (ISO 8601; UTC if naive)")],
    resolution: Annotated[Resolution, Query(description="Bucket seconds: 60 or 300")] = (
        Resolution.S60
    ),
    keys: Keys = [],  # noqa: B006 (FastAPI copies defaults per request)
) -> list[MetricTrend]:
    """Counter increases per bucket, summed over nodes; history is kept 24 hours."""
    store = MetricsStore(ctx.redis)
    now = time.time()
    start = max(_unix(since), now - RETAIN_S)
    starts = views.bucket_starts(start, _unix(until), int(resolution), now)
    wanted_slots = [
        slot
        for boundary in starts
        for edge in (boundary, boundary + resolution)
        for slot in views.candidate_slots(edge, int(resolution), now)
    ]
    snaps = await store.snapshots(wanted_slots)
    live = {node_id: node.counters for node_id, node in (await store.nodes()).items()}
    live[CLUSTER] = await cluster_counters(ctx)
    return views.trends(starts, int(resolution), snaps.get, live, now, keys)


@router.get("/definitions", response_model=list[MetricDefinitionItem])
async def metrics_definitions() -> list[MetricDefinitionItem]:
    return [
        MetricDefinitionItem(key=d.key, unit=d.unit, description=d.description) for d in DEFINITIONS
    ]


@router.get(
    "/prometheus",
    response_class=PlainTextResponse,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
async def metrics_prometheus(ctx: Context) -> PlainTextResponse:
    now = time.time()
    nodes = await read_nodes(ctx.redis, now)
    text = prometheus.render(nodes.values(), await cluster_series(ctx), now)
    return PlainTextResponse(text, media_type=prometheus.CONTENT_TYPE)
