"""Closed vocabularies shared by every process."""

from enum import StrEnum


class VectorType(StrEnum):
    DENSE_MODEL = "dense_model"
    SPARSE_MODEL = "sparse_model"
    WMTR = "wmtr"
    FULL_TEXT = "full_text"
    TRIGRAMS = "trigrams"
    WHITESPACE = "whitespace"
    DENSE_CUSTOM = "dense_custom"
    SPARSE_CUSTOM = "sparse_custom"
    NOOP = "noop"

    @property
    def is_dense(self) -> bool:
        return self in (VectorType.DENSE_MODEL, VectorType.DENSE_CUSTOM)

    @property
    def is_lexical(self) -> bool:
        return self in LEXICAL_TYPES

    @property
    def is_custom(self) -> bool:
        """The client brings the vectors (documents' custom_vectors, queries' custom_vectors)."""
        return self in (VectorType.DENSE_CUSTOM, VectorType.SPARSE_CUSTOM)

    @property
    def uses_model(self) -> bool:
        return self in (VectorType.DENSE_MODEL, VectorType.SPARSE_MODEL)


LEXICAL_TYPES = frozenset(
    {VectorType.WMTR, VectorType.FULL_TEXT, VectorType.TRIGRAMS, VectorType.WHITESPACE}
)


class IndexField(StrEnum):
    NAME = "name"
    DESCRIPTION = "description"
    CONTENT = "content"


class DenseDistance(StrEnum):
    COSINE = "cosine"
    DOT = "dot"
    EUCLID = "euclid"


class FusionMode(StrEnum):
    RRF = "rrf"
    LINEAR = "linear"


class OpType(StrEnum):
    UPSERT = "upsert"
    DELETE = "delete"


class MetadataType(StrEnum):
    """The type of a metadata index, and of a value the `{"value", "type"}` wrapper carries."""

    STRING = "string"
    INTEGER = "integer"
    FLOAT = "float"
    BOOLEAN = "boolean"
    DATETIME = "datetime"


class DocumentStatus(StrEnum):
    INDEXED = "indexed"
    QUEUED = "queued"
    REQUEUED = "requeued"
    FAILED = "failed"


class EncoderRole(StrEnum):
    MODEL_HOLDER = "model_holder"
    ROUTER = "router"


class EncoderBackend(StrEnum):
    """How a model holder runs dense models; `auto` is ONNX Runtime on CPU, torch on CUDA."""

    AUTO = "auto"
    TORCH = "torch"
    ONNX = "onnx"


class EncoderPrecision(StrEnum):
    """The arithmetic of the lanes on torch on CPU: `auto` times float32 and bfloat16 at load and
    keeps the faster that matches float32 (encoder/runners.py)."""

    AUTO = "auto"
    FP32 = "fp32"
    BF16 = "bf16"


class EmbedOutput(StrEnum):
    """What an embed request asks the model for: a dense embedding or a SPLADE sparse vector."""

    DENSE = "dense"
    SPARSE = "sparse"


class EmbedKind(StrEnum):
    """Query work goes before document work (DESIGN: query path never waits behind bulk)."""

    QUERY = "query"
    DOCUMENT = "document"


class UnavailableReason(StrEnum):
    """Why Braid answered 503: in the log, the `braid_unavailable_total` metric and the
    `X-Braid-Reason` header. Every cause is transient; README "API notes" has the table."""

    QUEUE_FULL = "queue_full"  # a bounded queue refused the message (documents, search, RPC)
    BROKER_DOWN = "broker_down"  # RabbitMQ unreachable, or the connection dropped mid-call
    BROKER_UNCONFIRMED = "broker_unconfirmed"  # no publisher confirm within the deadline
    REDIS_DOWN = "redis_down"
    DEPENDENCY_DOWN = "dependency_down"  # another socket failed or timed out under a handler
    NO_MODEL_HOLDER = "no_model_holder"  # no encoder holding the model is alive
    ENCODER_FAILED = "encoder_failed"  # an encoder's embedding lane crashed
    STARTING = "starting"  # the search node is still loading its replica
    REPLICA_BEHIND = "replica_behind"  # the replica lacks the newest acknowledged write
    DOCUMENTS_LOCKED = "documents_locked"  # another batch holds the documents' locks
    STOPPING = "stopping"  # the answering process (api or encoder) is stopping
    UNCLASSIFIED = "unclassified"  # a cause nobody named (a peer too old to send its reason)
