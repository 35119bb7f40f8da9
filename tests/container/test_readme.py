"""The README's container section is true to the letter: this tier runs every command in it."""

from __future__ import annotations

from tests.container.conftest import Readme
from tests.readme import commands, section


def test_the_container_section_holds_only_commands_this_tier_runs() -> None:
    assert sorted(commands(section("Container"))) == sorted(Readme.all())
