"""The `wrapper` field: a command prefix such as `nice -n 10` or `numactl -N 0`."""

from __future__ import annotations

from benchlab.workloads.command import find_executable


def wrapper_argv(wrapper: list[str], where: str) -> list[str]:
    if not wrapper:
        return []
    return [find_executable(wrapper[0], where), *wrapper[1:]]
