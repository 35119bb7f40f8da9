"""Entry point: `python -m app` (one of BRAID_API_PROCESSES processes sharing the port), with
the search node that answers this process's searches (search/node.py)."""

from __future__ import annotations

import logging

from app.main import create_app
from app.server import serve
from core.settings import load_settings
from search.node import SearchNode


def main() -> None:
    settings = load_settings()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format=f"%(asctime)s api-{settings.api_index} %(levelname)s %(name)s: %(message)s",
    )
    serve(create_app(settings, SearchNode.open), settings)


if __name__ == "__main__":
    main()
