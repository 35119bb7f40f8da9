"""Which queues an encoder consumes, and what it announces, follow from its role."""

from __future__ import annotations

import os
import time

from core.enums import EmbedKind, EncoderRole
from core.holders import choose_route
from core.names import embed_queue, encoder_queue, holder_queue
from core.settings import Settings
from core.topology import encoder_queue_spec
from encoder.routing import Heartbeat, consumed_queues, role_of


def settings_for(index: int) -> Settings:
    return Settings(encoders=3, encoder_models=1, encoder_index=index)


def test_the_first_k_encoders_hold_models_and_the_rest_route() -> None:
    assert [role_of(settings_for(i)) for i in (1, 2, 3)] == [
        EncoderRole.MODEL_HOLDER,
        EncoderRole.ROUTER,
        EncoderRole.ROUTER,
    ]


def test_a_holder_consumes_the_shared_holder_and_own_queues() -> None:
    assert set(consumed_queues(settings_for(1))) == {
        embed_queue(EmbedKind.QUERY),
        embed_queue(EmbedKind.DOCUMENT),
        holder_queue(EmbedKind.QUERY),
        holder_queue(EmbedKind.DOCUMENT),
        encoder_queue(1),
    }


def test_a_router_never_consumes_the_holder_queues() -> None:
    assert set(consumed_queues(settings_for(2))) == {
        embed_queue(EmbedKind.QUERY),
        embed_queue(EmbedKind.DOCUMENT),
        encoder_queue(2),
    }


def test_an_encoders_own_queue_is_bounded_and_expires_with_the_rpc_timeout() -> None:
    spec = encoder_queue_spec(Settings(rpc_timeout_s=7), 3)
    assert spec.name == encoder_queue(3) and not spec.durable
    assert spec.arguments["x-overflow"] == "reject-publish"
    assert spec.arguments["x-message-ttl"] == 7000


def test_a_heartbeat_announces_role_models_pid_and_now() -> None:
    beat = Heartbeat(None, 2, EncoderRole.MODEL_HOLDER, lambda: ["m"])  # type: ignore[arg-type]
    record = beat.record()
    assert (record.index, record.role, record.models, record.pid) == (
        2,
        EncoderRole.MODEL_HOLDER,
        ["m"],
        os.getpid(),
    )
    assert abs(record.last_seen - time.time()) < 5


def test_a_fresh_holder_heartbeat_makes_callers_skip_the_router_hop() -> None:
    holder = Heartbeat(None, 1, role_of(settings_for(1)), list).record()  # type: ignore[arg-type]
    router = Heartbeat(None, 2, role_of(settings_for(2)), list).record()  # type: ignore[arg-type]
    route = choose_route(EmbedKind.QUERY, [holder, router], time.time())
    assert route.queue == holder_queue(EmbedKind.QUERY) and route.holders == (1,)
    # The router consumes the queue the caller falls back to, never the one it skips to.
    assert route.queue not in consumed_queues(settings_for(2))
