"""API docs that work offline: Swagger UI at /docs and ReDoc at /redoc, their scripts served from
the pinned `fastapi-offline` package (FastAPI's defaults load them from a CDN, so a machine with
no internet got blank pages), and `/` pointing at the dashboard.

These are plain Starlette routes, like FastAPI's own docs routes: public pages with no data in
them (what they show comes from /openapi.json).
"""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.requests import Request
from starlette.staticfiles import StaticFiles

ASSETS = Path(fastapi_offline.__file__).with_name("static")
ASSETS_URL = "/docs/assets"
OPENAPI_URL = "/openapi.json"


async def swagger_ui(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url=OPENAPI_URL,
        title="Braid API",
        swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS_URL}/favicon.png",
    )


async def redoc(request: Request) -> HTMLResponse:
    return get_redoc_html(
        openapi_url=OPENAPI_URL,
        title="Braid API",
        redoc_js_url=f"{ASSETS_URL}/redoc.standalone.js",
        redoc_favicon_url=f"{ASSETS_URL}/favicon.png",
        with_google_fonts=False,
    )


async def home(request: Request) -> RedirectResponse:
    return RedirectResponse("/dashboard/")


def install_api_docs(app: FastAPI) -> None:
    """Needs FastAPI(docs_url=None, redoc_url=None): these replace the CDN-backed pages."""
    app.mount(ASSETS_URL, StaticFiles(directory=ASSETS), name="docs-assets")
    app.add_route("/docs", swagger_ui, include_in_schema=False)
    app.add_route("/redoc", redoc, include_in_schema=False)
    app.add_route("/", home, include_in_schema=False)
