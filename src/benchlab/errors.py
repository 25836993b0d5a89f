"""One error hierarchy for the whole core.

The core raises these and never exits; the CLI turns each into one line on
stderr and the class's exit code, so every failure a user can cause reads
the same way and scripts can tell bad input from a broken environment.
"""

from __future__ import annotations


class BenchlabError(Exception):
    """Base of every error benchlab reports to a user."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class SpecError(BenchlabError):
    """Bad input: a spec, a flag or a name. Nothing has run."""

    exit_code = 2

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None) -> None:
        super().__init__(f"{where}: {message}" if where else message, hint=hint)
        self.where = where


class EnvironmentProblem(BenchlabError):
    """The machine lacks something the experiment needs: a library, a privilege, a tool."""

    exit_code = 3


class StaleJournal(EnvironmentProblem):
    """Knob writes of an earlier experiment were never undone."""


class StoreError(BenchlabError):
    """The results database refused or lacks what was asked."""

    exit_code = 4


class DatabaseUnavailable(StoreError):
    """The database could not be reached or took no write (a lost server, a full disk): a
    passing state, unlike a refusal of what was written, so a fleet's task is tried again."""


class AlreadyStored(StoreError):
    """A run's key (experiment, host, workload, variant, block, warm-up) is stored already: another
    process on this host stored it meanwhile (a fleet's redelivered block, a second --resume)."""


class WorkloadFailed(BenchlabError):
    """A run did not produce trustworthy metrics; stored as failed, never raised past the runner.
    `process_exit_code` is what the workload's process exited with (stored with the run), not
    `exit_code`, the one benchlab itself exits with."""

    def __init__(
        self, message: str, *, process_exit_code: int | None = None, stderr_tail: str = "", status: str = "failed"
    ) -> None:
        super().__init__(message)
        self.process_exit_code = process_exit_code
        self.stderr_tail = stderr_tail
        self.status = status  # how the run is stored: failed | timeout


class RunsFailed(BenchlabError):
    """Runs of the experiment failed or timed out (or benchmarks inside them did): the report is
    printed and every run stored, but a script or CI job must be able to notice."""

    exit_code = 5


class Undecided(BenchlabError):
    """`benchlab bisect` ended without a confirmed answer (a step stayed unclear, or the boundary
    did not reproduce the change): its evidence is printed, and a script must not read it as found."""

    exit_code = 6


class Interrupted(BenchlabError):
    """The user stopped the experiment (Ctrl-C or SIGTERM); stored runs are kept, knobs restored."""

    exit_code = 130
