"""Store backends behind one protocol: the embedded Qdrant engine and the Qdrant server."""

from __future__ import annotations

from pathlib import Path

from store.protocol import Store


async def open_store(
    data_dir: Path, qdrant_url: str | None, optimize_min_changes: int = 5000
) -> Store:
    """The Qdrant server store when a url is set, else the embedded store under data_dir/store
    (optimized after `optimize_min_changes` writes at least: see EdgeStore)."""
    # Imported here so that a process loads only the backend it uses.
    if qdrant_url:
        from store.server import ServerStore

        return ServerStore.connect(qdrant_url)
    from store.edge.store import EdgeStore

    return await EdgeStore.open(data_dir / "store", optimize_min_changes=optimize_min_changes)
