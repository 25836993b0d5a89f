"""The `tunables` field: an allocator's options, checked against the installed version.

Each allocator reads its options its own way; benchlab writes them there and
refuses a misspelt name or a bad value before anything runs (the value "cpus"
stands for the number of CPUs the variant may use), by asking the
installed code itself rather than a list kept here, so a newer or older
version is judged by its own rules:

- glibc: `GLIBC_TUNABLES=glibc.malloc.NAME=VALUE:...`; names and ranges from
  `ld.so --list-tunables`;
- jemalloc: `MALLOC_CONF=NAME:VALUE,...`; jemalloc itself reports an invalid
  pair or value on stderr when a process that allocates starts with it;
- mimalloc: `MIMALLOC_NAME=VALUE`; names from the options `MIMALLOC_VERBOSE=1`
  prints;
- tcmalloc: `TCMALLOC_NAME=VALUE`; names from the environment variables the
  library reads (its own strings).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import subprocess
import sys
from collections.abc import Mapping

from benchlab.errors import EnvironmentProblem, SpecError
from benchlab.variants.allocator import find_library

Value = int | float | str | bool
_LOADERS = ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", *glob.glob("/lib*/ld-linux*.so.*"))
_GLIBC_LINE = re.compile(r"^(glibc\.malloc\.\w+): \S+ \(min: (\S+), max: (\S+)\)$")


def _text(value: Value, true: str = "true", false: str = "false") -> str:
    if isinstance(value, bool):
        return true if value else false
    return str(value)


@functools.cache
def glibc_tunables() -> dict[str, tuple[int, int]]:
    """glibc.malloc.* name -> (min, max), as this machine's dynamic loader lists them."""
    for loader in _LOADERS:
        if os.path.exists(loader):
            out = subprocess.run([loader, "--list-tunables"], capture_output=True, text=True, timeout=10).stdout
            found = {m[1]: (int(m[2], 0), int(m[3], 0)) for m in map(_GLIBC_LINE.match, out.splitlines()) if m}
            if found:
                return found
    raise EnvironmentProblem("cannot list glibc's tunables (ld.so --list-tunables needs glibc 2.33 or newer)")


def _glibc(tunables: Mapping[str, Value], where: str) -> dict[str, str]:
    known = glibc_tunables()
    parts = []
    for key, value in tunables.items():
        name = key if key.startswith("glibc.") else f"glibc.malloc.{key}"
        if name not in known:
            raise SpecError(f"glibc has no malloc tunable '{key}' (it has: {', '.join(n.rsplit('.', 1)[1] for n in known)})",
                            where=f"{where}.{key}")  # fmt: skip
        low, high = known[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise SpecError(f"'{value}' is not an integer in {low}..{high}", where=f"{where}.{key}")
        parts.append(f"{name}={value}")
    return {"GLIBC_TUNABLES": ":".join(parts)}


def _jemalloc(tunables: Mapping[str, Value], where: str, library: str) -> dict[str, str]:
    conf = ",".join(f"{key}:{_text(value)}" for key, value in tunables.items())
    env = {**os.environ, "LD_PRELOAD": library, "MALLOC_CONF": conf}
    # any process that allocates makes jemalloc parse MALLOC_CONF and complain on stderr
    err = subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True, text=True, timeout=30).stderr
    for line in err.splitlines():
        found = re.match(r"<jemalloc>: Invalid conf (pair|value): (\w+):(.*)$", line)
        if found:
            what = "no option" if found[1] == "pair" else "a bad value for"
            raise SpecError(f"jemalloc says {what} '{found[2]}' ({found[2]}:{found[3]})", where=f"{where}.{found[2]}")
    return {"MALLOC_CONF": conf}


@functools.cache
def mimalloc_options(library: str) -> frozenset[str]:
    env = {**os.environ, "LD_PRELOAD": library, "MIMALLOC_VERBOSE": "1"}
    err = subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True, text=True, timeout=30).stderr
    return frozenset(re.findall(r"mimalloc: option '(\w+)'", err))


@functools.cache
def tcmalloc_options(library: str) -> frozenset[str]:
    with open(library, "rb") as f:
        return frozenset(m.decode().removeprefix("TCMALLOC_").lower() for m in re.findall(rb"TCMALLOC_[A-Z_]+", f.read()))


