"""Field rules shared by several wire models: names, strict types, forbidden extras."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, StrictStr

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,100}$")
NAME_RULE = "1..100 characters of letters, digits, '_' or '-'"


def check_name(value: str) -> str:
    """Collection, vector, metadata key and document id rule (API.md §1)."""
    if not value.strip():
        raise ValueError("must not be empty")
    if not NAME_RE.match(value):
        raise ValueError(f"must be {NAME_RULE}")
    return value


def _strip(value: object) -> object:
    return value.strip() if isinstance(value, str) else value


Name = Annotated[StrictStr, AfterValidator(check_name)]
DocumentId = Annotated[StrictStr, BeforeValidator(_strip), AfterValidator(check_name)]


class WireModel(BaseModel):
    """A request/response body: unknown keys are refused (API.md §1)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class OkResponse(BaseModel):
    ok: bool = True
