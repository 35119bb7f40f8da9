"""The keyword peer: Milvus Lite bulk-loading the same documents into a BM25 collection.

    python3 -m bench.ingest.milvus DOCS.json DB WARM   # prints {"documents": n, "seconds": s, …}

`measure(documents, folder)` runs it in a process of its own, as baseline.py runs `encode()`, so
that its CPU and memory do not mix with the stack's, and gives documents per second and CPU-ms per
document. Milvus Lite 3 is pure Python and serves in threads of that process (no server child);
the CPU counted is still the process's whole tree (bench/common/procs.py), reaped children too.
It runs in a virtual environment of its own (VENV, made on first use from milvus-requirements.txt,
which fulltext.py's peers share), with the dependency versions pymilvus picks, not Braid's pins.

The collection: an `id` VARCHAR primary key; a `text` VARCHAR with `enable_analyzer=True` holding
the document's name and content as one text, `name + "\\n" + content` (Braid indexes the two fields
of the same documents); a SPARSE_FLOAT_VECTOR `sparse` that a BM25 `Function` fills from `text`,
with a SPARSE_INVERTED_INDEX of metric BM25. The database is a folder, DB (`milvus.db`), made
afresh for each run.

As Braid, it is given WARM documents before the clock starts (inserted, flushed and searched once).
Then the clock runs from the first insert (batches of 100) until the data is searchable: `flush`,
`load_collection` (a no-op here: a collection created with its index is loaded already), a
`count(*)` query that shows every document, and a BM25 search that finds the last document by its
name. The search belongs in the window: Milvus Lite builds the sparse index of new segments on the
first search after them (about a third of the time on 2,000 documents), not at flush.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import procs

BATCH = 100  # documents per insert, as Braid's bulk requests
COLLECTION = "keyword"
REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = Path(__file__).with_name("milvus-requirements.txt")
VENV = Path(os.environ.get("BRAID_BENCH_MILVUS_VENV", "/var/tmp/braid-bench-milvus"))
COUNT_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Result:
    docs_s: float
    cpu_ms: float  # per document, the process's tree


def measure(documents: list[dict[str, Any]], warm: int, folder: Path) -> Result:
    """Milvus Lite's bulk load of documents[warm:] (after documents[:warm]) in a fresh process."""
    path = folder / "milvus-documents.json"
    path.write_text(json.dumps([{k: d[k] for k in ("id", "name", "content")} for d in documents]))
    database = folder / "milvus.db"
    shutil.rmtree(database, ignore_errors=True)
    try:
        out = subprocess.run(
            [str(python()), "-m", "bench.ingest.milvus", str(path), str(database), str(warm)],
            check=True,
            capture_output=True,
            text=True,
            cwd=REPO,
        ).stdout
    finally:
        shutil.rmtree(database, ignore_errors=True)
    return parse(out)


def python() -> Path:
    """VENV's interpreter, the environment made and filled first when it is not (about a minute,
    from PyPI); a requirements change fills it again."""
    interpreter = VENV / "bin" / "python3"
    stamp = VENV / "requirements.txt"
    wanted = REQUIREMENTS.read_text()
    if interpreter.exists() and stamp.exists() and stamp.read_text() == wanted:
        return interpreter
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    pip = [str(interpreter), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
    stamp.write_text(wanted)
    return interpreter


def parse(out: str) -> Result:
    """The last line the process printed, as docs/s and CPU-ms per document."""
    found = json.loads(out.strip().splitlines()[-1])
    documents = float(found["documents"])
    return Result(documents / float(found["seconds"]), float(found["cpu_s"]) * 1000 / documents)


def text(document: dict[str, Any]) -> str:
    """The one analysed field Milvus is given: the name, a newline, the content."""
    return f"{document['name']}\n{document['content']}"


def tree_cpu_s() -> float:
    return sum(p.cpu_s for p in procs.descendants(os.getpid()))


def create(client: Any) -> None:
    from pymilvus import DataType, Function, FunctionType

    schema = client.create_schema()
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("text", DataType.VARCHAR, max_length=65535, enable_analyzer=True)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=["text"],
            output_field_names=["sparse"],
        )
    )
    index = client.prepare_index_params()
    index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    client.create_collection(COLLECTION, schema=schema, index_params=index)


def insert(client: Any, documents: list[dict[str, Any]]) -> None:
    for start in range(0, len(documents), BATCH):
        batch = documents[start : start + BATCH]
        client.insert(COLLECTION, [{"id": d["id"], "text": text(d)} for d in batch])


def searchable(client: Any, total: int, last: dict[str, Any]) -> None:
    """Returns once the collection counts `total` documents and a search finds `last`."""
    client.flush(COLLECTION)
    client.load_collection(COLLECTION)
    deadline = time.monotonic() + COUNT_TIMEOUT_S
    while (count := _count(client)) < total:
        if time.monotonic() > deadline:
            raise RuntimeError(f"Milvus Lite counts {count} of {total} documents")
        time.sleep(0.05)
    hits = client.search(
        COLLECTION, data=[last["name"]], anns_field="sparse", limit=10, output_fields=["id"]
    )[0]
    if last["id"] not in {hit["id"] for hit in hits}:
        raise RuntimeError(f"a search for document {last['id']}'s name does not find it")


def _count(client: Any) -> int:
    rows = client.query(COLLECTION, output_fields=["count(*)"])
    return int(rows[0]["count(*)"])


def main(path: Path, database: Path, warm: int) -> None:
    from pymilvus import MilvusClient

    documents = json.loads(path.read_text())
    client = MilvusClient(str(database))
    create(client)
    if warm:
        insert(client, documents[:warm])
        searchable(client, warm, documents[warm - 1])
    timed = documents[warm:]
    cpu_before, started = tree_cpu_s(), time.perf_counter()
    insert(client, timed)
    searchable(client, len(documents), documents[-1])
    seconds, cpu_s = time.perf_counter() - started, tree_cpu_s() - cpu_before
    client.close()
    print(json.dumps({"documents": len(timed), "seconds": seconds, "cpu_s": cpu_s}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
