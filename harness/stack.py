"""Starts and stops the whole Braid stack the way users do (docker/entrypoint.sh), on free ports."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = REPO_ROOT / "docker" / "entrypoint.sh"
SUPERVISORD_CONF = REPO_ROOT / "supervisord.conf"
READY_PATH = "/v1/health/ready"
DEFAULT_ENV = {"BRAID_ENCODERS": "2", "BRAID_ENCODER_MODELS": "1"}
LOG_TAIL_LINES = 40
# Set to keep the temporary data folders (logs, broker state) after the tests.
KEEP_DATA_ENV = "BRAID_TEST_KEEP_DATA"


def module_children(parent: int, module: str) -> set[int]:
    """PIDs of the live children of process `parent` that run `python -m module` (one that has
    exited and is not reaped yet has no command line)."""
    found: set[int] = set()
    tasks = Path(f"/proc/{parent}/task")
    for task in tasks.iterdir() if parent and tasks.exists() else ():
        children: list[str] = []
        with contextlib.suppress(OSError):
            children = (task / "children").read_text().split()
        for pid in children:
            with contextlib.suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if b"-m" in argv and module.encode() in argv:
                    found.add(int(pid))
    return found


class StackError(RuntimeError):
    """The stack did not start, stop or answer as expected; the message carries the log tails."""


def free_ports(count: int) -> list[int]:
    """Distinct TCP ports that were free a moment ago (all bound at once, then released)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def session_pids(sid: int) -> list[int]:
    """Live (non-zombie) processes of session `sid`: everything the stack's launcher started."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command: state ppid pgrp session ...
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[3]) == sid:
            pids.append(int(entry.name))
    return pids


def alive(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def port_open(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def die_with_parent() -> None:
    """In the child before exec: SIGTERM it if the process that started it dies without cleanup
    (supervisord under a test or a benchmark, the load generator under a benchmark)."""
    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class Stack:
    """One running Braid: supervisord with the repo's config, in a temporary data folder.

    `extra_env` overrides the defaults (BRAID_ENCODERS=2, BRAID_ENCODER_MODELS=1) and the
    generated ports and URLs. BRAID_* variables of the calling environment are not inherited.
    """

    def __init__(self, extra_env: Mapping[str, str] | None = None) -> None:
        # mkdtemp under /tmp keeps the supervisor socket path well under the 108-byte limit.
        self._data_dir = Path(tempfile.mkdtemp(prefix="braid-"))
        api, amqp, redis, epmd, dist = free_ports(5)
        env = {k: v for k, v in os.environ.items() if not k.startswith("BRAID_")}
        env.update(DEFAULT_ENV)
        env.update(
            BRAID_DATA_DIR=str(self._data_dir),
            BRAID_PORT=str(api),
            BRAID_AMQP_URL=f"amqp://guest:guest@127.0.0.1:{amqp}/",
            BRAID_REDIS_URL=f"redis://127.0.0.1:{redis}/0",
            BRAID_EPMD_PORT=str(epmd),
            BRAID_RABBITMQ_DIST_PORT=str(dist),
        )
        env.update(extra_env or {})
        self._env = env
        self._proc: subprocess.Popen[bytes] | None = None
        self._stopped = False
        self.started_at = 0.0

    # --- addresses ----------------------------------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        return dict(self._env)

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._env['BRAID_PORT']}"

    @property
    def amqp_url(self) -> str:
        return self._env["BRAID_AMQP_URL"]

    @property
    def redis_url(self) -> str:
        return self._env["BRAID_REDIS_URL"]

    @property
    def amqp_port(self) -> int:
        return urlsplit(self.amqp_url).port or 5672

    @property
    def redis_port(self) -> int:
        return urlsplit(self.redis_url).port or 6379

    @property
    def supervisord_pid(self) -> int:
        if self._proc is None:
            raise StackError("the stack was not started")
        return self._proc.pid

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self, timeout: float = 180.0, wait_ready: bool = True) -> Stack:
        if self._proc is not None:
            raise StackError("a Stack starts once; make a new one (or restart it)")
        self._launch()
        atexit.register(self.stop)
        if wait_ready:
            try:
                self.wait_ready(timeout)
            except BaseException:
                self.stop()
                raise
        return self

    def restart(self, timeout: float = 180.0) -> None:
        """Stop every process as `docker stop` would (SIGTERM to supervisord), keep the data
        folder and the ports, start the whole stack again and wait until it is ready."""
        if self._proc is None or self._stopped:
            raise StackError("the stack is not running")
        self._terminate(30.0)
        self._launch()
        self.wait_ready(timeout)

    def _launch(self) -> None:
        logs = self._data_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        with open(logs / "entrypoint.log", "ab") as out:
            self._proc = subprocess.Popen(
                [str(ENTRYPOINT)],
                cwd=REPO_ROOT,
                env=self._env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own session and group: stop() can find all of it
                preexec_fn=die_with_parent,
            )
        self.started_at = time.monotonic()

    def wait_ready(self, timeout: float = 180.0) -> None:
        """Poll GET /v1/health/ready until it answers 200."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                self._check_alive()
                try:
                    response = client.get(self.base_url + READY_PATH)
                    if response.status_code == 200:
                        return
                    last = f"HTTP {response.status_code}: {response.text[:200]}"
                except httpx.HTTPError as exc:
                    last = repr(exc)
                time.sleep(0.5)
        raise StackError(
            f"{READY_PATH} not ready after {timeout:.0f}s ({last})\n{self.log_tails()}"
        )

    def wait_for_port(self, port: int, timeout: float = 60.0) -> None:
        """Wait until something accepts TCP connections on 127.0.0.1:`port`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            if port_open(port):
                return
            time.sleep(0.2)
        raise StackError(f"nothing listens on port {port} after {timeout:.0f}s\n{self.log_tails()}")

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM supervisord, wait `timeout`, then SIGKILL whatever is left of its session."""
        if self._proc is None or self._stopped:
            return
        self._stopped = True
        atexit.unregister(self.stop)
        self._terminate(timeout)
        if not os.environ.get(KEEP_DATA_ENV):
            shutil.rmtree(self._data_dir, ignore_errors=True)

    def _terminate(self, timeout: float) -> None:
        """SIGTERM supervisord, wait `timeout`, then SIGKILL whatever is left of its session."""
        assert self._proc is not None
        sid = self._proc.pid
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout)
        # Programs run in process groups of their own (supervisord's setpgrp), all in our session.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(sid, signal.SIGKILL)
        for pid in session_pids(sid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(5)
        self._wait_session_gone(sid, 10.0)

    def _wait_session_gone(self, sid: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while session_pids(sid):
            if time.monotonic() > deadline:
                raise StackError(f"processes of the stack survived SIGKILL: {session_pids(sid)}")
            time.sleep(0.1)

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- supervisor -----------------------------------------------------------------------------

    def ctl(self, *args: str) -> str:
        """Run `supervisorctl -c supervisord.conf ARGS` against this stack; returns its output."""
        result = subprocess.run(
            [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(SUPERVISORD_CONF), *args],
            cwd=REPO_ROOT,
            env=self._env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return (result.stdout + result.stderr).strip()

    def pid(self, program: str) -> int:
        """PID of a program ('api', 'worker', 'rabbitmq', 'encoder:encoder-1', ...); 0 if down."""
        out = self.ctl("pid", program)
        if not out.isdigit():
            raise StackError(f"supervisorctl pid {program}: {out!r}")
        return int(out)

    def child_pids(self, program: str, module: str) -> set[int]:
        """PIDs of the children of `program` that run `python -m module`."""
        return module_children(self.pid(program), module)

    def kill9(self, program: str) -> int:
        """SIGKILL a program, as a crash would; supervisord restarts it. Returns the killed PID.

        The whole process group of the program dies (each program leads its own group): killing
        only RabbitMQ's launcher script would orphan the Erlang VM, which would keep the port.
        """
        pid = self.pid(program)
        if pid == 0:
            raise StackError(f"{program} is not running\n{self.log_tails()}")
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return pid

    @contextlib.contextmanager
    def frozen(self, program: str) -> Iterator[None]:
        """SIGSTOP a program's process group for the block (a hung process), then SIGCONT it."""
        pid = self.pid(program)
        if pid == 0:
            raise StackError(f"{program} is not running\n{self.log_tails()}")
        os.killpg(os.getpgid(pid), signal.SIGSTOP)
        try:
            yield
        finally:
            os.killpg(os.getpgid(pid), signal.SIGCONT)

    def wait_restarted(self, program: str, old_pid: int, timeout: float = 60.0) -> int:
        """Wait until supervisord runs `program` again under a new PID; returns it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid = self.pid(program)
            if pid not in (0, old_pid):
                return pid
            time.sleep(0.2)
        raise StackError(f"{program} was not restarted after {timeout:.0f}s\n{self.log_tails()}")

    # --- logs -----------------------------------------------------------------------------------

    def logs(self, name: str) -> str:
        """The whole log of a program ('api', 'encoder-1', 'rabbitmq', 'supervisord', ...)."""
        path = self._data_dir / "logs" / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def output(self) -> str:
        """What supervisord printed (logs/entrypoint.log): what `make run`'s terminal and `docker
        logs` show, every program's lines prefixed by its name included."""
        return self.logs("entrypoint")

    def log_tails(self, lines: int = LOG_TAIL_LINES) -> str:
        parts = []
        for path in sorted((self._data_dir / "logs").glob("*.log")):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"----- {path.name} (last {len(tail)} lines) -----\n" + "\n".join(tail))
        return "\n".join(parts)

    def _check_alive(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            raise StackError(
                f"supervisord exited with code {self._proc.returncode}\n{self.log_tails()}"
            )


# make_stack(extra_env=None, *, wait_ready=True, timeout=180.0) -> Stack
StackFactory = Callable[..., Stack]
