"""The operator dashboard in a real browser: Debian's headless Chromium, driven by Playwright.

The page loads without a console error, charts the traffic it is shown, searches from its
playground, asks for a key when the API wants one, and says "stale" once the API stops
answering. The tests also take the README's screenshots: into docs/dashboard/ when
BRAID_REFRESH_SCREENSHOTS=1, else under the temp folder (a plain test run leaves the tree clean).
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Locator, Page, expect, sync_playwright

from core.schemas.document import Document
from harness.stack import REPO_ROOT, Stack, StackFactory
from tests.integration.helpers import (
    create,
    doc,
    hybrid_collection,
    keyword_collection,
    publish_raw_upserts,
    search_ids,
)

CHROMIUM = "/usr/bin/chromium"  # Debian's package (docker/install.sh); nothing is downloaded
SHOTS = (
    REPO_ROOT / "docs" / "dashboard"
    if os.environ.get("BRAID_REFRESH_SCREENSHOTS") == "1"
    else Path(tempfile.gettempdir()) / "braid-dashboard-shots"
)
COLLECTION = "dashboard_demo"
# Generous: the page refreshes every 5 s, and a loaded 2-core machine may be slow to draw.
WAIT_MS = 90_000
DESKTOP = {"width": 1400, "height": 1000}
PHONE = {"width": 390, "height": 844}

ARTICLES = [
    ("Trail running in the Alps", "Steep alpine trails, thin air and long descents reward runners"),
    ("Sourdough at home", "A starter, flour, water and salt: slow fermentation makes the bread"),
    ("Tuning Postgres", "Shared buffers, work memory and autovacuum decide most query latency"),
    ("River kayaking", "Reading the current, eddies and rapids keeps a kayak upright"),
    ("Vector search basics", "Dense embeddings place similar texts near each other in space"),
    ("Keyword search basics", "Inverted indexes and BM25 score documents by matching terms"),
    ("Hybrid retrieval", "Fusing keyword and vector rankings beats either arm alone"),
    ("Mountain weather", "Afternoon storms build fast over high ridges in summer"),
    ("Espresso extraction", "Grind size, dose and water temperature balance the shot"),
    ("Redis persistence", "Snapshots and the append-only file trade speed for durability"),
    ("Night sky photography", "Wide lenses, long exposures and dark skies reveal the galaxy"),
    ("Garden compost", "Greens, browns, air and water turn scraps into soil"),
]
QUERIES = [
    "alpine running",
    "bread fermentation",
    "database latency",
    "kayak rapids",
    "embeddings similarity",
    "keyword ranking",
    "hybrid fusion",
    "storms on ridges",
]


# --- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            launched.close()


class Console:
    """Errors the page reported: console.error lines and uncaught exceptions."""

    def __init__(self, page: Page) -> None:
        self.errors: list[str] = []
        page.on("console", self._message)
        page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))

    def _message(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console.error: {message.text}")


def open_page(browser: Browser, base_url: str, viewport: dict[str, int]) -> tuple[Page, Console]:
    page = browser.new_context(viewport=viewport).new_page()  # type: ignore[arg-type]
    console = Console(page)
    page.goto(base_url + "/dashboard/")
    return page, console


@pytest.fixture
def desktop(browser: Browser, stack: Stack) -> Iterator[tuple[Page, Console]]:
    page, console = open_page(browser, stack.base_url, DESKTOP)
    yield page, console
    page.context.close()


@pytest.fixture(scope="module")
def traffic(client: httpx.Client) -> str:
    """A hybrid collection with documents written synchronously and searched: the overview
    then has searches, writes and embeddings to chart. Returns the collection's name."""
    create(client, COLLECTION, hybrid_collection())
    for i, (name, content) in enumerate(ARTICLES):
        response = client.post(
            f"/v1/collections/{COLLECTION}/documents/sync",
            json=doc(f"a{i}", content, seconds=i, name=name),
        )
        assert response.status_code == 200, response.text
    for query in QUERIES * 3:
        response = client.post(f"/v1/collections/{COLLECTION}/search", json={"query": query})
        assert response.status_code == 200, response.text
    return COLLECTION


def wait_live(page: Page) -> None:
    expect(page.locator("#status")).to_have_text("live", timeout=WAIT_MS)


