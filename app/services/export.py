"""Export: every document of a collection as a gzip-compressed JSON array, streamed page by page."""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from app.context import ApiContext
from app.services.worker import call_worker
from core.messages import FetchDocuments, FetchReply
from core.schemas.document import DocumentFetchRequest

EXPORT_PAGE = 1000  # the largest fetch page: one worker round trip per thousand documents


async def fetch_page(ctx: ApiContext, collection: str, request: DocumentFetchRequest) -> FetchReply:
    return await call_worker(
        ctx, FetchDocuments(collection=collection, request=request), FetchReply
    )


def export_filename(collection: str, now: datetime | None = None) -> str:
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{collection}-{stamp}.json.gz"


async def export_stream(
    ctx: ApiContext, collection: str, with_vectors: bool
) -> AsyncIterator[bytes]:
    """The gzip stream; the first page is read before it is returned, so that a missing
    collection or a worker failure is an HTTP error and not a cut-off download."""

    def request(after: str | None) -> DocumentFetchRequest:
        return DocumentFetchRequest(page_size=EXPORT_PAGE, after=after, with_vectors=with_vectors)

    first = await fetch_page(ctx, collection, request(None))

    async def chunks() -> AsyncIterator[bytes]:
        gzip = zlib.compressobj(wbits=31)  # 31: the gzip container
        page, opened = first, False
        while True:
            parts = []
            for document in page.documents:
                parts.append(b"," if opened else b"[")
                parts.append(json.dumps(document, separators=(",", ":")).encode())
                opened = True
            if chunk := gzip.compress(b"".join(parts)):
                yield chunk
            if page.after is None:
                break
            page = await fetch_page(ctx, collection, request(page.after))
        yield gzip.compress(b"]" if opened else b"[]") + gzip.flush()

    return chunks()
