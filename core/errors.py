"""One error hierarchy for every process; app/http/errors.py maps it to HTTP."""

from __future__ import annotations

from redis import exceptions as redis_errors

from core.enums import UnavailableReason


class BraidError(Exception):
    """A failure with a message a client may read. `status` is its HTTP meaning."""

    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(BraidError):
    status = 400


class NotFound(BraidError):
    status = 404


class CollectionNotFound(NotFound):
    """The one answer for a collection that does not exist (API.md §1)."""

    def __init__(self, message: str = "Configuration not found") -> None:
        super().__init__(message)


class Conflict(BraidError):
    status = 409


class Unavailable(BraidError):
    """Overloaded or a dependency is down: the client should retry later. `reason` says which,
    in the api's log and metrics (the message says it to the client)."""

    status = 503
    reason = UnavailableReason.UNCLASSIFIED

    def __init__(
        self, message: str, retry_after_s: int = 2, reason: UnavailableReason | None = None
    ) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        if reason is not None:
            self.reason = reason


class QueueFull(Unavailable):
    reason = UnavailableReason.QUEUE_FULL


class RpcTimeout(BraidError):
    status = 504


class InternalError(BraidError):
    status = 500


# What a lost dependency raises: a Redis or socket failure means "retry later", not a bug.
REDIS_DOWN: tuple[type[Exception], ...] = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    redis_errors.BusyLoadingError,
    redis_errors.ReadOnlyError,
)
DEPENDENCY_DOWN: tuple[type[Exception], ...] = (*REDIS_DOWN, ConnectionError, TimeoutError)


def dependency_error(exc: BaseException, retry_after_s: int = 2) -> Unavailable | None:
    """The 503 for an exception that means a dependency (Redis, a socket) is down, else None."""
    if isinstance(exc, Unavailable):
        return exc
    name = type(exc).__name__
    if isinstance(exc, REDIS_DOWN):
        return Unavailable(
            f"redis is unavailable ({name}); retry later",
            retry_after_s,
            UnavailableReason.REDIS_DOWN,
        )
    if isinstance(exc, DEPENDENCY_DOWN):
        return Unavailable(
            f"a dependency is unavailable ({name}); retry later",
            retry_after_s,
            UnavailableReason.DEPENDENCY_DOWN,
        )
    return None


_BY_STATUS: dict[int, type[BraidError]] = {
    cls.status: cls for cls in (InvalidInput, NotFound, Conflict, Unavailable, RpcTimeout)
}


def error_for_status(status: int, message: str, reason: object = None) -> BraidError:
    """Rebuild an error that crossed the bus as (status, message) and, for a 503, its reason
    (one this process does not know, or none from an older peer, is unclassified)."""
    cls = _BY_STATUS.get(status, InternalError)
    if cls is Unavailable:
        return Unavailable(message, reason=_known_reason(reason))
    return cls(message)


def _known_reason(value: object) -> UnavailableReason | None:
    try:
        return UnavailableReason(str(value))
    except ValueError:
        return None
