"""docker/compose.yaml, checked where it can be here: a real compose implementation (Debian's
docker-compose 1.29) accepts it, and its RabbitMQ and Redis services turn healthy from images
built from Debian's packages (docker/compose/), reachable by a Braid container on the project's
network with the file's own URLs. The Braid services need the Qdrant server, which cannot be had
here (README, "GPU image and distributed deployment")."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.container.conftest import IMAGE, REPO, docker
from tests.integration.helpers import wait_until

COMPOSE = ["docker-compose", "-p", "braidcheck", "-f", "docker/compose.yaml"]
IMAGES = {"rabbitmq": "braid-compose-rabbitmq", "redis": "braid-compose-redis"}
ENV = {
    **os.environ,
    "BRAID_RABBITMQ_IMAGE": IMAGES["rabbitmq"],
    "BRAID_REDIS_IMAGE": IMAGES["redis"],
}


def compose(*args: str, timeout: float = 300) -> str:
    done = subprocess.run(
        [*COMPOSE, *args], cwd=REPO, env=ENV, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"docker-compose {' '.join(args)}: {done.stderr}"
    return done.stdout


def _base() -> str:
    """The base `make image` used: the bootstrapped one where no registry answered."""
    local = subprocess.run(
        ["docker", "image", "inspect", "braid-debian:bookworm"], capture_output=True
    )
    return "braid-debian:bookworm" if local.returncode == 0 else "debian:bookworm-slim"


@pytest.fixture
def services() -> Iterator[None]:
    for service, tag in IMAGES.items():
        dockerfile = f"docker/compose/{service}.Dockerfile"
        docker(
            "build",
            "-q",
            "-f",
            dockerfile,
            "--build-arg",
            f"BASE={_base()}",
            "-t",
            tag,
            str(REPO),
            timeout=600,
        )
    try:
        compose("up", "-d", "rabbitmq", "redis")
        yield
    finally:
        compose("down", "-v", "--remove-orphans")


def test_a_real_compose_accepts_the_file() -> None:
    config = compose("config")
    for service in ("rabbitmq", "redis", "qdrant", "api", "encoder", "worker"):
        assert f"\n  {service}:\n" in config, config


PROBE = """
import asyncio, json, os
from core.bus import Bus
from core.redis_client import connect_redis

async def main():
    bus = await Bus.connect(os.environ["BRAID_AMQP_URL"], retry_for_s=30)
    await bus.close()
    redis = await connect_redis(os.environ["BRAID_REDIS_URL"], retry_for_s=30)
    pong = await redis.ping()
    await redis.aclose()
    print(json.dumps({"broker": True, "redis": pong}))

asyncio.run(main())
"""


def test_rabbitmq_and_redis_services_run_from_debian_built_images(services: None) -> None:
    def healthy() -> bool:
        ids = [compose("ps", "-q", service).strip() for service in IMAGES]
        states = [docker("inspect", "-f", "{{.State.Health.Status}}", cid) for cid in ids if cid]
        return states == ["healthy", "healthy"]

    wait_until(healthy, timeout=180, interval=1)
    # A Braid container on the project's network, with the compose file's own URLs.
    config = compose("config")
    env = {
        key: value
        for key, value in (
            line.strip().split(": ", 1) for line in config.splitlines() if ": " in line
        )
        if key in ("BRAID_AMQP_URL", "BRAID_REDIS_URL")
    }
    answer = docker(
        "run", "--rm", "-i", "--network", "braidcheck_default",
        "-e", f"BRAID_AMQP_URL={env['BRAID_AMQP_URL']}",
        "-e", f"BRAID_REDIS_URL={env['BRAID_REDIS_URL']}",
        "-w", "/braid", "--entrypoint", "python3", IMAGE, "-c", PROBE,
        timeout=180,
    )  # fmt: skip
    assert json.loads(answer.splitlines()[-1]) == {"broker": True, "redis": True}
