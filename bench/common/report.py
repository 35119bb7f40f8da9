"""What a benchmark run found, as a markdown section appended to docs/benchmarks.md (and its
rows as CSV beside it)."""

from __future__ import annotations

import csv
import os
import platform
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return 0.0


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "absent"


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} cores ({_cpu_model()}), {_memory_gib():.0f} GiB, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"torch {_version('torch')}, onnxruntime {_version('onnxruntime')}, "
        f"openvino {_version('openvino')}, "
        f"sentence-transformers {_version('sentence-transformers')}; load average at start {load}"
    )


@dataclass
class Report:
    title: str
    lines: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    machine: str = field(default_factory=machine)
    command: str = field(kw_only=True)  # as a reader would type it: `python3 -m bench.… …`
    runs_heading: str = field(kw_only=True)  # the "## " heading its runs go under

    def text(self, line: str = "") -> None:
        self.lines.append(line)

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        self.lines.append("| " + " | ".join(header) + " |")
        self.lines.append("|" + "---|" * len(header))
        self.lines.extend("| " + " | ".join(row) + " |" for row in rows)
        self.lines.append("")

    def markdown(self) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.started))
        minutes = (time.time() - self.started) / 60
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        head = [
            f"### {stamp}: {self.title}",
            "",
            f"- command: `{self.command}`",
            f"- machine: {self.machine}; load average at the end {load}",
            f"- took {minutes:.1f} min",
            "",
        ]
        return "\n".join(head + self.lines).rstrip() + "\n"

    def append_to(self, path: Path = DOC) -> None:
        current = path.read_text() if path.exists() else "# Benchmarks\n"
        if self.runs_heading not in current:
            current = current.rstrip() + f"\n\n{self.runs_heading}\n\nNewest last.\n"
        # A section goes at the end of its heading's part (up to the next "## " heading).
        start = current.index(self.runs_heading)
        after = current.find("\n## ", start + len(self.runs_heading))
        end = len(current) if after < 0 else after
        section = "\n\n" + self.markdown()
        path.write_text(current[:end].rstrip() + section + current[end:].rstrip() + "\n")


def write_csv(path: Path, rows: list[dict[str, object]]) -> None:
    """Rows of one table, the first row's keys as the header; nothing for no rows."""
    if not rows:
        return
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
