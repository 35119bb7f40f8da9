"""Entry point: `python -m app` (one of BRAID_API_PROCESSES processes sharing the port)."""

from __future__ import annotations

import logging

from app.main import create_app
from app.server import serve
from core.settings import load_settings


def main() -> None:
    settings = load_settings()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s api %(levelname)s %(name)s: %(message)s",
    )
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
