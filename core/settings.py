"""Every BRAID_* environment variable, read once into one typed settings object; and the one
place the process environment is written (`telemetry_off`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from core.enums import EncoderBackend, EncoderPrecision


def available_cores() -> int:
    """The cores this process may run on, as `nproc` counts them: its CPU affinity, which a
    container's cpuset narrows (os.cpu_count() is the host's)."""
    if hasattr(os, "sched_getaffinity"):  # Linux, where Braid runs
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


# Libraries that phone home unless told not to before they load: ONNX Runtime's official builds
# send usage events to Microsoft and keep a device id under ~/.cache/Microsoft; the Hugging Face
# hub adds telemetry to its requests (DO_NOT_TRACK is the cross-tool convention it honours too).
# docker/entrypoint.sh and the Dockerfile export the same for every process.
TELEMETRY_OFF = {"ORT_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "DO_NOT_TRACK": "1"}


def telemetry_off() -> None:
    """Switch those off in this process, for a library not loaded yet: a process started without
    the entrypoint (bench, tests, `docker exec`) sends nothing either."""
    os.environ.update(TELEMETRY_OFF)


def default_api_processes(cores: int) -> int:
    """Half the cores and at least two, one on one core. The engine holds the GIL, so one api
    process uses at most one core for searches, and on two cores a second one served more of
    both load mixes than one (docs/benchmarks.md, Search processes). The worker serves the
    searches of an api still loading its replica."""
    return min(max(cores // 2, 2), cores)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BRAID_", extra="ignore")

    data_dir: Path = Path("data")
    host: str = "0.0.0.0"
    port: int = 8234
    log_level: str = "info"
    # api processes sharing the port (SO_REUSEPORT): one dying drops only its own requests.
    # Each answers its searches itself (search/node.py): with the embedded store from a
    # replica of it fed by the worker's stream of writes, with a Qdrant server from the server.
    # docker/entrypoint.sh exports the default for supervisord's numprocs.
    api_processes: int = Field(
        default_factory=lambda: default_api_processes(available_cores()), ge=1
    )
    api_index: int = Field(1, ge=1)  # set per api process by supervisord
    header_timeout_s: float = Field(10.0, gt=0)  # a connection's request headers, in full
    body_timeout_s: float = Field(30.0, gt=0)  # each chunk of a request body

    amqp_url: str = "amqp://guest:guest@127.0.0.1:5672/"
    redis_url: str = "redis://127.0.0.1:6379/0"
    qdrant_url: str | None = None

    # How long a search waits for its api process's replica to apply the newest acknowledged write
    # before it answers 503 instead of an older state.
    replica_wait_s: float = Field(5.0, gt=0)
    # A replica no search has used for this long stops applying the stream of writes; the next
    # search first asks the worker for what it missed (Elasticsearch's search-idle shards stop
    # refreshing alike).
    # Under a keyword bulk load with no searches two replicas applying it were a quarter of the
    # stack's CPU.
    replica_idle_s: float = Field(30.0, gt=0)
    # Fault injection (tests): each replicated write waits this long before a replica applies it.
    replica_apply_delay_ms: float = Field(0.0, ge=0)

    # Encoders: the first `encoder_models` of `encoders` load models; the rest route.
    encoders: int = Field(2, ge=1)
    encoder_models: int = Field(1, ge=1)
    encoder_index: int = Field(1, ge=1)
    device: str = "auto"
    encoder_backend: EncoderBackend = EncoderBackend.AUTO
    encoder_precision: EncoderPrecision = EncoderPrecision.AUTO
    encoder_threads: int = Field(0, ge=0)
    model_dir: Path | None = None
    allow_downloads: bool = False
    # Micro-batching (docs/benchmarks.md has the measurements behind the defaults). Documents and
    # queries run on separate lanes, so a query never waits behind a document batch.
    embed_batch_size: int = Field(32, ge=1)
    embed_batch_wait_ms: float = Field(3.0, ge=0)
    query_batch_size: int = Field(16, ge=1)
    query_batch_wait_ms: float = Field(0.0, ge=0)
    query_threads: int = Field(1, ge=1)
    # Document batches a holder runs side by side; they share its threads. Two calls of half
    # the threads beat one of all: +4 % bulk ingest on 2 cores (docs/benchmarks.md, bench/ingest).
    document_workers: int = Field(2, ge=1)
    # Added to the nice value of the document lane's model threads: queries, the event loop and
    # the broker preempt bulk embedding (Linux; the value is per thread there).
    document_nice: int = Field(10, ge=0, le=19)

    # Bounds (DESIGN invariant 4). The documents queue's is in messages, each of up to eight
    # writes (core/messages.py: WRITES_PER_MESSAGE).
    document_queue_max: int = Field(100_000, ge=1)
    search_queue_max: int = Field(1_000, ge=1)
    rpc_timeout_s: float = Field(60.0, gt=0)
    # An async write answers 200 only if the broker confirmed it within this long of its ledger
    # entry, else 503; the worker forgets a queued entry whose message never reached the broker
    # once it is older than this (an api killed between the two: worker/reaper.py).
    publish_deadline_s: float = Field(20.0, gt=0)
    # Documents a worker batch takes (its prefetch holds BATCHES_IN_FLIGHT + 1 of them). Each
    # batch costs a store flush, a replication message every search node applies, and Redis and
    # broker round trips: a keyword bulk load ran 22 % faster at 256 than at 64, on 14 % less CPU
    # a document (512: slower again); dense ingest the same (docs/benchmarks.md, issue 32).
    worker_batch_size: int = Field(256, ge=1)
    # Writes to an embedded shard with dense vectors before it is optimized (then also 20 %
    # growth): each optimize rebuilds the whole shard's index. Qdrant itself leaves segments
    # under ~6,600 vectors of 384 dims unindexed; at 1,000 a bulk load rebuilt the index every
    # 1,000 documents, on the cores the model needs (docs/benchmarks.md, bench/ingest). A
    # keyword shard is optimized when it doubles, from 4× this, or has this many dead versions
    # and 20 % (store/edge/shard.py).
    optimize_min_changes: int = Field(5000, ge=1)
    # How long a document batch gathers after its first message. Each batch costs a store flush
    # and a few Redis and broker round trips: at ~88 async upserts/s, 100 ms instead of 20 took
    # the worker from 2.87 to 2.06 CPU-ms an upsert (bench.writecost; docs/benchmarks.md, "Write
    # cost"); an async write is indexed up to 80 ms later.
    worker_batch_wait_ms: float = Field(100.0, ge=0)
    max_tries: int = Field(5, ge=1)
    # A consumer with messages waiting that takes none for this long is stalled (core/watchdog.py):
    # readiness stops answering 200. A healthy one takes a message at least every batch (the
    # worker's gathers for 0.1 s, a model batch runs well under a second), so 30 s leaves room for
    # a slow machine and a dependency's short outage. Stalled for another `stall_grace_s`, the
    # process exits and supervisord starts it again; the grace outlasts a model holder's restart,
    # which a worker waiting on its embeddings sits out.
    stall_s: float = Field(30.0, gt=0)
    stall_grace_s: float = Field(60.0, ge=0)
    retry_after_s: int = Field(2, ge=1)

    api_key: str | None = None
    alt_api_key: str | None = None
    read_key: str | None = None
    alt_read_key: str | None = None
    search_key: str | None = None
    alt_search_key: str | None = None

    @property
    def marks_path(self) -> Path:
        """What the worker tells the search nodes on this host (store/replication/marks.py)."""
        return self.data_dir.resolve() / "replication.marks"

    @property
    def replica_dir(self) -> Path:
        """This api process's replica of the embedded store (made anew at every start)."""
        return self.data_dir.resolve() / "replicas" / f"api-{self.api_index}"

    @property
    def hf_cache_dir(self) -> Path:
        return self.data_dir.resolve() / "hf"

    @property
    def onnx_cache_dir(self) -> Path:
        """ONNX exports of the models, made here on first use."""
        return self.data_dir.resolve() / "onnx"

    @property
    def resolved_model_dir(self) -> Path:
        return self.model_dir or self.data_dir.resolve() / "models"

    @property
    def holds_models(self) -> bool:
        """Whether this encoder process is one of the first K that load models."""
        return self.encoder_index <= self.encoder_models

    @property
    def threads_per_encoder(self) -> int:
        """Model threads of a holder's document lane, so that holders x threads <= cores.

        The query lane adds `query_threads`, busy only while a query is being embedded (and it
        preempts the document threads, which run at a lower priority)."""
        if self.encoder_threads:
            return self.encoder_threads
        holders = min(self.encoder_models, self.encoders)
        return max(1, (os.cpu_count() or 1) // holders)

    @property
    def threads_per_document_call(self) -> int:
        """Intra-op threads of one document batch: the lane's threads over its workers."""
        return max(1, self.threads_per_encoder // self.document_workers)


def load_settings() -> Settings:
    return Settings()


if __name__ == "__main__":
    # docker/entrypoint.sh asks for the default it exports when BRAID_API_PROCESSES is unset:
    # supervisord.conf needs the number itself, for numprocs.
    if sys.argv[1:] != ["api-processes"]:
        sys.exit("usage: python3 -m core.settings api-processes")
    print(default_api_processes(available_cores()))
