"""What the api holds for its lifetime: settings, the bus and Redis-backed services."""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis

from core.bus import Bus
from core.catalog import Catalog
from core.ledger import Ledger
from core.settings import Settings


@dataclass
class ApiContext:
    settings: Settings
    bus: Bus
    redis: Redis
    catalog: Catalog
    ledger: Ledger
