//! sys.build: a real parallel build with the system C compiler and make.
//! benchlab generates a deterministic C project (units with headers, structs
//! and functions, a realistic include fan-out, a static library and a few
//! programs that link against it), cleans it, optionally drops the page
//! cache, and then times `make -jN` alone: real time from here, user and sys
//! of the whole process tree from wait4. The programs then run and print a
//! checksum that the generator computed in advance; a wrong build fails the
//! run. Generation, cleaning, cache dropping and checking are never timed.
//!
//! Where benchlab may make a PID namespace (root), the build runs in one, so
//! the namespace's last PID is the number of tasks the build started.

use crate::protocol::Said;
use crate::report::{Counter, Direction, Entry};
use crate::workload::{
    failed, refused, About, Digest, Kind, MetricSpec, OptionSpec, Options, Workload, WorkloadError,
    SEED,
};
use crate::workloads::children::pipe;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::fmt::Write as _;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

pub struct Build;

static OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "units",
        default: "120",
        help: "translation units in the library",
        kind: Kind::Int {
            min: 1,
            max: 100_000,
        },
    },
    OptionSpec {
        name: "programs",
        default: "4",
        help: "programs linked against the library",
        kind: Kind::Int { min: 1, max: 1000 },
    },
    OptionSpec {
        name: "jobs",
        default: "0",
        help: "make -j N (0: the CPUs this run may use)",
        kind: Kind::Int { min: 0, max: 4096 },
    },
    OptionSpec {
        name: "cache",
        default: "warm",
        help: "warm, or cold (page cache dropped before the build; needs root)",
        kind: Kind::Choice(&["warm", "cold"]),
    },
    OptionSpec {
        name: "dir",
        default: "",
        help: "where the project is generated (default: a folder under $TMPDIR)",
        kind: Kind::Text,
    },
    OptionSpec {
        name: "seed",
        default: "1",
        help: "seed of the generated project",
        kind: SEED,
    },
    OptionSpec {
        name: "cc",
        default: "cc",
        help: "the C compiler",
        kind: Kind::Text,
    },
];

static METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "real_time",
        unit: "ns",
        direction: "lower",
        help: "wall time of `make -jN` alone",
    },
    MetricSpec {
        name: "cpu_time",
        unit: "ns",
        direction: "lower",
        help: "user + sys of the build's whole process tree",
    },
    MetricSpec {
        name: "sys.build:user",
        unit: "ns",
        direction: "lower",
        help: "user time of the build's process tree",
    },
    MetricSpec {
        name: "sys.build:sys",
        unit: "ns",
        direction: "lower",
        help: "system time of the build's process tree",
    },
    MetricSpec {
        name: "tasks",
        unit: "count",
        direction: "none",
        help: "processes and threads the build started (in a PID namespace; root)",
    },
    MetricSpec {
        name: "jobs",
        unit: "count",
        direction: "none",
        help: "make's -j",
    },
];

const ROUNDS: u32 = 24;

/// The generated project's arithmetic, mirrored here: what unit `n` returns for `x`.
struct Plan {
    mult: Vec<u32>,
    add: Vec<u32>,
    shift: Vec<u32>,
    callee: Vec<Option<usize>>,
    headers: Vec<Vec<usize>>,  // headers each unit includes
    programs: Vec<Vec<usize>>, // units each program folds
}

impl Plan {
    fn new(units: usize, programs: usize, seed: u64) -> Plan {
        let mut rng = Pcg64::seed_from_u64(seed);
        let headers_count = units.div_ceil(4).max(1);
        Plan {
            mult: (0..units).map(|_| rng.random::<u32>() | 1).collect(),
            add: (0..units).map(|_| rng.random()).collect(),
            shift: (0..units).map(|_| rng.random_range(3..17)).collect(),
            callee: (0..units)
                .map(|n| (n > 0).then(|| rng.random_range(0..n)))
                .collect(),
            headers: (0..units)
                .map(|_| (0..6).map(|_| rng.random_range(0..headers_count)).collect())
                .collect(),
            programs: (0..programs)
                .map(|_| (0..8).map(|_| rng.random_range(0..units)).collect())
                .collect(),
        }
    }

    fn unit(&self, n: usize, x: u32) -> u32 {
        let (mut a, mut b) = (x, self.add[n]);
        for i in 0..ROUNDS {
            a = a.wrapping_mul(self.mult[n]).wrapping_add(b ^ i);
            b ^= a >> self.shift[n];
        }
        a ^ b ^ self.callee[n].map_or(0, |c| self.unit(c, a & 0xff))
    }

    fn program(&self, p: usize) -> u32 {
        self.programs[p]
            .iter()
            .fold(p as u32 + 1, |x, &u| self.unit(u, x).wrapping_add(x))
    }
}

