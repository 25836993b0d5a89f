"""The launcher's account of one run, typed: the mirror of `Account` in probe/src/launch.rs
(field for field, in its order), validated once where benchlab reads the launcher's JSON
(`measure.process.finished_from_account`, for one-shot, served and remote runs alike).

A field missing, unknown or of another type refuses the whole account, as one of another
protocol is: an account without `wall_ns` must never be stored as a run of zero seconds."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, ValidationError

from benchlab.errors import EnvironmentProblem

ACCOUNT_PROTOCOL = 1  # the launcher's ACCOUNT_PROTOCOL (probe/src/launch.rs); both change together
REINSTALL = "reinstall benchlab so that its launcher is built from the same source"

Count = Annotated[StrictInt, Field(ge=0)]  # wait4's counts and nanoseconds: JSON integers, never negative


class Account(BaseModel):
    """What `benchlab-launch` reports about one run; every field is present, null where the
    launcher has nothing (see docs/protocol.md, "The launcher")."""

    model_config = ConfigDict(extra="forbid", frozen=True)  # strict types field by field: a JSON list is a tuple

    protocol: StrictInt
    wall_ns: Count  # fork to wait4's return, taken in native code
    user_ns: Count  # wait4's rusage of the process and every descendant it waited for
    sys_ns: Count
    max_rss_kib: Count
    minor_faults: Count
    major_faults: Count
    voluntary_switches: Count
    involuntary_switches: Count
    exit_code: StrictInt | None  # one of the two is set: how the process ended
    signal: StrictInt | None
    exec_error: StrictStr | None  # why the command could not be executed (exec's error)
    counters: dict[str, StrictFloat]  # perf event counts by name (--perf-counters)
    counters_note: StrictStr | None  # why some or all are missing
    mapped: tuple[StrictStr, ...] | None  # the files mapped executable (--mapped); None: not seen
    mapped_note: StrictStr | None
    tree_peak_kib: Count | None  # the whole tree's memory peak, from its cgroup
    tree_peak_note: StrictStr | None
    memory: dict[str, StrictFloat]  # RSS/PSS means and peaks over the run's samples


def read_account(fields: dict[str, Any]) -> Account:
    """The launcher's JSON object as an Account: one of another protocol, or with a field
    missing, unknown or mistyped, is refused in one line (the launcher is not this build's)."""
    version = fields.get("protocol")
    if version != ACCOUNT_PROTOCOL:
        raise EnvironmentProblem(
            f"the launcher speaks account protocol {version}, this benchlab reads {ACCOUNT_PROTOCOL}", hint=REINSTALL
        )
    try:
        return Account.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise EnvironmentProblem(f"the launcher sent a malformed account: {where}: {first['msg']}", hint=REINSTALL) from None
