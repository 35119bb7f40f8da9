"""py-spy in a benchmark: record a process's stacks, and read them as self and inclusive time."""

from __future__ import annotations

import asyncio
from pathlib import Path


async def record(pid: str, seconds: float, out: Path) -> str:
    """Sample `pid` for `seconds` into `out` (collapsed stacks); "" or what went wrong."""
    command = [
        "py-spy", "record", "--pid", pid, "--duration", str(int(seconds)),
        "--rate", "100", "--format", "raw", "--output", str(out), "--nonblocking",
    ]  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    if proc.returncode != 0 or not out.exists():
        return f"py-spy failed: {err.decode(errors='replace')[-300:]}"
    return ""


def summarize(collapsed: str, top: int = 12) -> list[str]:
    """Self and inclusive time by function from py-spy's collapsed stacks ("a;b;c count")."""
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        own[frames[-1]] = own.get(frames[-1], 0) + count
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + count
    if not total:
        return ["no samples"]
    lines = [f"{total} samples; self time:"]
    for frame, count in sorted(own.items(), key=lambda item: -item[1])[:top]:
        lines.append(f"  {count / total:6.1%}  {frame}")
    lines.append("inclusive time (Braid's own code):")
    ours = [
        (frame, count)
        for frame, count in inclusive.items()
        if any(f"({part}/" in frame for part in ("app", "worker", "encoder", "core"))
    ]
    for frame, count in sorted(ours, key=lambda item: -item[1])[:top]:
        lines.append(f"  {count / total:6.1%}  {frame}")
    return lines