fn write(path: &Path, text: &str) -> Result<(), WorkloadError> {
    std::fs::write(path, text)
        .map_err(|e| WorkloadError::io(format!("writing {}", path.display()), e))
}

/// Writes the project; the `.benchlab-project` stamp makes a second run reuse it.
fn generate(root: &Path, plan: &Plan, stamp: &str) -> Result<(), WorkloadError> {
    let stamp_file = root.join(".benchlab-project");
    if std::fs::read_to_string(&stamp_file).is_ok_and(|s| s == stamp) {
        return Ok(());
    }
    for dir in ["include", "src", "progs", "lib", "bin"] {
        std::fs::create_dir_all(root.join(dir))
            .map_err(|e| WorkloadError::io(format!("creating {}", root.join(dir).display()), e))?;
    }
    let units = plan.mult.len();
    let headers_count = units.div_ceil(4).max(1);
    for h in 0..headers_count {
        let mut text =
            format!("#ifndef H{h}_H\n#define H{h}_H\n#include <stdint.h>\n#include <string.h>\n");
        if h > 0 {
            let _ = writeln!(text, "#include \"h{}.h\"", h / 2); // a tree of includes, as real headers nest
        }
        let _ = writeln!(
            text,
            "struct rec{h} {{ uint32_t a, b; uint16_t tag; unsigned char pad[6]; }};"
        );
        let _ = writeln!(
            text,
            "static inline uint32_t mix{h}(uint32_t v) {{ return (v << {}) | (v >> {}); }}",
            h % 13 + 1,
            31 - h % 13
        );
        for n in (h * 4)..((h + 1) * 4).min(units) {
            let _ = writeln!(text, "uint32_t u{n}(uint32_t x);");
        }
        text.push_str("#endif\n");
        write(&root.join(format!("include/h{h}.h")), &text)?;
    }
    for n in 0..units {
        let mut text = String::new();
        for h in &plan.headers[n] {
            let _ = writeln!(text, "#include \"h{h}.h\"");
        }
        let _ = writeln!(text, "#include \"h{}.h\"", n / 4);
        if let Some(c) = plan.callee[n] {
            let _ = writeln!(text, "#include \"h{}.h\"", c / 4);
        }
        // unused-but-compiled helpers: work for the optimiser, as real code has
        for k in 0..6 {
            let _ = writeln!(
                text,
                "static uint32_t helper{k}(const uint32_t *v, int len) {{ uint32_t s = {k}u; \
                 for (int i = 0; i < len; i++) {{ switch ((v[i] + i) & 3) {{ case 0: s += v[i] * {m}u; break; \
                 case 1: s ^= v[i] >> {k}; break; case 2: s = (s << 3) | (s >> 29); break; default: s -= v[i]; }} }} return s; }}",
                m = plan.mult[n] % 1000 + k
            );
        }
        let _ = writeln!(text, "uint32_t u{n}(uint32_t x) {{");
        let _ = writeln!(
            text,
            "  struct rec{} r; memset(&r, 0, sizeof r); r.a = x; r.b = {}u;",
            n / 4,
            plan.add[n]
        );
        let _ = writeln!(text, "  for (uint32_t i = 0; i < {ROUNDS}u; i++) {{ r.a = r.a * {}u + (r.b ^ i); r.b ^= r.a >> {}; }}", plan.mult[n], plan.shift[n]);
        let _ = writeln!(text, "  uint32_t v[4] = {{ r.a, r.b, x, {n}u }}; (void)helper0; (void)helper1; (void)helper2; (void)helper3; (void)helper4; (void)helper5; (void)v;");
        match plan.callee[n] {
            Some(c) => {
                let _ = writeln!(text, "  return r.a ^ r.b ^ u{c}(r.a & 0xffu);\n}}");
            }
            None => {
                let _ = writeln!(text, "  return r.a ^ r.b;\n}}");
            }
        }
        write(&root.join(format!("src/u{n}.c")), &text)?;
    }
    for (p, folded) in plan.programs.iter().enumerate() {
        let mut text = String::from("#include <stdio.h>\n#include <stdint.h>\n");
        for &u in folded {
            let _ = writeln!(text, "#include \"h{}.h\"", u / 4);
        }
        let _ = writeln!(text, "int main(void) {{\n  uint32_t x = {}u;", p + 1);
        for &u in folded {
            let _ = writeln!(text, "  x = u{u}(x) + x;");
        }
        text.push_str("  printf(\"%u\\n\", x);\n  return 0;\n}\n");
        write(&root.join(format!("progs/p{p}.c")), &text)?;
    }
    let objects: Vec<String> = (0..units).map(|n| format!("src/u{n}.o")).collect();
    let bins: Vec<String> = (0..plan.programs.len())
        .map(|p| format!("bin/p{p}"))
        .collect();
    let makefile = format!(
        "CFLAGS ?= -O2\nOBJS = {objs}\nall: {bins}\nlib/libproj.a: $(OBJS)\n\tar rcs $@ $^\n\
         bin/p%: progs/p%.c lib/libproj.a\n\t$(CC) $(CFLAGS) -Iinclude -o $@ $< -Llib -lproj\n\
         src/%.o: src/%.c\n\t$(CC) $(CFLAGS) -Iinclude -c $< -o $@\n\
         clean:\n\trm -f src/*.o lib/*.a bin/*\n.PHONY: all clean\n",
        objs = objects.join(" "),
        bins = bins.join(" ")
    );
    write(&root.join("Makefile"), &makefile)?;
    write(&stamp_file, stamp)
}

