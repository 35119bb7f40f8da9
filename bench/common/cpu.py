"""CPU seconds per supervisord program of the stack, from /proc, grouped the way the ceiling's table
reports them (api, worker, broker, redis, encoders, other).

Each program counts its whole process tree: RabbitMQ's launcher script with the Erlang VM and its
helpers, the worker with an optimize child if one runs. supervisord counts itself alone, since its
tree is the whole stack. A process's CPU includes what it collected from children it reaped, so a
child that exits inside the window still counts. Programs are mapped to PIDs with `supervisorctl
status` (memory.py), read before and after the window: a PID that changed is a restart,
and the table would be wrong for that program, so the run names it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from bench.common import procs
from bench.common.memory import SUPERVISORD

GROUPS = ("api", "worker", "broker", "redis", "encoders", "other")


def group(program: str) -> str:
    """The table column of a supervisord program ('api-2' -> 'api', 'epmd' -> 'broker')."""
    if program.startswith("api-"):
        return "api"
    if program.startswith("encoder-"):
        return "encoders"
    if program in ("rabbitmq", "epmd"):
        return "broker"
    if program in ("worker", "redis"):
        return program
    return "other"  # supervisord itself, a bundled Qdrant server


def program_cpu(table: Iterable[procs.Proc], roots: Mapping[str, int]) -> dict[str, float]:
    """CPU seconds so far of each root's process tree, from one reading of /proc."""
    trees = procs.program_trees(table, roots, alone=frozenset({SUPERVISORD}))
    found = {name: sum(p.cpu_s for p in tree) for name, tree in trees.items()}
    return found


def spent(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """CPU seconds each program used between two readings; a program absent before counts from 0,
    and none goes negative (a tree that lost a process takes its time with it)."""
    return {name: max(0.0, used - before.get(name, 0.0)) for name, used in after.items()}


def by_group(per_program: Mapping[str, float]) -> dict[str, float]:
    """Programs summed into GROUPS, every group present (0.0 where no program ran)."""
    totals = dict.fromkeys(GROUPS, 0.0)
    for name, used in per_program.items():
        totals[group(name)] += used
    return totals


def restarted(before: Mapping[str, int], after: Mapping[str, int]) -> list[str]:
    """Programs whose PID changed or that went away between two `supervisorctl status` readings."""
    return sorted(name for name, pid in before.items() if after.get(name) != pid)


def read(roots: Mapping[str, int]) -> dict[str, float]:
    return program_cpu(procs.all_procs(), roots)
