"""What a worker agrees to run: built-in workloads always, other programs only from its own
allow-list, a shell only when its operator said so, and machine state only when allowed.

A task's spec is signed by the driver's key, but a worker's machine belongs to whoever runs the
worker: the allow-list is that owner's word on what a queue may start there. Every program a
spec names is checked (a workload's command or Google Benchmark binary, its setup and clean
steps, a variant's wrapper and background load) as this machine resolves it on the worker's own
PATH, which a spec may not change. Only the program itself is checked: allowing one that runs
others (`env`, `make`, `python3`, `taskset`) allows what it runs, as `--allow-shell` does.
A variant's environment is an allow-list of variable names (`DEFAULT_ENV`, extended by the
operator's `--allow-env`): a name nobody listed is refused, and so is, always, one that makes a
loader, a shell, an interpreter, a runtime or a VCS run code (`CODE_VARIABLES`: with only `git`
allowed, `GIT_CONFIG_*` would run a shell command through `core.fsmonitor`); and so are knobs
that name a program the kernel starts as root. Knobs, memory
pressure and swap, containers (a root file system of the spec's choosing) and vm guests (a
kernel, its command line and modules of the spec's choosing) need `--allow-machine-state`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from benchlab.errors import SpecError
from benchlab.spec.models import ExperimentSpec
from benchlab.variants.knobs import KERNEL_HELPER, kernel_helper

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"})
# Variables a task may set without the operator's word: each tunes how a program uses the
# machine (threads, an allocator's arenas, glibc's tunables, the locale) and none names code, a
# file of code or a configuration that can name some. `NAME*` stands for every name it starts.
DEFAULT_ENV = (
    "GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_ARENA_TEST", "MALLOC_CHECK_", "MALLOC_MMAP_MAX_",
    "MALLOC_MMAP_THRESHOLD_", "MALLOC_PERTURB_", "MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_",
    "OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES", "OMP_WAIT_POLICY", "OMP_DYNAMIC", "OMP_SCHEDULE",
    "OMP_STACKSIZE", "GOMAXPROCS", "GOGC", "GOMEMLIMIT", "RAYON_NUM_THREADS", "TZ", "LANG", "LANGUAGE", "LC_*",
)  # fmt: skip
# Variables that make a loader, a shell, an interpreter, a runtime, a compiler or a VCS run code
# (or read a configuration, a search path or options that can name some): never allowed, not
# even by an operator's `--allow-env` pattern that covers them. git reads commands from
# GIT_CONFIG_*, GIT_SSH_COMMAND, GIT_EXTERNAL_DIFF, GIT_DIR's config...; every program reads
# $HOME's dotfiles; a compiler runs what CC names and loads what -fplugin= names.
CODE_VARIABLES = frozenset({
    "IFS", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "ZDOTDIR", "BROWSER", "EDITOR",
    "VISUAL", "CLASSPATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "OMP_TOOL", "OMP_TOOL_LIBRARIES",
    "CC", "CXX", "CPP", "FC", "AR", "AS", "LD", "NM", "RANLIB", "STRIP", "OBJCOPY", "YACC", "LEX", "M4", "CPATH",
    "MFLAGS", "LESSOPEN", "LESSCLOSE", "NLSPATH", "LOCPATH",
})  # fmt: skip
CODE_PREFIXES = (
    "LD_", "GIT_", "PERL", "RUBY", "NODE_", "LUA_", "OPENSSL_", "PYTHON", "DOTNET_", "CORECLR_", "COMPLUS_", "JULIA_",
    "RUSTC", "CARGO", "RUSTUP", "GCC_", "COMPILER_", "MAKE", "PHP", "R_", "TCL", "TK_", "GUILE_", "ERL_", "GEM_",
    "BUNDLE_", "ELECTRON_", "HG", "SSH_", "SUDO_", "XDG_", "GCONV_", "MANPAGER", "GOFLAGS", "CGO_",
    "GOTOOLCHAIN", "GOPROXY", "GOPATH", "GOROOT", "GOENV", "PKG_CONFIG", "QT_PLUGIN", "GTK_", "GIO_", "DBUS_",
)  # fmt: skip
# Words of a name (between underscores, or at its end) that say it names code, a place code is
# looked for, a configuration or options: `JULIA_DEPOT_PATH`, `MAVEN_OPTS`, `HGRCPATH`, `PHPRC`,
# `R_PROFILE_USER`, `TCLLIBPATH`, `RUSTC_WRAPPER`... The defaults above hold none of them.
CODE_WORDS = frozenset({
    "PATH", "PATHS", "OPTS", "OPTIONS", "OPT", "FLAGS", "HOOK", "HOOKS", "LIB", "LIBS", "LIBRARY", "LIBRARIES",
    "INIT", "PROFILE", "RC", "CONF", "CONFIG", "CFG", "DIR", "DIRS", "HOME", "ROOT", "PLUGIN", "PLUGINS", "PRELOAD",
    "COMMAND", "CMD", "WRAPPER", "EDITOR", "PAGER", "SHELL", "EXEC", "EXECUTABLE", "STARTUP", "ASKPASS", "DEPS",
    "LOADER", "AGENT", "MODULE", "MODULES", "INCLUDE", "EXTENSION", "EXTENSIONS", "BIN", "TOOL", "TOOLS", "PREFIX",
    "PROGRAM", "PROG", "SCRIPT", "FILE", "ENV", "ENVIRON", "USER", "SITE",
})  # fmt: skip
_CODE_ENDINGS = ("PATH", "RC", "DIR", "FLAGS", "OPT", "OPTS", "LIB", "INIT", "CONF", "HOME", "PROFILE")
_ENV_ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
_ENV_FAMILY = re.compile(r"[A-Za-z][A-Za-z0-9]+_\*|LC_\*")  # a program's own family, `ZSTD_*`: never `*`, `P*`


def runs_code(name: str) -> bool:
    """Whether a variable makes some program run code of its value's choosing (or may: a name
    whose words say it names a path, options or a configuration is taken to)."""
    upper = name.upper()
    words = set(filter(None, upper.split("_")))
    return upper in CODE_VARIABLES or upper.startswith(CODE_PREFIXES) or bool(words & CODE_WORDS) or upper.endswith(_CODE_ENDINGS)


def _covers(pattern: str, name: str) -> bool:
    return name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern


def unfleetable(spec: ExperimentSpec) -> str | None:
    """Why a fleet cannot run a spec, if it cannot: asked by the driver before publishing and by
    each worker before running."""
    if spec.until_decided is not None:
        return "a fleet runs a fixed number of blocks; --until-decided runs on one machine"
    for i, variant in enumerate(spec.variants):
        if variant.environment.kind == "ssh":
            return f"variants[{i}] runs over ssh; on a fleet each worker runs every variant itself"
    return None


class Refused(Exception):
    """A task this worker will not run; the reason is stored with the attempt and logged."""


def _resolved(program: str, cwd: str | None) -> Path | None:
    """Where a program named in a spec is on this machine, symlinks followed (None: nowhere)."""
    if "/" in program:
        path = Path(cwd or ".", program) if not program.startswith("/") else Path(program)
        return path.resolve() if path.is_file() else None
    found = shutil.which(program)
    return Path(found).resolve() if found else None


@dataclass(frozen=True)
class AllowList:
    programs: frozenset[Path]
    shell: bool = False  # `--allow-shell`: shells too, and so whatever text they are given
    machine_state: bool = False  # `--allow-machine-state`: knobs, memory and swap, containers
    env: frozenset[str] = frozenset(DEFAULT_ENV)  # names (or `PREFIX*`) a variant's `env` may set

    @classmethod
    def of(
        cls, entries: Iterable[str], *, shell: bool = False, machine_state: bool = False, env: Iterable[str] = ()
    ) -> AllowList:
        """Entries as the operator gives them: paths, or names found on this worker's PATH; `env`:
        variable names (or `PREFIX*`) allowed besides the defaults, none that runs code."""
        programs = set()
        for entry in entries:
            path = _resolved(entry, None)
            if path is None or not os.access(path, os.X_OK):
                raise SpecError(f"{entry!r} is no executable program on this machine", where="--allow")
            programs.add(path)
        for name in env:
            if not (_ENV_ENTRY.fullmatch(name) or _ENV_FAMILY.fullmatch(name)):
                raise SpecError(
                    f"{name[:60]!r} is no variable name (or a family of them, NAME_*, as ZSTD_*; never a bare * or P*)",
                    where="--allow-env",
                )
            if runs_code(name.rstrip("*")):  # `GIT_*` too: all it covers is refused
                raise SpecError(
                    f"{name} makes programs run code of its value's choosing: no worker allows it", where="--allow-env"
                )
        return cls(frozenset(programs), shell, machine_state, frozenset(DEFAULT_ENV) | frozenset(env))

    def env_refusal(self, name: str) -> str | None:
        """Why a variant may not set `name` here, or None."""
        if runs_code(name):
            return "which would make the run load or run code of the spec's choosing"
        if not any(_covers(pattern, name) for pattern in self.env):
            return "which is not on this worker's --allow-env list"
        return None

    def check(self, spec: ExperimentSpec) -> None:
        for where, program, cwd in _programs(spec):
            path = _resolved(program, cwd)
            if Path(program).name in SHELLS or (path is not None and path.name in SHELLS):
                if not self.shell:
                    raise Refused(f"{where} runs a shell ({program}); this worker was not started with --allow-shell")
                continue
            if path is None:
                raise Refused(f"{where} names {program!r}, which this machine does not have")
            if path not in self.programs:
                raise Refused(f"{where} runs {path}, which is not on this worker's --allow list")
        for i, variant in enumerate(spec.variants):
            for name in sorted(variant.env):
                why = self.env_refusal(name)
                if why:
                    raise Refused(f"variants[{i}].env sets {name}, {why}")
            named = next((name for name, value in variant.tunables.items() if "/" in str(value)), None)
            if named is not None:  # jemalloc's prof_prefix: heap profiles written as root where the spec says
                raise Refused(f"variants[{i}].tunables.{named} names a path, where the allocator would write files")
            helper = next((knob for knob in variant.knobs if kernel_helper(knob)), None)
            if helper is not None:
                raise Refused(f"variants[{i}].knobs writes {helper}, which {KERNEL_HELPER}")
            kind = variant.environment.kind
            needs = "knobs" if variant.knobs else "memory" if variant.memory else None
            needs = needs or ("environment" if kind in ("container", "vm") else None)
            if needs and not self.machine_state:
                raise Refused(
                    f"variants[{i}].{needs} needs --allow-machine-state on this worker "
                    "(knobs, memory and swap, containers, vm guests)"
                )
        reason = unfleetable(spec)
        if reason:
            raise Refused(reason)


def _programs(spec: ExperimentSpec) -> Iterator[tuple[str, str, str | None]]:
    """(where in the spec, program, folder it is resolved in) for every program the spec starts."""
    for i, w in enumerate(spec.workloads):
        if w.gbench is not None:
            yield f"workloads[{i}].gbench", w.gbench, w.cwd
        for name, argv in (("command", w.command), ("setup", w.setup), ("clean", w.clean)):
            if argv:
                yield f"workloads[{i}].{name}", argv[0], w.cwd
    for i, v in enumerate(spec.variants):
        for name, argv in (("wrapper", v.wrapper), ("background", v.background)):
            if argv:
                yield f"variants[{i}].{name}", argv[0], None