def _prefixed(prefix: str, known: frozenset[str], tunables: Mapping[str, Value], where: str, name: str) -> dict[str, str]:
    env = {}
    for key, value in tunables.items():
        option = key.lower().removeprefix(prefix.lower())
        if option not in known:
            raise SpecError(f"{name} has no option '{key}' (it has: {', '.join(sorted(known))})", where=f"{where}.{key}")
        env[f"{prefix}{option.upper()}"] = _text(value, "1", "0")
    return env


CPUS = "cpus"  # a tunable's value meaning "as many as the CPUs the variant may use": narenas = "cpus"

# the environment variables through which each allocator reads its options (a trailing _: a prefix)
OPTION_VARIABLES = {"glibc": "GLIBC_TUNABLES", "jemalloc": "MALLOC_CONF", "mimalloc": "MIMALLOC_", "tcmalloc": "TCMALLOC_"}


def _reads(variable: str) -> str | None:
    """The allocator that takes its options from `variable`, if any."""
    return next((a for a, v in OPTION_VARIABLES.items() if variable == v or (v.endswith("_") and variable.startswith(v))), None)


def options_from_env(
    allocator: str | None, tunables: Mapping[str, Value], env: Mapping[str, str], *, preloads: bool, where: str
) -> tuple[dict[str, Value], dict[str, str]]:
    """(tunables, env) with the allocator settings `env` carries judged as the fields that set them:
    a variable an allocator, tunables or shim field writes may not be given beside it too (one would
    silently replace the other), a variable of another allocator than the variant's is refused, and
    `env.MALLOC_CONF` beside `allocator = "jemalloc"` becomes that allocator's tunables, checked and
    recorded with each run like them."""
    if preloads and "LD_PRELOAD" in env:
        raise SpecError("LD_PRELOAD is set by the allocator and shim fields; give the library there", where=f"{where}.env")
    tunables, env = dict(tunables), dict(env)
    for variable in sorted(env):
        owner = _reads(variable)
        if owner is None:
            continue
        if allocator is not None and owner != allocator:
            raise SpecError(f"{variable} configures {owner}, but the variant runs {allocator}", where=f"{where}.env")
        if tunables:
            raise SpecError(f"{variable} is what tunables write; give {owner}'s options once, as tunables", where=f"{where}.env")
    if allocator == "jemalloc" and "MALLOC_CONF" in env:
        tunables = _conf_pairs(env.pop("MALLOC_CONF"), f"{where}.env.MALLOC_CONF")
    return tunables, env


def _conf_pairs(conf: str, where: str) -> dict[str, Value]:
    """MALLOC_CONF's `name:value,name:value` as tunables."""
    pairs: dict[str, Value] = {}
    for pair in conf.split(","):
        name, sep, value = pair.partition(":")
        if not (sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name) and value):
            raise SpecError(f"'{pair[:60]}' is not a name:value pair of MALLOC_CONF", where=where)
        pairs[name] = int(value) if re.fullmatch(r"-?[0-9]{1,18}", value) else value
    return pairs


def tunable_environment(allocator: str | None, tunables: Mapping[str, Value], where: str, *, cpus: int) -> dict[str, str]:
    """The environment variables that carry `tunables` to `allocator`, each checked first."""
    if not tunables:
        return {}
    tunables = {key: cpus if value == CPUS else value for key, value in tunables.items()}
    for key, value in tunables.items():  # separators of MALLOC_CONF and GLIBC_TUNABLES must not hide in a value
        if isinstance(value, str) and not re.fullmatch(r"[\w.+-]+", value, re.ASCII):
            raise SpecError(f"'{value}' is not a plain value", where=f"{where}.{key}")
    name = allocator or "glibc"
    if name == "glibc":
        return _glibc(tunables, where)
    library = find_library(name)
    if library is None:
        return {}  # the allocator field reports the missing library, with its package
    if name == "jemalloc":
        return _jemalloc(tunables, where, library)
    if name == "mimalloc":
        return _prefixed("MIMALLOC_", mimalloc_options(library), tunables, where, name)
    return _prefixed("TCMALLOC_", tcmalloc_options(library), tunables, where, name)
