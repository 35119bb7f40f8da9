"""create_app(settings): assembles the api from its routers; connects on startup."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app.context import ApiContext
from app.errors import install_error_handlers
from app.routes import collections, documents, health, metrics, search
from core.bus import Bus
from core.catalog import Catalog
from core.ledger import Ledger
from core.redis_client import connect_redis
from core.settings import Settings
from core.topology import topology


def create_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        redis = await connect_redis(settings.redis_url)
        bus = await Bus.connect(settings.amqp_url, retry_after_s=settings.retry_after_s)
        await bus.declare(topology(settings))
        app.state.context = ApiContext(settings, bus, redis, Catalog(redis), Ledger(redis))
        yield
        await bus.close()
        await redis.aclose()

    app = FastAPI(title="Braid", version=health.VERSION, lifespan=lifespan)
    install_error_handlers(app)
    for module in (health, collections, documents, search, metrics):
        app.include_router(module.router)
    return app
