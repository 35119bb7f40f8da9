"""Reading Braid's Prometheus exposition in a benchmark: a histogram's quantile over a window
(as Prometheus's histogram_quantile computes it), and promtool's verdict on the text."""

from __future__ import annotations

import math
import re
import shutil
import subprocess

SEARCH_HISTOGRAM = "braid_search_duration_seconds"
_BUCKET = re.compile(r'^(\w+)_bucket\{(?:[^}]*,)?le="([^"]+)"\} (\S+)$', re.MULTILINE)


def buckets(text: str, histogram: str = SEARCH_HISTOGRAM) -> dict[float, float]:
    """Cumulative count per upper bound, summed over every series (nodes, collections)."""
    out: dict[float, float] = {}
    for name, le, value in _BUCKET.findall(text):
        if name == histogram:
            bound = math.inf if le == "+Inf" else float(le)
            out[bound] = out.get(bound, 0.0) + float(value)
    return out


def quantile_ms(q: float, before: dict[float, float], after: dict[float, float]) -> float:
    """The q-quantile in ms of what was observed between two scrapes: linear inside the bucket
    it falls in, like histogram_quantile. NaN when nothing was observed."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    if not counts or counts[-1] <= 0:
        return math.nan
    rank = q * counts[-1]
    lower, below = 0.0, 0.0
    for bound, count in zip(bounds, counts, strict=True):
        if count >= rank:
            if math.isinf(bound):
                return lower * 1000.0  # past the last finite bound: its value is all we know
            inside = count - below
            fraction = (rank - below) / inside if inside > 0 else 1.0
            return (lower + (bound - lower) * fraction) * 1000.0
        lower, below = bound, count
    return math.nan


def promtool_problems(text: str) -> str:
    """What `promtool check metrics` says ("" when clean); "promtool missing" without it."""
    promtool = shutil.which("promtool")
    if promtool is None:
        return "promtool missing (Debian package prometheus; docker/install.sh installs it)"
    done = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    return (done.stdout + done.stderr).strip() if done.returncode else ""
