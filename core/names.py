"""Every queue name, queue argument and Redis key, in one place."""

from __future__ import annotations

from core.enums import EmbedKind

DOCUMENTS_QUEUE = "braid.documents"
SEARCH_QUEUE = "braid.rpc.search"
WORKER_RPC_QUEUE = "braid.rpc.worker"
# Fanout of every store write the worker made, in order: each search node keeps a replica with it.
REPLICATION_EXCHANGE = "braid.replication"


def embed_queue(kind: EmbedKind) -> str:
    """Model work any encoder takes; an encoder without the model forwards it."""
    return f"braid.embed.{kind}"


def holder_queue(kind: EmbedKind) -> str:
    """Model work only model holders consume (the target of forwarding)."""
    return f"braid.embed.holders.{kind}"


def encoder_queue(index: int) -> str:
    """One encoder's own queue, so a caller can reach a chosen encoder."""
    return f"braid.embed.encoder.{index}"


class RedisKeys:
    """Redis key names; every process builds keys through here."""

    prefix = "braid"

    @classmethod
    def collections(cls) -> str:
        return f"{cls.prefix}:collections"

    @classmethod
    def incarnations(cls) -> str:
        """Hash collection name -> a token new each time a collection of that name is made."""
        return f"{cls.prefix}:collections:incarnations"

    @classmethod
    def queue_items(cls, collection: str) -> str:
        """Hash queue_id -> status entry of every queued/failed item of a collection."""
        return f"{cls.prefix}:q:{collection}:items"

    @classmethod
    def doc_items(cls, collection: str, doc_id: str) -> str:
        """Set of the queue_ids pending for one document."""
        return f"{cls.prefix}:q:{collection}:doc:{doc_id}"

    @classmethod
    def queue_counts(cls, collection: str) -> str:
        return f"{cls.prefix}:q:{collection}:counts"

    @classmethod
    def tombstones(cls, collection: str) -> str:
        """Hash doc_id -> newest delete timestamp, so older upserts never resurrect."""
        return f"{cls.prefix}:tomb:{collection}"

    @classmethod
    def indexed(cls, collection: str) -> str:
        """Hash doc_id -> timestamp of the stored version (status answers without the store)."""
        return f"{cls.prefix}:indexed:{collection}"

    @classmethod
    def doc_lock(cls, collection: str, doc_id: str) -> str:
        return f"{cls.prefix}:lock:{collection}:{doc_id}"

    @classmethod
    def lexical_stats(cls, collection: str) -> str:
        """Hash '<slot>:len' / '<slot>:n' -> summed token length and document count."""
        return f"{cls.prefix}:lexstats:{collection}"

    @classmethod
    def encoders(cls) -> str:
        """Hash encoder index -> its heartbeat record (JSON): the model-holder registry."""
        return f"{cls.prefix}:encoders"

    @classmethod
    def heartbeat(cls, role: str) -> str:
        return f"{cls.prefix}:hb:{role}"

    @classmethod
    def replication_epoch(cls) -> str:
        """Bumped by every worker start: a replica of an older epoch must be copied again."""
        return f"{cls.prefix}:replication:epoch"

    @classmethod
    def searchers(cls) -> str:
        """Hash api index -> its search node's heartbeat record (JSON)."""
        return f"{cls.prefix}:searchers"

    @classmethod
    def progress(cls) -> str:
        """Hash process name -> its watchdog record (JSON, core.watchdog): what stalls it."""
        return f"{cls.prefix}:progress"

    @classmethod
    def metrics_nodes(cls) -> str:
        """Hash node id -> that process's metrics state (JSON, core.metrics)."""
        return f"{cls.prefix}:metrics:nodes"

    @classmethod
    def metrics_snapshot(cls, slot: int) -> str:
        """Every node's counters as they were at unix time `slot` (JSON, written once, expires)."""
        return f"{cls.prefix}:metrics:snap:{slot}"
