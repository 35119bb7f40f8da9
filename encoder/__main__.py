"""Entry point `python -m encoder`: run EncoderService until SIGTERM/SIGINT, then close it."""

from __future__ import annotations

import logging

from core.lifecycle import run_process
from core.settings import load_settings
from encoder.service import EncoderService


def main() -> None:
    settings = load_settings()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format=f"%(asctime)s encoder-{settings.encoder_index} %(levelname)s %(name)s: %(message)s",
    )
    name = f"encoder {settings.encoder_index}"
    run_process(name, lambda: EncoderService.open(settings))


if __name__ == "__main__":
    main()
