"""The other keyword peers: LanceDB's full-text index and tantivy, bulk-loading the same documents.

    python3 -m bench.ingest.fulltext lancedb|tantivy DOCS.json FOLDER WARM   # prints {…}

Each runs in a process of its own in milvus.py's virtual environment, as Milvus Lite does, and is
timed the same way: WARM documents first (indexed and searched once), then the clock runs from
the first batch of 100 until a search finds the last document by its name, with the CPU of the
process's tree. Each indexes `name + "\\n" + content` as one English text, as Milvus Lite does.

- LanceDB (embedded, files in FOLDER): each batch is a `table.add`; the full-text index (LanceDB's
  own, BM25) is made when every batch is in (`create_fts_index(..., replace=True)`), as its
  documentation has a bulk load do, and a new fragment is unindexed until then.
- tantivy (the Rust library Quickwit is built on, through its Python binding): one writer adds
  every document (it has no batches to take); one `commit` at the end, then a reload of the
  searcher.

Neither is durable per batch as Braid's acknowledged writes are: tantivy makes nothing durable
before its commit, LanceDB writes each batch's files without fsync. So their rates are what a
load costs when nothing has to survive a crash part way.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.ingest import milvus

PEERS = ("lancedb", "tantivy")
BATCH = milvus.BATCH


def measure(peer: str, documents: list[dict[str, Any]], warm: int, folder: Path) -> milvus.Result:
    """`peer`'s bulk load of documents[warm:] (after documents[:warm]) in a fresh process."""
    path = folder / "fulltext-documents.json"
    path.write_text(json.dumps([{k: d[k] for k in ("id", "name", "content")} for d in documents]))
    target = folder / f"{peer}.db"
    shutil.rmtree(target, ignore_errors=True)
    try:
        out = subprocess.run(
            [str(milvus.python()), "-m", "bench.ingest.fulltext", peer, str(path), str(target)]
            + [str(warm)],
            check=True,
            capture_output=True,
            text=True,
            cwd=milvus.REPO,
        ).stdout
    finally:
        shutil.rmtree(target, ignore_errors=True)
    return milvus.parse(out)


class LanceDB:
    def __init__(self, folder: Path) -> None:
        import lancedb

        self._db = lancedb.connect(str(folder))
        self._table: Any = None

    def add(self, documents: list[dict[str, Any]]) -> None:
        rows = [{"id": d["id"], "text": milvus.text(d)} for d in documents]
        for start in range(0, len(rows), BATCH):
            batch = rows[start : start + BATCH]
            if self._table is None:
                self._table = self._db.create_table("keyword", data=batch)
            else:
                self._table.add(batch)

    def searchable(self, total: int, last: dict[str, Any]) -> None:
        self._table.create_fts_index("text", replace=True)
        if self._table.count_rows() != total:
            raise RuntimeError(f"LanceDB counts {self._table.count_rows()} of {total}")
        hits = self._table.search(last["name"], query_type="fts").limit(10).to_list()
        _found(last, [hit["id"] for hit in hits])


class Tantivy:
    def __init__(self, folder: Path) -> None:
        import tantivy

        folder.mkdir(parents=True)
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("text", tokenizer_name="en_stem")
        self._index = tantivy.Index(builder.build(), path=str(folder))
        self._writer = self._index.writer()
        self._tantivy = tantivy

    def add(self, documents: list[dict[str, Any]]) -> None:
        for d in documents:
            self._writer.add_document(self._tantivy.Document(id=d["id"], text=milvus.text(d)))

    def searchable(self, total: int, last: dict[str, Any]) -> None:
        self._writer.commit()
        self._writer.wait_merging_threads()
        self._writer = self._index.writer()
        self._index.reload()
        searcher = self._index.searcher()
        if searcher.num_docs != total:
            raise RuntimeError(f"tantivy counts {searcher.num_docs} of {total}")
        query = self._index.parse_query(_plain(last["name"]), ["text"])
        hits = searcher.search(query, 10).hits
        _found(last, [searcher.doc(address)["id"][0] for _, address in hits])


def _plain(text: str) -> str:
    """The name as lower-case words, so the query parser finds no operator in it."""
    return " ".join("".join(c if c.isalnum() else " " for c in text.lower()).split())


def _found(last: dict[str, Any], ids: list[str]) -> None:
    if last["id"] not in ids:
        raise RuntimeError(f"a search for document {last['id']}'s name does not find it")


def main(peer: str, path: Path, folder: Path, warm: int) -> None:
    documents = json.loads(path.read_text())
    index = LanceDB(folder) if peer == "lancedb" else Tantivy(folder)
    if warm:
        index.add(documents[:warm])
        index.searchable(warm, documents[warm - 1])
    timed = documents[warm:]
    cpu_before, started = milvus.tree_cpu_s(), time.perf_counter()
    index.add(timed)
    index.searchable(len(documents), documents[-1])
    seconds, cpu_s = time.perf_counter() - started, milvus.tree_cpu_s() - cpu_before
    print(json.dumps({"documents": len(timed), "seconds": seconds, "cpu_s": cpu_s}))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