def chart_max(page: Page, chart: str) -> None:
    """Wait until a chart has drawn a value above zero (its figure's data-max)."""
    page.wait_for_function(
        'id => Number(document.querySelector(`[data-chart="${id}"]`)?.dataset.max) > 0',
        arg=chart,
        timeout=WAIT_MS,
        polling=500,
    )


def run_async(coroutine: Coroutine[Any, Any, None]) -> None:
    """asyncio.run on a thread of its own: Playwright's sync API keeps a loop running here."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coroutine).result()


def shot(target: Page | Locator, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    target.screenshot(path=str(SHOTS / name), animations="disabled")


# --- tests ----------------------------------------------------------------------------------


def test_page_loads_live_with_every_process_and_no_console_error(
    desktop: tuple[Page, Console],
) -> None:
    page, console = desktop
    wait_live(page)
    expect(page.locator("#banner")).to_be_hidden()
    for node in ("api-1", "worker", "encoder-1"):
        expect(page.locator(f'#cluster [data-node="{node}"]')).to_have_attribute(
            "data-alive", "true", timeout=WAIT_MS
        )
    assert console.errors == []


def test_overview_charts_the_traffic_it_is_shown(
    desktop: tuple[Page, Console], traffic: str
) -> None:
    page, console = desktop
    wait_live(page)
    for chart in ("search-rate", "search-latency", "ingest", "embedding"):
        chart_max(page, chart)
    line = page.locator('#overview [data-chart="search-rate"] path.line').first
    expect(line).to_have_attribute("d", re.compile(r"^M\d"), timeout=WAIT_MS)
    for quantile in ("p50", "p95", "p99"):
        expect(
            page.locator(f'[data-chart="search-latency"] [data-series="{quantile}"]')
        ).to_be_attached()
    expect(page.locator('[data-tile="Searches"] .value')).not_to_have_text("—")

    holder_models = page.locator("#cluster [data-role='holder'] .chip")
    expect(holder_models.first).to_contain_text("MiniLM", timeout=WAIT_MS)  # loaded on first use

    card = page.locator(f'#collections [data-collection="{traffic}"]')
    expect(card.locator(".docs")).to_have_text(str(len(ARTICLES)), timeout=WAIT_MS)
    expect(card).to_contain_text("dense_model")

    shot(page.locator("#overview"), "overview.png")
    shot(page.locator("#cluster"), "cluster.png")
    shot(page.locator("#collections"), "collections.png")
    assert console.errors == []


def test_playground_shows_ranked_hits_with_per_arm_scores(
    desktop: tuple[Page, Console], traffic: str
) -> None:
    page, console = desktop
    wait_live(page)
    page.select_option("#pg-collection", traffic, timeout=WAIT_MS)
    page.fill("#pg-query", "fusing keyword and vector rankings")
    page.click("#pg-form button")
    hits = page.locator("#pg-results .hit")
    expect(hits.first).to_be_visible(timeout=WAIT_MS)
    expect(hits.first).to_contain_text("Hybrid retrieval")
    for arm in ("kw", "dense"):  # the hybrid collection's two arms, each with its score
        expect(hits.first.locator(f'.arm[data-vector="{arm}"]')).not_to_have_count(0)
    expect(page.locator("#pg-meta")).to_contain_text("hits")
    shot(page.locator("#playground"), "playground.png")
    assert console.errors == []


def test_phone_width_is_one_column_without_sideways_scrolling(
    browser: Browser, stack: Stack, traffic: str
) -> None:
    page, console = open_page(browser, stack.base_url, PHONE)
    try:
        wait_live(page)
        chart_max(page, "search-rate")
        widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], f"the page scrolls sideways: {widths}"
        lefts = page.locator("#charts figure.chart").evaluate_all(
            "figures => figures.map(f => Math.round(f.getBoundingClientRect().left))"
        )
        assert len(set(lefts)) == 1, f"charts are not in one column: {lefts}"
        shot(page, "phone.png")
        assert console.errors == []
    finally:
        page.context.close()


def test_page_asks_for_a_key_lists_failed_writes_and_goes_stale_without_the_api(
    browser: Browser, make_stack: StackFactory
) -> None:
    keys = {"BRAID_API_KEY": "dash-admin-key", "BRAID_READ_KEY": "dash-read-key"}
    own = make_stack(keys)
    admin_key = {"api-key": keys["BRAID_API_KEY"]}
    with httpx.Client(base_url=own.base_url, headers=admin_key, timeout=60.0) as admin:
        create(
            admin, "keyed", {"vectors": [{"name": "emb", "type": "dense_custom", "dimensions": 3}]}
        )
    # A poison write (4 numbers in a 3-d slot, past the API's checks) fails for good, with a reason.
    custom = [{"vector_name": "emb", "field": "content", "vector": [1.0, 2.0, 3.0, 4.0]}]
    poison = Document.model_validate(doc("bad", "a poison document", custom_vectors=custom))
    run_async(publish_raw_upserts(own.amqp_url, own.redis_url, "keyed", [poison]))
    page, _ = open_page(browser, own.base_url, DESKTOP)
    page.on("dialog", lambda dialog: dialog.accept())  # the purge button's confirm()
    try:
        status = page.locator("#status")
        expect(status).to_have_text("needs key", timeout=WAIT_MS)
        expect(page.locator("#banner")).to_contain_text("needs an API key")

        page.fill("#key", keys["BRAID_READ_KEY"])
        page.press("#key", "Tab")  # the key is taken on change
        expect(status).to_have_text("live", timeout=WAIT_MS)
        card = page.locator('#collections [data-collection="keyed"]')
        failed_row = card.locator("table.failed tbody tr")
        expect(failed_row).to_have_count(1, timeout=WAIT_MS)
        expect(failed_row.locator("td").first).to_have_text("bad")
        expect(failed_row.locator("td.reason")).not_to_be_empty()
        shot(card, "failed-writes.png")
        card.locator("[data-action='purge']").click()
        expect(card.locator(".note")).to_have_text("needs an admin key", timeout=WAIT_MS)

        # A process that stops publishing is shown down, while the page itself stays live.
        assert "stopped" in own.ctl("stop", "encoder:encoder-2")
        router = page.locator('#cluster [data-node="encoder-2"]')
        expect(router).to_have_attribute("data-alive", "false", timeout=WAIT_MS)
        expect(status).to_have_text("live")

        out = own.ctl("stop", "api:*")
        assert "stopped" in out, out
        expect(status).to_have_text("stale", timeout=WAIT_MS)
        expect(page.locator("#banner")).to_contain_text("stale: last good data at")
        expect(page.locator("#overview")).to_have_class(re.compile(r"\bstale\b"))
        page.evaluate("window.scrollTo(0, 0)")
        shot(page, "stale.png")
    finally:
        page.context.close()


def test_cluster_map_shows_a_stalled_process_and_what_it_is_stalled_on(
    browser: Browser, make_stack: StackFactory
) -> None:
    """An api whose replica applies nothing (the fault-injection knob) while writes go on: its
    stream's queue fills, its watchdog calls it stalled, and the map says so until it restarts
    (a grace long enough for the page's refresh)."""
    stalled = make_stack(
        {
            "BRAID_API_PROCESSES": "1",
            "BRAID_REPLICA_APPLY_DELAY_MS": "3600000",
            "BRAID_STALL_S": "4",
            "BRAID_STALL_GRACE_S": "600",
        }
    )
    with httpx.Client(base_url=stalled.base_url, timeout=30) as http:
        create(http, "stalling", keyword_collection())
        # Searched, the replica applies the stream, and stalls on its first write (one that no
        # search has used since its start drops the stream).
        assert search_ids(http, "stalling", "x") == []
        # More than a replica holds unapplied (store/replication/replica.py IN_FLIGHT).
        for i in range(300):
            answer = http.post("/v1/collections/stalling/documents/sync", json=doc(f"s{i}", "x"))
            assert answer.status_code == 200, answer.text
    page, console = open_page(browser, stalled.base_url, DESKTOP)
    try:
        node = page.locator('#cluster [data-node="api-1"]')
        expect(node).to_have_attribute("data-stalled", "true", timeout=WAIT_MS)
        expect(node).to_contain_text("stalled on braid.replication")
        expect(page.locator('#cluster [data-node="worker"]')).to_have_attribute(
            "data-stalled", "false"
        )
        shot(page.locator("#cluster"), "stalled.png")
        assert console.errors == []
    finally:
        page.context.close()
