"""Entry point `python -m encoder`: connect, run EncoderService until SIGTERM/SIGINT, close."""

from __future__ import annotations

import asyncio
import logging
import signal

from core.bus import Bus
from core.redis_client import connect_redis
from core.settings import Settings, load_settings
from encoder.service import EncoderService

log = logging.getLogger("encoder")

DRAIN_S = 8.0  # with the batcher's 2 s, below supervisord's stopwaitsecs (15 s)


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)


async def run(settings: Settings) -> None:
    stop = asyncio.Event()
    _stop_on_signals(stop)
    bus = await Bus.connect(settings.amqp_url, retry_after_s=settings.retry_after_s)
    redis = await connect_redis(settings.redis_url)
    service = EncoderService(settings, bus, redis)
    try:
        await service.start()
        await stop.wait()
        log.info("encoder %d stopping", settings.encoder_index)
        await service.close(DRAIN_S)
    finally:
        await bus.close()
        await redis.aclose()
    log.info("encoder %d stopped", settings.encoder_index)


def main() -> None:
    settings = load_settings()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format=f"%(asctime)s encoder-{settings.encoder_index} %(levelname)s %(name)s: %(message)s",
    )
    asyncio.run(run(settings))


if __name__ == "__main__":
    main()
