"""Entry point: `python -m worker`."""

from __future__ import annotations

import logging

from core.lifecycle import run_process
from core.settings import load_settings
from worker.service import WorkerService


def main() -> None:
    settings = load_settings()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s worker %(levelname)s %(name)s: %(message)s",
    )
    run_process("worker", lambda: WorkerService.open(settings))


if __name__ == "__main__":
    main()
