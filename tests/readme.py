"""The README, as the tests that hold it to its word read it: a section, and its shell commands."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def section(title: str) -> str:
    """The text under `## title`, up to the next `## ` heading."""
    text = README.read_text()
    head = f"\n## {title}\n"
    assert head in text, f"README has no section '## {title}'"
    return text.split(head, 1)[1].split("\n## ", 1)[0]


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def commands(text: str) -> list[str]:
    """Each command line of the text's sh blocks, without its trailing comment."""
    lines = (
        line.split(" #", 1)[0].strip() for block in sh_blocks(text) for line in block.splitlines()
    )
    return [line for line in lines if line and not line.startswith("#")]


def quickstart_script() -> str:
    blocks = sh_blocks(section("Quickstart"))
    assert blocks, "README has no ```sh block under ## Quickstart"
    return blocks[0]
