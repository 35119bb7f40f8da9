"""Entry point: `python -m worker`."""

from __future__ import annotations

import asyncio
import logging

from core.lifecycle import run_until_signalled
from core.settings import load_settings
from worker.service import WorkerService


def main() -> None:
    settings = load_settings()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s worker %(levelname)s %(name)s: %(message)s",
    )
    asyncio.run(run_until_signalled("worker", lambda: WorkerService.open(settings)))


if __name__ == "__main__":
    main()