fn on_path(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

fn drop_page_cache() -> Result<(), WorkloadError> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3").map_err(|e| {
        refused!("--cache cold: dropping the page cache needs root (/proc/sys/vm/drop_caches: {e})")
    })
}

/// What the timed build cost.
struct Timed {
    wall_ns: f64,
    user_ns: f64,
    sys_ns: f64,
    tasks: Option<u64>,
}

/// Runs `make -jN` in `root` and waits for its whole tree, in a PID namespace where allowed.
fn timed_make(root: &Path, jobs: usize, cc: &str) -> Result<Timed, WorkloadError> {
    let make = std::ffi::CString::new("make").unwrap();
    let args: Vec<std::ffi::CString> = [
        "make".to_string(),
        format!("-j{jobs}"),
        "-s".into(),
        format!("CC={cc}"),
    ]
    .into_iter()
    .map(|a| std::ffi::CString::new(a).map_err(|_| failed!("an argument with a NUL byte")))
    .collect::<Result<_, _>>()?;
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let dir = std::ffi::CString::new(root.as_os_str().as_encoded_bytes())
        .map_err(|_| failed!("a folder with a NUL byte"))?;
    let (mut reader, writer) = pipe()?;
    let (read_fd, write_fd) = (reader.as_raw_fd(), writer.as_raw_fd());
    let started = Instant::now();
    // SAFETY: the child only makes syscalls until it execs or _exits (no allocation after fork).
    let init = unsafe { libc::fork() };
    if init < 0 {
        return Err(WorkloadError::last_os("fork"));
    }
    if init == 0 {
        // SAFETY: async-signal-safe calls only, on memory prepared before the fork.
        unsafe {
            libc::close(read_fd);
            // the caller stays where it is; its next child is PID 1 of a new namespace (when allowed)
            let counted = libc::unshare(libc::CLONE_NEWPID) == 0;
            let ns_init = libc::fork();
            if ns_init == 0 {
                let make_pid = libc::fork();
                if make_pid == 0 {
                    if libc::chdir(dir.as_ptr()) != 0 {
                        libc::_exit(126);
                    }
                    libc::execvp(make.as_ptr(), argv.as_ptr());
                    libc::_exit(127);
                }
                // reap the build and every orphan it leaves, as an init must
                let (mut status, mut make_status) = (0, 1);
                loop {
                    let pid = libc::waitpid(-1, &mut status, 0);
                    if pid < 0 {
                        break;
                    }
                    if pid == make_pid {
                        make_status = status;
                    }
                }
                let mut last = [0u8; 24];
                let mut len = 0;
                if counted {
                    let fd = libc::open(c"/proc/sys/kernel/ns_last_pid".as_ptr(), libc::O_RDONLY);
                    if fd >= 0 {
                        len = libc::read(fd, last.as_mut_ptr() as *mut libc::c_void, last.len())
                            .max(0) as usize;
                    }
                }
                libc::write(write_fd, last.as_ptr() as *const libc::c_void, len);
                libc::_exit(
                    match (libc::WIFEXITED(make_status), libc::WEXITSTATUS(make_status)) {
                        (true, code) => code,
                        _ => 125,
                    },
                );
            }
            let mut status = 0;
            libc::waitpid(ns_init, &mut status, 0);
            libc::_exit(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                125
            });
        }
    }
    drop(writer); // the child's copy is the only write end left: the read ends when it exits
    let mut report = String::new();
    let _ = reader.read_to_string(&mut report);
    let mut status = 0;
    // SAFETY: waiting for our own child with a zeroed rusage to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::wait4(init, &mut status, 0, &mut usage) };
    let wall_ns = started.elapsed().as_nanos() as f64;
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => {}
        (true, 126) => return Err(failed!("cannot enter {}", root.display())),
        (true, 127) => {
            return Err(failed!(
                "make could not be started (is it installed? apt-get install make)"
            ))
        }
        (true, code) => {
            return Err(failed!(
                "the build failed: make exited {code} (rerun it by hand in {})",
                root.display()
            ))
        }
        _ => {
            return Err(failed!(
                "the build's process was killed (wait status {status})"
            ))
        }
    }
    let ns = |t: libc::timeval| t.tv_sec as f64 * 1e9 + t.tv_usec as f64 * 1e3;
    // PID 1 was the namespace's own init (ours): the build started every other one
    let tasks = report
        .trim()
        .parse::<u64>()
        .ok()
        .map(|last| last.saturating_sub(1));
    Ok(Timed {
        wall_ns,
        user_ns: ns(usage.ru_utime),
        sys_ns: ns(usage.ru_stime),
        tasks,
    })
}

