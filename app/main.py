"""create_app(settings): assembles the api from its routers; connects on startup."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI

from app import dashboard
from app.context import ApiContext, OpenSearch
from app.fast_routes import FastRoutes
from app.http.apidocs import install_api_docs
from app.http.auth import KeyRing, authorize
from app.http.errors import install_error_handlers
from app.http.limits import RequestLimits
from app.http.openapi import ERROR_RESPONSES, install_openapi, operation_id
from app.http.shutdown import CancelledAs503
from app.http.unavailable import UnavailableAnswers
from app.metrics.sampler import MetricsSampler, RequestMetrics, cluster_counters
from app.routes import collections, documents, health, metrics, search, system
from core.bus import Bus
from core.catalog import Catalog
from core.ledger import Ledger
from core.metrics import Recorder
from core.redis_client import connect_redis
from core.settings import Settings
from core.topology import topology
from core.watchdog import Watchdog


def create_app(settings: Settings, open_search: OpenSearch | None = None) -> FastAPI:
    """`open_search`: the search node this process answers searches with; without one every
    search goes over the bus to whoever serves the search queue."""
    recorder = Recorder()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis = await connect_redis(settings.redis_url)
        bus = await Bus.connect(settings.amqp_url, retry_after_s=settings.retry_after_s)
        bus.recorder = recorder
        await bus.declare(topology(settings))
        context = ApiContext(settings, bus, redis, Catalog(redis), Ledger(redis))
        if open_search is not None:
            context.search = await open_search(settings, bus, redis, recorder)
            context.search.start()
        app.state.context = context
        sampler = MetricsSampler(
            redis, recorder, f"api-{settings.api_index}", lambda: cluster_counters(context)
        )
        sampler.start()
        watchdog = Watchdog(bus, redis, recorder, f"api-{settings.api_index}", settings)
        watchdog.start()
        yield
        await watchdog.close()
        await sampler.close()
        if context.search is not None:
            await context.search.close()
        await bus.close()
        await redis.aclose()

    app = FastAPI(
        title="Braid",
        version=health.VERSION,
        lifespan=lifespan,
        # One dependency on every route: no route can be left without its role check.
        dependencies=[Depends(authorize)],
        responses=ERROR_RESPONSES,
        generate_unique_id_function=operation_id,
        docs_url=None,  # app.http.apidocs serves /docs and /redoc without a CDN
        redoc_url=None,
    )
    app.state.keys = KeyRing(settings)
    app.state.unavailable = answers = UnavailableAnswers(recorder)
    app.add_middleware(FastRoutes)  # added first, so innermost: inside the limits and metrics
    app.add_middleware(RequestMetrics, recorder=recorder)
    # Added last, so outermost: a too-large body is refused before anything reads it.
    app.add_middleware(RequestLimits, body_timeout_s=settings.body_timeout_s)
    app.add_middleware(CancelledAs503, answers=answers)
    install_error_handlers(app)
    for module in (health, system, collections, documents, search, metrics, dashboard):
        app.include_router(module.router)
    install_openapi(app)
    install_api_docs(app)
    return app
