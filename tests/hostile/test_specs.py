"""Hostile specs: each one refused before anything is stored or run, in one line that names the place.

Every entry is one bug class; the suite grows with every bug found (issue 14)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from benchlab.cli.experiment import load_spec
from tests.hostile.conftest import refused

HEAD = 'name = "x"\n'
CMD = '[[workloads]]\nname = "t"\ncommand = ["true"]\n'
VAR = '[[variants]]\nname = "a"\n'
GOOD = HEAD + CMD + VAR
PROBE = '[[workloads]]\nname = "p"\nbuiltin = "alloc.churn"\n'


def top(line: str) -> str:
    return HEAD + line + "\n" + CMD + VAR


def workload(lines: str) -> str:
    return HEAD + CMD + lines + "\n" + VAR


def variant(lines: str) -> str:
    return GOOD + '[[variants]]\nname = "b"\n' + lines + "\n"


def sweep(lines: str) -> str:
    return GOOD + lines + "\n"


def nested(depth: int) -> str:
    return HEAD + "deep = " + "[" * depth + "]" * depth + "\n" + CMD + VAR


def many_variants(count: int) -> str:
    return HEAD + CMD + "".join(f'[[variants]]\nname = "v{i}"\n' for i in range(count))


def many_pairs(workloads: int, variants: int) -> str:
    text = HEAD + "".join(f'[[workloads]]\nname = "w{i}"\ncommand = ["true"]\n' for i in range(workloads))
    return text + "".join(f'[[variants]]\nname = "v{i}"\n' for i in range(variants))


CASES: dict[str, tuple[str, str]] = {
    # the experiment's own numbers: bounded, finite, of the type written
    "negative seed": (top("seed = -1"), "seed"),
    "seed beyond 63 bits": (top("seed = 99999999999999999999"), "seed"),
    "infinite timeout": (top("timeout = inf"), "timeout"),
    "huge timeout": (top("timeout = 1e300"), "timeout"),
    "nan timeout": (top("timeout = nan"), "timeout"),
    "zero timeout": (top("timeout = 0"), "timeout"),
    "nan alpha": (top("alpha = nan"), "alpha"),
    "infinite margin": (top("margin = inf"), "margin"),
    "alpha as text": (top('alpha = "0.05"'), "alpha"),
    "blocks as text": (top('blocks = "10"'), "blocks"),
    "warmup as a flag": (top("warmup = true"), "warmup"),
    "blocks as a float": (top("blocks = 10.0"), "blocks"),
    "blocks beyond the cap": (top("blocks = 100001"), "blocks"),
    "unknown correction": (top('correction = "bonferroni"'), "correction"),
    "until_decided as a number": (top("until_decided = 5"), "until_decided"),
    "until_decided bound as text": (top('until_decided = { min_blocks = "3" }'), "until_decided.min_blocks"),
    "name with a newline": ('name = "a\\nb"\n' + CMD + VAR, "name"),
    "empty name": ('name = ""\n' + CMD + VAR, "name"),
    "overlong name": (f'name = "{"a" * 200}"\n' + CMD + VAR, "name"),
    "baseline with a NUL": (top('baseline = "a\\u0000"'), "baseline"),
    # workloads
    "NUL in a command": (HEAD + '[[workloads]]\nname = "t"\ncommand = ["tr\\u0000ue"]\n' + VAR, "workloads[0].command"),
    "NUL in an arg": (workload('args = ["x\\u0000y"]'), "workloads[0].args"),
    "empty command text": (HEAD + '[[workloads]]\nname = "t"\ncommand = ""\n' + VAR, "workloads[0].command"),
    "empty program": (HEAD + '[[workloads]]\nname = "t"\ncommand = [""]\n' + VAR, "workloads[0].command"),
    "unbalanced quote": (HEAD + '[[workloads]]\nname = "t"\ncommand = "echo \'x"\n' + VAR, "workloads[0].command"),
    "NUL in cwd": (workload('cwd = "/tmp\\u0000x"'), "workloads[0].cwd"),
    "infinite workload timeout": (workload("timeout = inf"), "workloads[0].timeout"),
    "negative workload timeout": (workload("timeout = -1"), "workloads[0].timeout"),
    "nan memory interval": (workload("memory_interval = nan"), "workloads[0].memory_interval"),
    "NUL in setup": (workload('setup = ["ma\\u0000ke"]'), "workloads[0].setup"),
    "unbalanced clean": (workload('clean = "rm \'x"'), "workloads[0].clean"),
    "metric name with a newline": (workload('metrics = { "a\\nb" = { direction = "lower" } }'), "workloads[0].metrics"),
    "empty metric name": (workload('metrics = { "" = { direction = "lower" } }'), "workloads[0].metrics"),
    "nan metric margin": (workload("metrics = { x = { margin = nan } }"), "workloads[0].metrics.x.margin"),
    "empty gbench path": (HEAD + '[[workloads]]\nname = "g"\ngbench = ""\n' + VAR, "workloads[0].gbench"),
    "workload name with a space": (HEAD + '[[workloads]]\nname = "a b"\ncommand = ["true"]\n' + VAR, "workloads[0].name"),
    "builtin name with a slash": (HEAD + '[[workloads]]\nname = "p"\nbuiltin = "../x"\n' + VAR, "workloads[0].builtin"),
    "option name with a space": (HEAD + PROBE + 'options = { "a b" = 1 }\n' + VAR, "workloads[0].options"),
    "NUL in an option value": (HEAD + PROBE + 'options = { seed = "1\\u0000" }\n' + VAR, "workloads[0].options"),
    "nan option value": (HEAD + PROBE + "options = { seed = nan }\n" + VAR, "workloads[0].options"),
    # variants
    "NUL in an env value": (variant('env = { X = "a\\u0000b" }'), "variants[1].env"),
    "env name with a newline": (variant('env = { "A\\n" = "1" }'), "variants[1].env"),
    "env name with a digit first": (variant('env = { "1X" = "1" }'), "variants[1].env"),
    "NUL in a wrapper": (variant('wrapper = ["nice\\u0000"]'), "variants[1].wrapper"),
    "unbalanced background": (variant('background = "stress \'x"'), "variants[1].background"),
    "NUL in a background": (variant('background = ["sleep", "1\\u0000"]'), "variants[1].background"),
    "CPU range of 400 million": (variant('cpus = "0-400000000"'), "variants[1].cpus"),
    "CPU number with many digits": (variant('cpus = "99999999999999999999"'), "variants[1].cpus"),
    "negative CPU": (variant("cpus = [-1]"), "variants[1].cpus"),
    "CPU beyond NR_CPUS": (variant("cpus = [100000]"), "variants[1].cpus"),
    "empty CPU list text": (variant('cpus = ""'), "variants[1].cpus"),
    "empty CPU list": (variant("cpus = []"), "variants[1].cpus"),
    "CPU list with a hole": (variant('cpus = "0,,1"'), "variants[1].cpus"),
    "knob value with a newline": (variant('knobs = { "/proc/sys/vm/swappiness" = "1\\n2" }'), "variants[1].knobs"),
    "empty knob value": (variant('knobs = { "/proc/sys/vm/swappiness" = "" }'), "variants[1].knobs"),
    "NUL in a knob path": (variant('knobs = { "/proc/sys/vm/swap\\u0000" = "1" }'), "variants[1].knobs"),
    "newline in a knob path": (variant('knobs = { "/proc/sys/vm/\\nswappiness" = "1" }'), "variants[1].knobs"),
    "NUL in a knob value": (variant('knobs = { "/proc/sys/vm/swappiness" = "1\\u0000" }'), "variants[1].knobs"),
    "tunable name smuggling MALLOC_CONF pairs": (
        variant('allocator = "jemalloc"\ntunables = { "narenas:1,abort" = 1 }'),
        "variants[1].tunables",
    ),
    "tunable name smuggling GLIBC_TUNABLES": (variant('tunables = { "arena_max=1:glibc.x" = 1 }'), "variants[1].tunables"),
    "nan tunable": (variant("tunables = { arena_max = nan }"), "variants[1].tunables"),
    "negative shim sampling": (variant("shim = { sampling = -1 }"), "variants[1].shim.sampling"),
    "shim sampling as text": (variant('shim = { sampling = "10" }'), "variants[1].shim.sampling"),
    "nan container cpus": (variant('environment = { kind = "container", cpus = nan }'), "variants[1].environment"),
    "absurd container memory": (variant('environment = { kind = "container", memory = "99999T" }'), "variants[1].environment"),
    "ssh host with a newline": (variant('environment = "ssh://a\\nb"'), "variants[1].environment"),
    "NUL in an ssh option": (
        variant('environment = { kind = "ssh", host = "h", ssh_options = ["\\u0000"] }'),
        "variants[1].environment",
    ),
    "allocator as a number": (variant("allocator = 1"), "variants[1].allocator"),
    # sweeps: finite, and counted before they are expanded
    "sweep range from nan": (
        sweep('[[sweep.parameters]]\nfield = "tunables.arena_max"\nrange = { start = nan, stop = 4, steps = 3 }'),
        "sweep.parameters[0].range",
    ),
    "sweep range to inf": (
        sweep('[[sweep.parameters]]\nfield = "tunables.arena_max"\nrange = { start = 1, stop = inf, steps = 3 }'),
        "sweep.parameters[0].range",
    ),
    "sweep range that overflows": (
        sweep('[[sweep.parameters]]\nfield = "env.X"\nrange = { start = -1e308, stop = 1e308, steps = 3, integer = false }'),
        "overflow",
    ),
    "sweep values with nan": (sweep('[[sweep.parameters]]\nfield = "env.X"\nvalues = [1, nan]'), "sweep.parameters[0].values"),
    "a million swept variants": (
        sweep(
            '[[sweep.parameters]]\nfield = "env.X"\nrange = { start = 1, stop = 1000, steps = 1000 }\n'
            '[[sweep.parameters]]\nfield = "env.Y"\nrange = { start = 1, stop = 1000, steps = 1000 }'
        ),
        "1000000 variants",
    ),
    "too many swept values": (
        sweep('[[sweep.parameters]]\nfield = "env.X"\nvalues = [' + ",".join(map(str, range(300))) + "]"),
        "sweep.parameters[0].values",
    ),
    "sweep field with a newline": (sweep('[[sweep.parameters]]\nfield = "env.A\\nB"\nvalues = [1]'), "sweep.parameters[0].field"),
    "unknown sweep field": (sweep('[[sweep.parameters]]\nfield = "colour"\nvalues = [1]'), "colour"),
    # built-in workloads' options, checked against the kinds and bounds the probe declares
    "negative threads": (HEAD + PROBE + "options = { threads = -1 }\n" + VAR, "workloads[0].options.threads"),
    "zero threads": (HEAD + PROBE + "options = { threads = 0 }\n" + VAR, "1..4096"),
    "ops as a huge float": (HEAD + PROBE + "options = { ops = 1e30 }\n" + VAR, "workloads[0].options.ops"),
    "threads as a word": (HEAD + PROBE + 'options = { threads = "two" }\n' + VAR, "workloads[0].options.threads"),
    "threads as a flag": (HEAD + PROBE + "options = { threads = true }\n" + VAR, "workloads[0].options.threads"),
    "size with a bad suffix": (HEAD + PROBE + 'options = { max-size = "12q" }\n' + VAR, "workloads[0].options.max-size"),
    "size beyond its bound": (HEAD + PROBE + 'options = { max-size = "2g" }\n' + VAR, "workloads[0].options.max-size"),
    "seed beyond 64 bits": (HEAD + PROBE + "options = { seed = 99999999999999999999 }\n" + VAR, "workloads[0].options.seed"),
    "unknown choice": (
        HEAD + '[[workloads]]\nname = "l"\nbuiltin = "ipc.pipe.latency"\noptions = { placement = "diagonal" }\n' + VAR,
        "workloads[0].options.placement",
    ),
    "flag out of range": (
        HEAD + '[[workloads]]\nname = "l"\nbuiltin = "ipc.pipe.latency"\noptions = { force = 2 }\n' + VAR,
        "workloads[0].options.force",
    ),
    "two pairs pinned to one CPU": (
        HEAD + '[[workloads]]\nname = "l"\nbuiltin = "ipc.pipe.latency"\noptions = { pair = 2 }\n'
        '[[variants]]\nname = "one"\ncpus = [0]\n',
        "workloads[0] under variants[0]",
    ),
    "payloads that shrink": (
        HEAD
        + '[[workloads]]\nname = "t"\nbuiltin = "ipc.pipe.throughput"\noptions = { min-payload = 64, max-payload = 8 }\n'
        + VAR,
        "max-payload",
    ),
    # allocator settings given twice, or to the wrong allocator
    "LD_PRELOAD beside an allocator": (variant('allocator = "jemalloc"\nenv = { LD_PRELOAD = "/x.so" }'), "LD_PRELOAD"),
    "LD_PRELOAD beside the shim": (variant('shim = {}\nenv = { LD_PRELOAD = "/x.so" }'), "LD_PRELOAD"),
    "MALLOC_CONF beside tunables": (
        variant('allocator = "jemalloc"\ntunables = { narenas = 2 }\nenv = { MALLOC_CONF = "narenas:4" }'),
        "once, as tunables",
    ),
    "GLIBC_TUNABLES beside tunables": (
        variant('tunables = { arena_max = 2 }\nenv = { GLIBC_TUNABLES = "glibc.malloc.arena_max=4" }'),
        "once, as tunables",
    ),
    "MALLOC_CONF for tcmalloc": (variant('allocator = "tcmalloc"\nenv = { MALLOC_CONF = "narenas:1" }'), "runs tcmalloc"),
    "MALLOC_CONF that is not pairs": (
        variant('allocator = "jemalloc"\nenv = { MALLOC_CONF = "narenas" }'),
        "variants[1].env.MALLOC_CONF",
    ),
    "MALLOC_CONF jemalloc does not know": (
        variant('allocator = "jemalloc"\nenv = { MALLOC_CONF = "no_such_option:1" }'),
        "variants[1].env.MALLOC_CONF.no_such_option",
    ),
    "tunable value smuggling a pair": (
        variant('allocator = "jemalloc"\ntunables = { narenas = "1,abort:true" }'),
        "variants[1].tunables.narenas",
    ),
    # the file itself and the spec's size
    "array nested 5000 deep": (nested(5000), "nested too deeply"),
    "300 variants": (many_variants(300), "variants"),
    "workloads x variants beyond the cap": (many_pairs(100, 50), "5000 series"),
    "suite with negative threads": (top('suite = { name = "cpu", threads = -1 }'), "suite.threads"),
    "suite with nan rounds": (top('suite = { name = "cpu", rounds = nan }'), "suite.rounds"),
    "suite with absurd iterations": (top('suite = { name = "cpu", iterations = 9223372036854775807 }'), "suite.iterations"),
    "suite beside workloads that are not a list": ('name = "x"\nworkloads = "t"\nsuite = "cpu"\n' + VAR, "workloads"),
    # the second batch: every value read as written, nothing silently dropped or re-read
    "timeout too short to start a process": (top("timeout = 1e-300"), "timeout"),
    "workload timeout of a denormal": (workload("timeout = 5e-324"), "workloads[0].timeout"),
    "CPU list with a space inside": (variant('cpus = "0 1"'), "variants[1].cpus"),
    "CPU list in Arabic-Indic digits": (variant('cpus = "\u0660"'), "variants[1].cpus"),
    "CPU list with a trailing newline": (variant('cpus = "0\\n"'), "variants[1].cpus"),
    "CPU list padded past its cap": (variant('cpus = "0' + " " * 5000 + ',1"'), "variants[1].cpus"),
    "size in Arabic-Indic digits": (HEAD + PROBE + 'options = { max-size = "\u0666\u0664k" }\n' + VAR, "options.max-size"),
    "size with a trailing newline": (HEAD + PROBE + 'options = { max-size = "64k\\n" }\n' + VAR, "options.max-size"),
    "container memory in Arabic-Indic digits": (variant('environment = { kind = "container", memory = "\u0665G" }'), "memory"),
    "container memory with a fraction of a byte": (
        variant('environment = { kind = "container", memory = "8388608.7" }'),
        "memory",
    ),
    "container memory with a stray i": (variant('environment = { kind = "container", memory = "8388608i" }'), "memory"),
    "container cpus of a denormal": (variant('environment = { kind = "container", cpus = 1e-300 }'), "environment.cpus"),
    "ssh port in Arabic-Indic digits": (variant('environment = "ssh://lab:\u0662\u0662"'), "variants[1].environment"),
    "ssh host that is an option": (variant('environment = { kind = "ssh", host = "-oProxyCommand=x" }'), "no leading -"),
    "ssh URL host that is an option": (variant('environment = "ssh://-v"'), "no leading -"),
    "knob outside /proc/sys and /sys": (variant('knobs = { "/etc/hostname" = "x" }'), "not under /proc/sys"),
    "knob under two spellings": (variant('knobs = { "/proc/sys//vm/swappiness" = "10" }'), "one spelling per knob"),
    "knob through a dot folder": (variant('knobs = { "/proc/sys/./vm/swappiness" = "10" }'), "one spelling per knob"),
    "knob value of infinity": (variant('knobs = { "/proc/sys/vm/swappiness" = 1e400 }'), "variants[1].knobs"),
    "shim scope with a newline": (variant('shim = { scope = "a\\nb" }'), "variants[1].shim.scope"),
    "shim scope with an escape": (variant('shim = { scope = "\\u001b[31mmake" }'), "variants[1].shim.scope"),
    "args of a builtin": (HEAD + PROBE + 'args = ["--threads=9"]\n' + VAR, "a builtin takes options"),
    "sweep base env that is text": (
        sweep('[sweep]\nbase = { env = "X=1" }\n[[sweep.parameters]]\nfield = "env.X"\nvalues = [1]'),
        "not a table",
    ),
    "sweep base shim that is a number": (
        sweep('[sweep]\nbase = { shim = 5 }\n[[sweep.parameters]]\nfield = "shim.sampling"\nvalues = [1]'),
        "not a table",
    ),
    "sweep base tunables that are a list": (
        sweep('[sweep]\nbase = { tunables = [] }\n[[sweep.parameters]]\nfield = "tunables.arena_max"\nvalues = [1]'),
        "not a table",
    ),
    "variants as a number beside a sweep": (
        'name = "x"\nvariants = 5\n' + CMD + '[sweep]\n[[sweep.parameters]]\nfield = "env.X"\nvalues = [1]\n',
        "a list of variants",
    ),
    "one field swept twice": (
        sweep('[[sweep.parameters]]\nfield = "env.X"\nvalues = [1, 2]\n[[sweep.parameters]]\nfield = "env.X"\nvalues = [3, 4]'),
        "swept twice",
    ),
    "sweep base naming the variants": (
        sweep('[sweep]\nbase = { name = "mine" }\n[[sweep.parameters]]\nfield = "env.X"\nvalues = [1]'),
        "base.name",
    ),
    "a sweep point written by hand": (variant('sweep = { "env.X" = 5 }'), "variants[1].sweep"),
    "a sweep point its fields contradict": (variant('env = { X = "1" }\nsweep = { "env.X" = 5 }'), "variants[1].sweep"),
    "a command metric that is none": (workload('metrics = { wal = { direction = "lower" } }'), "workloads[0].metrics"),
    "a command metric with a zero-width space": (
        workload('metrics = { "wall\\u200b" = { direction = "lower" } }'),
        "workloads[0].metrics",
    ),
    "spawn methods that are none": (
        HEAD + '[[workloads]]\nname = "s"\nbuiltin = "sys.spawn"\noptions = { methods = "fork,bogus" }\n' + VAR,
        "'bogus' is not one of",
    ),
    "spawn methods empty": (
        HEAD + '[[workloads]]\nname = "s"\nbuiltin = "sys.spawn"\noptions = { methods = "" }\n' + VAR,
        "option --methods",
    ),
    "spawn method twice": (
        HEAD + '[[workloads]]\nname = "s"\nbuiltin = "sys.spawn"\noptions = { methods = "fork,fork" }\n' + VAR,
        "given twice",
    ),
    "spawn program that is not there": (
        HEAD + '[[workloads]]\nname = "s"\nbuiltin = "sys.spawn"\noptions = { program = "/nonexistent/prog" }\n' + VAR,
        "option --program",
    ),
    "a part of a task that it lacks": (
        HEAD + '[[workloads]]\nname = "c"\nbuiltin = "cpu.hdr"\noptions = { part = "bogus" }\n' + VAR,
        "option --part",
    ),
    "a union branch name in the place": (HEAD + PROBE + "options = { threads = [2] }\n" + VAR, "workloads[0].options.threads:"),
    "a key that starts like a type": (variant("env = { int_x = true }"), "variants[1].env.int_x"),
    "a builtin metric that is none": (HEAD + PROBE + 'metrics = { real_tme = { direction = "lower" } }\n' + VAR, "real_tme"),
    "a range whose steps round together": (
        sweep('[[sweep.parameters]]\nfield = "env.X"\nrange = { start = 1, stop = 2, steps = 10 }'),
        "round to 2 whole numbers",
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_hostile_spec_is_refused(case: str, tmp_path: Path) -> None:
    text, mentions = CASES[case]
    path = tmp_path / "spec.toml"
    path.write_text(text)
    refused("run", str(path), mentions=mentions)


FILES = {
    "larger than a MiB": (b"# " + b"x" * (1 << 20) + b"\n", "larger than"),
    "not UTF-8": (b'name = "\xff\xfe"\n', "not UTF-8"),
    "not TOML": (b"name = [\n", "not valid TOML"),
}


@pytest.mark.parametrize("case", FILES, ids=list(FILES))
def test_hostile_spec_file_is_refused(case: str, tmp_path: Path) -> None:
    raw, mentions = FILES[case]
    path = tmp_path / "spec.toml"
    path.write_bytes(raw)
    refused("run", str(path), mentions=mentions)


def test_a_folder_is_not_a_spec(tmp_path: Path) -> None:
    refused("run", str(tmp_path), mentions="cannot read")


def test_a_missing_or_empty_spec_path_is_named_as_typed(tmp_path: Path) -> None:
    refused("run", "", mentions="the spec's path is empty")
    refused("bisect", "", mentions="the spec's path is empty")
    refused("run", "./nowhere//spec.toml", mentions="no spec file at ./nowhere//spec.toml", cwd=tmp_path)


def test_a_named_pipe_nobody_writes_is_read_as_empty_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.fifo"
    os.mkfifo(fifo)
    refused("run", str(fifo), mentions="empty, not a spec", timeout=30)


def test_a_spec_from_a_process_substitution_is_read_whole(tmp_path: Path) -> None:
    """`benchlab run <(generate-spec)`: a pipe with a writer is read like a file."""
    read, write = os.pipe()
    os.write(write, (GOOD + "blocks = 0\n").encode())
    os.close(write)
    try:
        refused("run", f"/proc/{os.getpid()}/fd/{read}", mentions="blocks")
    finally:
        os.close(read)


# the quick form and flags: one meaning per value, nothing silently dropped or re-read
COMMAND_LINES = {
    "a variant key given twice": (["-V", "a: cpus=0 cpus=1"], "'cpus' is given twice"),
    "an allocator given twice": (["-V", "a: allocator=jemalloc allocator=glibc"], "given twice"),
    "an option given twice": (["-w", "alloc.churn threads=1 threads=2"], "given twice"),
    "a CPU list with a space": (["-V", "a: cpus='0 1'"], "cpus"),
    "an option in Arabic-Indic digits": (["-w", "alloc.churn threads=\u0662"], "options.threads"),
    "a tunable in Arabic-Indic digits": (["-V", "a: tunables.arena_max=\u0661"], "tunables.arena_max"),
    "an ssh host that is an option": (["-V", "a: environment=ssh://-oProxyCommand"], "no leading -"),
    "an empty name": (["--name", ""], "name"),
    "an empty baseline": (["-V", "a", "-V", "b", "--baseline", ""], "baseline"),
    "a timeout too short": (["--timeout", "1e-300"], "timeout"),
    "min-blocks without until-decided": (["--min-blocks", "3"], "--min-blocks"),
}


@pytest.mark.parametrize("case", COMMAND_LINES, ids=list(COMMAND_LINES))
def test_hostile_command_line_is_refused(case: str) -> None:
    args, mentions = COMMAND_LINES[case]
    workload = [] if "-w" in args else ["--cmd", "true"]
    refused("compare", *workload, "-n", "2", *args, mentions=mentions)


# the other commands' flags: bad input is exit 2 naming the flag, never a traceback or exit 1
OTHER_COMMANDS = {
    "ipc pairs of zero": (["ipc", "latency", "-m", "pipe", "-i", "5", "--pair", "0"], "--pair"),
    "ipc pairs beyond the CPUs": (["ipc", "latency", "-m", "pipe", "-i", "5", "--pair", "512"], "benchlab ipc latency --force"),
    "ipc payload too small": (["ipc", "latency", "-m", "pipe", "-i", "5", "--payload", "15"], "--payload"),
    "ipc Android pairs of zero": (["ipc", "latency", "-m", "pipe", "-i", "5", "-pair", "0"], "--pair"),
    "ipc Android deadline of zero": (["ipc", "latency", "-m", "pipe", "-i", "5", "-trace", "-deadline_us=0"], "--deadline-us"),
    "ipc placement unknown": (["ipc", "latency", "-m", "pipe", "-i", "5", "--placement", "SAME"], "--placement"),
    "ipc lock unknown": (["ipc", "latency", "-m", "pipe", "-i", "5", "--inheritance", "bogus"], "--inheritance"),
    "ipc payload as a float": (["ipc", "throughput", "-m", "pipe", "-i", "5", "--max-payload", "1e9"], "--max-payload"),
    "ipc payload in Arabic-Indic digits": (
        ["ipc", "throughput", "-m", "pipe", "--max-payload", "\u0666\u0664k"],
        "--max-payload",
    ),
    "ipc payloads that shrink": (["ipc", "throughput", "-m", "pipe", "--min-payload", "64k", "--max-payload", "4"], "payload"),
    "score of zero blocks": (["score", "--quick", "-w", "aes_xts", "-n", "0"], "blocks"),
    "score with an empty name": (["score", "--quick", "-w", "aes_xts", "--name", ""], "name"),
    "score with an empty baseline": (["score", "--quick", "-w", "aes_xts", "--baseline", ""], "baseline"),
    "workloads in xml": (["workloads", "-f", "xml"], "--format"),
    "calibrate a billion experiments": (
        ["calibrate", "--cmd", "true", "-n", "2", "--experiments", "1000000000"],
        "--experiments",
    ),
    "export to no file name": (["export", "x", "-o", ""], ""),
    "container suite that is an option": (
        ["container", "build", "--path", "/nonexistent/r", "--suite", "--setup-hook=touch /x"],
        "--suite",
    ),
    "container mirror that is an option": (["container", "build", "--path", "/nonexistent/r", "--mirror", "--help"], "--mirror"),
    "container package list": (["container", "build", "--path", "/nonexistent/r", "-p", "a,b;c"], "--package"),
}


@pytest.mark.parametrize("case", OTHER_COMMANDS, ids=list(OTHER_COMMANDS))
def test_hostile_flags_of_other_commands_are_refused(case: str) -> None:
    args, mentions = OTHER_COMMANDS[case]
    if args[0] == "export":  # an experiment to export, so that the refusal is about the file
        from tests.conftest import cli

        cli("compare", "--cmd", "true", "-n", "2", "--name", "x", check=True)
    refused(*args, mentions=mentions)


def test_a_container_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    if shutil.which("mmdebstrap") is None:
        pytest.skip("mmdebstrap is not installed (the README's test command installs it)")
    (tmp_path / "file").write_text("x")
    refused("container", "build", "--path", str(tmp_path / "file"), mentions="not a folder")


@pytest.mark.parametrize(
    ("db", "mentions"),
    [
        ("", "empty string"),
        ("mysql://u@127.0.0.1:1/x", "mysql://"),
        ("{foreign}", "not a benchlab results database"),
        ("postgresql://u@localhost:notaport/x", "cannot open results database"),
    ],
    ids=["empty", "unknown-scheme", "another-programs-sqlite", "port-that-is-no-number"],
)
def test_a_database_that_is_no_benchlab_database_is_refused(db: str, mentions: str, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE experiment (x)")
    before = foreign.read_bytes()
    code = 2 if db == "" else 4  # an empty name is bad input, like an empty BENCHLAB_DB
    refused("compare", "--cmd", "true", "-n", "2", "--db", db.format(foreign=foreign), code=code, mentions=mentions)
    assert foreign.read_bytes() == before  # not one table of benchlab's added to it


VALID = {
    "plain": GOOD,
    "typed numbers": top("seed = 9223372036854775807\ntimeout = 604800\nalpha = 0.01\nblocks = 3"),
    "env numbers are text": variant("env = { X = 1, Y = 2.5 }"),
    "cpu list text": variant('cpus = "0"'),
    "a sweep at the cap": sweep(
        '[[sweep.parameters]]\nfield = "env.X"\nrange = { start = 1, stop = 16, steps = 16 }\n'
        '[[sweep.parameters]]\nfield = "env.Y"\nrange = { start = 1, stop = 15, steps = 15 }'
    ),
    "a float sweep": sweep(
        '[[sweep.parameters]]\nfield = "env.X"\nrange = { start = 0.5, stop = 2, steps = 4, integer = false }'
    ),
}


@pytest.mark.parametrize("case", VALID, ids=list(VALID))
def test_valid_specs_still_load(case: str, tmp_path: Path) -> None:
    path = tmp_path / "spec.toml"
    path.write_text(VALID[case])
    spec = load_spec(path)
    assert spec.name == "x"