/// Runs every program and compares what it prints with the generator's own computation.
fn check(root: &Path, plan: &Plan) -> Result<Digest, WorkloadError> {
    let mut digest = Digest::new();
    for p in 0..plan.programs.len() {
        let bin = root.join(format!("bin/p{p}"));
        let out = Command::new(&bin)
            .output()
            .map_err(|e| WorkloadError::io(format!("running {}", bin.display()), e))?;
        let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let expected = plan.program(p);
        if printed != expected.to_string() {
            return Err(failed!(
                "{} printed '{printed}', the project computes {expected}: a wrong build",
                bin.display()
            ));
        }
        digest.word(expected as u64);
    }
    Ok(digest)
}

impl Workload for Build {
    fn about(&self) -> About {
        About { name: "sys.build", description: "a clean parallel build (cc + make -jN) of a generated C project, checked by the programs' output", version: 1, options: OPTIONS, metrics: METRICS }
    }
    fn run(&self, opts: &Options, _said: &mut Said) -> Result<Vec<Entry>, WorkloadError> {
        let units = opts.int("units")? as usize;
        let programs = opts.int("programs")? as usize;
        let jobs = match opts.int("jobs")? as usize {
            // as the CPU suite's --threads 0: the CPUs this process may use (affinity, cgroup quota)
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let cold = opts.choice("cache")? == "cold";
        let seed = opts.int("seed")?;
        let cc = opts.text("cc").to_string();
        for (tool, package) in [(cc.as_str(), "gcc"), ("make", "make"), ("ar", "binutils")] {
            if !on_path(tool) {
                return Err(refused!("skipped: no {tool} on PATH, sys.build needs a C toolchain (apt-get install {package})"));
            }
        }
        let root = match opts.text("dir") {
            "" => std::env::temp_dir().join(format!("benchlab-build-{units}-{programs}-{seed}")),
            dir => PathBuf::from(dir),
        };
        let plan = Plan::new(units, programs, seed);
        generate(
            &root,
            &plan,
            &format!(
                "sys.build v{} units={units} programs={programs} seed={seed}\n",
                self.about().version
            ),
        )?;
        let cleaned = Command::new("make")
            .args(["-s", "clean"])
            .current_dir(&root)
            .status()
            .map_err(|e| WorkloadError::io("make clean", e))?;
        if !cleaned.success() {
            return Err(failed!("make clean failed in {}", root.display()));
        }
        if cold {
            drop_page_cache()?;
        }
        let timed = timed_make(&root, jobs, &cc)?;
        let digest = check(&root, &plan)?;
        let mut counters = vec![
            Counter::new("user", timed.user_ns, "ns", Direction::Lower),
            Counter::new("sys", timed.sys_ns, "ns", Direction::Lower),
            Counter::new("jobs", jobs as f64, "count", Direction::None),
        ];
        if let Some(tasks) = timed.tasks {
            counters.push(Counter::new(
                "tasks",
                tasks as f64,
                "count",
                Direction::None,
            ));
        }
        Ok(vec![Entry {
            name: "sys.build".into(),
            iterations: 1,
            threads: jobs as u64,
            real_time_ns: timed.wall_ns,
            cpu_time_ns: timed.user_ns + timed.sys_ns,
            items_per_second: None,
            bytes_per_second: None,
            counters,
            checksum: digest.hex(),
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_is_deterministic_and_calls_only_lower_units() {
        let (a, b) = (Plan::new(50, 3, 7), Plan::new(50, 3, 7));
        assert_eq!(
            (0..3).map(|p| a.program(p)).collect::<Vec<_>>(),
            (0..3).map(|p| b.program(p)).collect::<Vec<_>>()
        );
        assert!(a
            .callee
            .iter()
            .enumerate()
            .all(|(n, c)| c.is_none_or(|c| c < n)));
        assert_ne!(a.program(0), Plan::new(50, 3, 8).program(0));
    }
}
