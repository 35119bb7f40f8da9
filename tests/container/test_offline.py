"""Nothing leaves the box in the container either. The image runs on Docker's default network: a
holder container on the default bridge (its resolv.conf, its route out) owns the network
namespace, nftables counts and drops everything leaving it (tests/integration/egress.py), and
Braid joins it with --network container:. The README quickstart, run in that namespace against
localhost:8234, 30 s idle and `docker stop` then tried no packet off the box (no DNS look-up
either) and wrote no telemetry file, in the data folder (the braid user's HOME) or elsewhere.
Its containers have names of their own and publish no port: the README's `braid` is left alone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.container.conftest import START_S, Container, docker
from tests.integration.egress import Egress
from tests.integration.helpers import wait_until
from tests.readme import quickstart_script

NAME = "braid-offline"
HOLDER = "braid-offline-holder"
HOLD = f"docker run -d --name {HOLDER} --entrypoint sleep braid infinity"
RUN = f"docker run -d --name {NAME} --network container:{HOLDER} -v $PWD/braid-data:/data braid"
IDLE_S = 30.0  # idle traffic (heartbeats, timers, telemetry flushes) is the point of the wait
# Torch's compile cache: written inside the container at start, and never sent anywhere.
LOCAL_CACHE = "/tmp/torchinductor_"


def remove() -> None:
    docker("rm", "-f", NAME, HOLDER, check=False)  # Braid first: it lives in the holder's network


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Container, Egress]]:
    """A folder to run commands from, and the holder's network namespace, counted and dropped
    from before Braid starts."""
    box = Container(tmp_path)
    remove()
    try:
        box.sh(HOLD)
        pid = docker("inspect", "-f", "{{.State.Pid}}", HOLDER)
        egress = Egress(["nsenter", "-t", pid, "-n"], "eth0")
        egress.seal()
        yield box, egress
    finally:
        remove()


def wait_healthy(box: Container) -> None:
    def healthy() -> bool:
        state = json.loads(docker("inspect", "-f", "{{json .State}}", NAME))
        assert state["Running"], f"{NAME} stopped: {state}\n{box.log_tails()}"
        return bool((state.get("Health") or {}).get("Status") == "healthy")

    wait_until(healthy, timeout=START_S, interval=0.5)


def quickstart_in(egress: Egress, box: Container) -> list[str]:
    """The README quickstart as written, run in the container's network namespace."""
    try:
        printed = egress.run("bash", "-c", quickstart_script(), timeout=180)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{box.log_tails()}") from None
    create, write, search = printed.strip().splitlines()
    assert json.loads(create) == json.loads(write) == {"ok": True}, (create, write)
    return [hit["id"] for hit in json.loads(search)["results"]]


def test_default_network_quickstart_and_idle_send_nothing(
    holder: tuple[Container, Egress],
) -> None:
    box, egress = holder
    # A way off the box to try: the default bridge, its default route and nameserver.
    networks = json.loads(docker("inspect", "-f", "{{json .NetworkSettings.Networks}}", HOLDER))
    assert list(networks) == ["bridge"], networks
    assert egress.run("ip", "route").startswith("default via"), egress.run("ip", "route")
    box.sh(RUN)
    wait_healthy(box)
    assert quickstart_in(egress, box)[0] == "gazpacho"
    time.sleep(IDLE_S)
    box.sh(f"docker stop {NAME}")  # its shutdown counts too

    tally = egress.tally()
    added = [line.split(" ", 1)[1] for line in docker("diff", NAME).splitlines() if line[0] == "A"]
    elsewhere = [path for path in added if not path.startswith(LOCAL_CACHE)]
    in_home = sorted(
        path.name
        for path in box.data.iterdir()
        if path.name.startswith(".") or path.name == "intel"
    )
    leaks = []
    if tally.leaked:
        leaks.append(f"packets tried off the box: {tally.describe()}")
    if elsewhere or in_home:
        leaks.append(f"written in the container: {elsewhere}, in /data (HOME): {in_home}")
    assert not leaks, "\n".join(leaks) + f"\n{box.log_tails()}"
