"""What the report says about precision: the CPU and the flags that decide it (AVX-512, bfloat16,
AMX), what each `encode()` baseline ran at, and what Braid's encoder picked, read from what it
logged at model load (harness/stack.py keeps the stack's logs in its data folder), not from code:
how the precision is chosen may change, the log says what ran."""

from __future__ import annotations

from pathlib import Path

from harness.stack import Stack

CPUINFO = Path("/proc/cpuinfo")
FLAGS = ("avx512f", "avx512_bf16", "amx_tile", "amx_bf16")
# Encoder log lines that say what a model's lanes run on and why (each lane's timed candidates
# and its choice), or why a precision or runner was not taken.
LOGGED = ("loaded model", " lane (", "bfloat16", "precision", "openvino")
BASELINES = (
    "`encode()` before / after: float32 (defaults: the model as `SentenceTransformer` loads it)",
    "`encode()` on bfloat16: bfloat16 (model cast, `model.to(torch.bfloat16)`)",
)


def cpu_line(cpuinfo: str) -> str:
    """`CPU: <model>; flags: avx512f, amx_bf16` (those of FLAGS present), from /proc/cpuinfo."""
    model, flags = "unknown CPU", set[str]()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model == "unknown CPU":
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    present = ", ".join(flag for flag in FLAGS if flag in flags)
    return f"CPU: {model}; flags: {present or 'none of ' + ', '.join(FLAGS)}"


def machine_cpu() -> str:
    try:
        return cpu_line(CPUINFO.read_text())
    except OSError:
        return "CPU: /proc/cpuinfo unreadable"


def picked(logs: dict[str, str]) -> list[str]:
    """`encoder-1: <line>` for every line of the encoders' logs that says what a lane runs on."""
    return [
        f"{name}: {line.strip()}"
        for name, text in sorted(logs.items())
        for line in text.splitlines()
        if any(word in line.lower() for word in LOGGED)
    ]


def encoder_lines(stack: Stack) -> list[str]:
    """The lines of `picked` from the running stack's encoder logs (read before it stops: its
    data folder goes with it)."""
    folder = stack.data_dir / "logs"
    return picked({path.stem: stack.logs(path.stem) for path in folder.glob("encoder-*.log")})


def dense_notes(lines: list[str]) -> list[str]:
    """Markdown lines for above the dense table: each side's precision and why."""
    notes = ["Precision of the dense table:", ""]
    notes += [f"- {line}" for line in BASELINES]
    notes.append("- Braid: the lanes its encoder picked (documents+queries), as it logged them:")
    notes.append("")
    notes += ["```", *(lines or ["(no encoder logged loading a model)"]), "```", ""]
    return notes
