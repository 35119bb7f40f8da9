"""A read-only dashboard at /dashboard/: one static page that reads the metrics and collections.

The page itself holds no data and is public (a browser cannot send a key header when it
navigates); everything it shows comes from read-role routes, with the key the user types in.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

PAGE = Path(__file__).with_name("index.html")
router = APIRouter(include_in_schema=False)


@router.get("/dashboard/", response_class=HTMLResponse)
async def dashboard() -> HTMLResponse:
    return HTMLResponse(PAGE.read_text(encoding="utf-8"))
