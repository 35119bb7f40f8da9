"""Entry point: `python -m worker`."""

from __future__ import annotations

import asyncio
import logging
import signal

from core.settings import load_settings
from worker.service import WorkerService


async def main() -> None:
    settings = load_settings()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s worker %(levelname)s %(name)s: %(message)s",
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    service = await WorkerService.start(settings)
    try:
        await service.run(stop)
    finally:
        await service.close()


if __name__ == "__main__":
    asyncio.run(main())
