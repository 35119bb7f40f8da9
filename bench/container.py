"""The numbers a user asks of the image (README "Container"): its size, the time `make image`
takes with every layer rebuilt (packages from the registries' caches), a cold start to `healthy`,
the first model load, memory at idle with the default encoders, `docker stop` and a start on the
same volume. Then what the container costs a search, in one run: the same keyword searches
through the container's published port and through the same stack on this machine (harness
Stack, the embedded engine both times).

    python3 -m bench.container [--build] [--searches 2000]

Needs the image (make image). Printed as markdown, for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from harness.stack import Stack

REPO = Path(__file__).resolve().parents[1]
RUN = "docker run -d --name braid -p 8234:8234 -v $PWD/braid-data:/data braid"
URL = "http://127.0.0.1:8234"
IDLE_S = 30.0  # settle after the first model load before memory is read
WORDS = "soup tomato pasta eggs butter flour milk pepper cucumber cold fried garlic".split()


def sh(command: str, cwd: Path = REPO, timeout: float = 900) -> str:
    done = subprocess.run(
        ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise SystemExit(f"{command}: {done.stderr[-2000:]}")
    return done.stdout.strip()


def healthy_after(started: float) -> float:
    while True:
        status = sh("docker inspect -f '{{.State.Health.Status}}' braid")
        if status == "healthy":
            return time.monotonic() - started
        if time.monotonic() - started > 300:
            raise SystemExit("not healthy within 300 s")
        time.sleep(0.2)


def memory_mib() -> tuple[float, float]:
    """(the container's memory as docker stats reads it, the sum of its processes' RSS), MiB."""
    usage = sh("docker stats --no-stream --format '{{.MemUsage}}' braid").split(" / ")[0]
    units = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}
    stats = next(float(usage[: -len(u)]) * f for u, f in units.items() if usage.endswith(u))
    rss_kib = sum(
        int(line.split()[0]) for line in sh("docker top braid -o rss,pid").split("\n")[1:]
    )
    return stats, rss_kib / 1024


def load(base_url: str, docs: int) -> None:
    with httpx.Client(base_url=base_url, timeout=120) as http:
        body = {"vectors": [{"name": "kw", "type": "keyword", "index_fields": ["name", "content"]}]}
        assert http.post("/v1/collections/bench", json=body).status_code == 200
        for start in range(0, docs, 100):
            batch = [
                {
                    "id": f"d{n}",
                    "timestamp": "2026-01-01T00:00:00Z",
                    "name": f"recipe {n}",
                    "content": " ".join(WORDS[(n * k) % len(WORDS)] for k in range(1, 25)),
                }
                for n in range(start, min(docs, start + 100))
            ]
            answer = http.post("/v1/collections/bench/documents/bulk", json={"documents": batch})
            assert answer.status_code == 200, answer.text
        while http.get("/v1/collections/bench/stats").json()["doc_count"] < docs:
            time.sleep(0.2)


def search_ms(base_url: str, searches: int) -> list[float]:
    took = []
    with httpx.Client(base_url=base_url, timeout=60) as http:
        for n in range(searches):
            query = {"query": f"{WORDS[n % 12]} {WORDS[(n * 5) % 12]}", "limit": 10}
            started = time.perf_counter()
            answer = http.post("/v1/collections/bench/search", json=query)
            took.append((time.perf_counter() - started) * 1000)
            assert answer.status_code == 200, answer.text
    return took[searches // 10 :]  # the first tenth warms up


def summary(took: list[float]) -> str:
    cuts = statistics.quantiles(took, n=100)
    return f"p50 {cuts[49]:.2f} ms, p95 {cuts[94]:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true", help="time make image with --no-cache")
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--searches", type=int, default=2000)
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []
    if args.build:
        started = time.monotonic()
        sh("BUILD_FLAGS=--no-cache make image", timeout=1800)
        rows.append(("make image, every layer rebuilt", f"{time.monotonic() - started:.0f} s"))
    size = int(sh("docker image inspect -f '{{.Size}}' braid"))
    rows.append(("image size", f"{size / 1e9:.2f} GB"))
    sh("docker rm -f braid")
    with tempfile.TemporaryDirectory() as folder:
        started = time.monotonic()
        sh(RUN, cwd=Path(folder))
        rows.append(("cold start (empty volume) to healthy", f"{healthy_after(started):.1f} s"))
        with httpx.Client(base_url=URL, timeout=120) as http:
            body = {
                "vectors": [
                    {
                        "name": "dense",
                        "type": "dense_model",
                        "model": "sentence-transformers/all-MiniLM-L6-v2",
                        "index_fields": ["content"],
                    }
                ]
            }
            started = time.monotonic()
            assert http.post("/v1/collections/first", json=body).status_code == 200
            rows.append(
                ("first dense collection (model load)", f"{time.monotonic() - started:.1f} s")
            )
        time.sleep(IDLE_S)  # a length of time is what is measured: memory once settled
        stats, rss = memory_mib()
        rows.append(("memory at idle, model loaded (docker stats)", f"{stats:.0f} MiB"))
        rows.append(("memory at idle, model loaded (sum of RSS)", f"{rss:.0f} MiB"))
        load(URL, args.docs)
        inside = search_ms(URL, args.searches)
        started = time.monotonic()
        sh("docker stop braid")
        rows.append(("docker stop", f"{time.monotonic() - started:.1f} s"))
        exit_code = sh("docker inspect -f '{{.State.ExitCode}}' braid")
        rows.append(("exit code after docker stop", exit_code))
        started = time.monotonic()
        sh("docker start braid")
        rows.append(("docker start (same volume) to healthy", f"{healthy_after(started):.1f} s"))
        sh("docker rm -f braid")
    with Stack() as bare:
        load(bare.base_url, args.docs)
        outside = search_ms(bare.base_url, args.searches)
    rows.append((f"keyword search over {args.docs:,} docs, container", summary(inside)))
    rows.append((f"keyword search over {args.docs:,} docs, bare machine", summary(outside)))
    rows.append(
        ("container / bare, p50", f"{statistics.median(inside) / statistics.median(outside):.2f}")
    )
    print("| | |\n|---|---|")
    for what, value in rows:
        print(f"| {what} | {value} |")
    print(json.dumps(dict(rows)))


if __name__ == "__main__":
    main()
