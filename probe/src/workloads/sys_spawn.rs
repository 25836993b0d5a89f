//! sys.spawn: what a build tool pays to start its compilers. The parent first
//! grows and touches an address space (default 512 MiB, like a build tool that
//! has parsed a big tree), then starts short-lived children with fork+exec,
//! vfork+exec (clone with CLONE_VM | CLONE_VFORK, as glibc's posix_spawn does
//! inside) and posix_spawn, each its own entry. fork copies the page tables
//! of the whole address space, so its cost grows with it; the other two share
//! the parent's memory until the exec. Each spawn is timed from the call to
//! the reaped exit, so the distribution is measured inside the run; with
//! `--parallel N`, N threads spawn at once.

use crate::protocol::Said;
use crate::report::{Counter, Direction, Entry};
use crate::timing::{percentile, Stopwatch};
use crate::workload::{
    failed, refused, About, Digest, Kind, MetricSpec, OptionSpec, Options, Workload, WorkloadError,
};
use crate::workloads::children::reap;
use std::ffi::CString;
use std::time::Instant;

pub struct Spawn;

const METHODS: &[&str] = &["fork", "vfork", "posix_spawn"];

static OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "address-space",
        default: "512m",
        help: "bytes the parent maps and touches before spawning",
        kind: Kind::Size {
            min: 0,
            max: 1 << 40,
        },
    },
    OptionSpec {
        name: "spawns",
        default: "200",
        help: "children started per method",
        kind: Kind::Int {
            min: 1,
            max: 1 << 24,
        },
    },
    OptionSpec {
        name: "parallel",
        default: "1",
        help: "threads spawning at once",
        kind: Kind::Int { min: 1, max: 1024 },
    },
    OptionSpec {
        name: "methods",
        default: "fork,vfork,posix_spawn",
        help: "comma-separated: fork, vfork, posix_spawn",
        kind: Kind::Text,
    },
    OptionSpec {
        name: "program",
        default: "/bin/true",
        help: "the program every child execs (it must exit 0)",
        kind: Kind::Text,
    },
    OptionSpec {
        name: "warmup",
        default: "10",
        help: "untimed spawns per method first",
        kind: Kind::Int {
            min: 0,
            max: 1 << 20,
        },
    },
];

static METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "sys.spawn/<method>:real_time",
        unit: "ns",
        direction: "lower",
        help: "wall time per spawn (all threads together)",
    },
    MetricSpec {
        name: "sys.spawn/<method>:cpu_time",
        unit: "ns",
        direction: "lower",
        help: "CPU time of parent and children per spawn",
    },
    MetricSpec {
        name: "sys.spawn/<method>:items_per_second",
        unit: "1/s",
        direction: "higher",
        help: "spawns per second",
    },
    MetricSpec {
        name: "sys.spawn/<method>:p50",
        unit: "ns",
        direction: "lower",
        help: "median spawn latency (call to reaped exit)",
    },
    MetricSpec {
        name: "sys.spawn/<method>:p90",
        unit: "ns",
        direction: "lower",
        help: "90th percentile spawn latency",
    },
    MetricSpec {
        name: "sys.spawn/<method>:p99",
        unit: "ns",
        direction: "lower",
        help: "99th percentile spawn latency",
    },
];

/// What every child execs: made before any spawn, since a child may only call async-signal-safe functions.
struct Program {
    path: CString,
    argv: [*const libc::c_char; 2],
    envp: [*const libc::c_char; 1],
}

// SAFETY: the pointers lead into `path`, which the struct owns and never changes.
unsafe impl Sync for Program {}

extern "C" fn exec_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the Program the parent keeps alive until this child has exec'd or died.
    unsafe {
        let p = &*(arg as *const Program);
        libc::execve(p.path.as_ptr(), p.argv.as_ptr(), p.envp.as_ptr());
        libc::_exit(127)
    }
}

/// The stack a vfork-style child runs on until its exec (one per spawning thread).
const CHILD_STACK: usize = 64 << 10;

fn spawn(method: &str, program: &Program, stack: &mut [u8]) -> Result<libc::pid_t, WorkloadError> {
    let pid = match method {
        // SAFETY: the child only execs or _exits.
        "fork" => unsafe {
            let pid = libc::fork();
            if pid == 0 {
                exec_child(program as *const Program as *mut libc::c_void);
            }
            pid
        },
        // SAFETY: the child runs `exec_child` on its own stack, sharing our memory until it execs; we
        // are suspended meanwhile (CLONE_VFORK), so nothing else touches that stack.
        "vfork" => unsafe {
            let top = stack.as_mut_ptr().add(stack.len()) as *mut libc::c_void;
            let arg = program as *const Program as *mut libc::c_void;
            libc::clone(
                exec_child,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                arg,
            )
        },
        _ => {
            let mut pid = 0;
            // SAFETY: argv and envp are NULL-terminated arrays of C strings.
            let rc = unsafe {
                libc::posix_spawn(
                    &mut pid,
                    program.path.as_ptr(),
                    std::ptr::null(),
                    std::ptr::null(),
                    program.argv.as_ptr() as *const *mut libc::c_char,
                    program.envp.as_ptr() as *const *mut libc::c_char,
                )
            };
            if rc != 0 {
                return Err(WorkloadError::io(
                    "posix_spawn",
                    std::io::Error::from_raw_os_error(rc),
                ));
            }
            pid
        }
    };
    if pid < 0 {
        return Err(WorkloadError::last_os(method));
    }
    Ok(pid)
}

/// One thread's share: `count` spawns, each latency in ns.
fn spawn_many(method: &str, program: &Program, count: u64) -> Result<Vec<u64>, WorkloadError> {
    let child = format!("child started with {method}");
    let mut stack = vec![0u8; CHILD_STACK];
    let mut samples = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let start = Instant::now();
        let pid = spawn(method, program, &mut stack)?;
        reap(pid, &child)?;
        samples.push(start.elapsed().as_nanos() as u64);
    }
    Ok(samples)
}

/// Maps `bytes` and writes to every page, so that fork has real page tables to copy.
fn grow(bytes: usize) -> Result<(), WorkloadError> {
    if bytes == 0 {
        return Ok(());
    }
    let base = super::map_anonymous(bytes, libc::MAP_PRIVATE)?;
    for page in (0..bytes).step_by(4096) {
        // SAFETY: a byte inside the mapping just made, written only within its length.
        unsafe { base.add(page).write_volatile(page as u8 | 1) };
    }
    Ok(())
}

/// `--methods`: each of METHODS at most once, in the order given.
fn methods(opts: &Options) -> Result<Vec<&str>, WorkloadError> {
    let methods: Vec<&str> = opts.text("methods").split(',').map(str::trim).collect();
    if let Some(bad) = methods.iter().find(|m| !METHODS.contains(m)) {
        return Err(refused!(
            "option --methods: '{bad}' is not one of {}",
            METHODS.join(", ")
        ));
    }
    if let Some((i, twice)) = methods
        .iter()
        .enumerate()
        .find(|(i, m)| methods[..*i].contains(m))
    {
        return Err(refused!(
            "option --methods: '{twice}' is given twice (entry {})",
            i + 1
        ));
    }
    Ok(methods)
}

/// `--program`: a file this process may execute, as every child will.
fn program_path(opts: &Options) -> Result<CString, WorkloadError> {
    let path = opts.text("program");
    let c_path =
        CString::new(path).map_err(|_| refused!("option --program: a path without NUL bytes"))?;
    let is_file = std::fs::metadata(path)
        .map(|m| m.is_file())
        .unwrap_or(false);
    // SAFETY: a NUL-terminated path.
    if !is_file || unsafe { libc::access(c_path.as_ptr(), libc::X_OK) } != 0 {
        return Err(refused!(
            "option --program: no program at {path} that this user may execute"
        ));
    }
    Ok(c_path)
}

impl Workload for Spawn {
    fn about(&self) -> About {
        About { name: "sys.spawn", description: "a parent with a large touched address space starts short-lived children by fork+exec, vfork+exec and posix_spawn", version: 1, options: OPTIONS, metrics: METRICS }
    }
    fn check(&self, opts: &Options) -> Result<(), WorkloadError> {
        methods(opts)?;
        program_path(opts).map(|_| ())
    }
    fn run(&self, opts: &Options, _said: &mut Said) -> Result<Vec<Entry>, WorkloadError> {
        let bytes = opts.int("address-space")? as usize;
        let spawns = opts.int("spawns")?;
        let parallel = opts.int("parallel")?;
        let warmup = opts.int("warmup")?;
        let methods = methods(opts)?;
        let c_path = program_path(opts)?;
        let mut program = Program {
            path: c_path,
            argv: [std::ptr::null(); 2],
            envp: [std::ptr::null()],
        };
        program.argv[0] = program.path.as_ptr();
        grow(bytes)?;
        let mut entries = Vec::new();
        for method in methods {
            spawn_many(method, &program, warmup)?; // untimed: page cache, dynamic loader, allocator
            let per_thread = spawns.div_ceil(parallel);
            let watch = Stopwatch::start(true);
            let started = Instant::now();
            let shares: Vec<Result<Vec<u64>, WorkloadError>> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..parallel)
                    .map(|_| scope.spawn(|| spawn_many(method, &program, per_thread)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err(failed!("a spawning thread panicked")))
                    })
                    .collect()
            });
            let wall = started.elapsed().as_nanos() as f64;
            let (_, cpu) = watch.elapsed();
            let mut samples = Vec::new();
            for share in shares {
                samples.extend(share?);
            }
            samples.sort_unstable();
            let n = samples.len() as u64;
            let mut digest = Digest::new();
            digest.word(n); // every one of them exec'd and exited 0
            entries.push(Entry {
                name: format!("sys.spawn/{method}"),
                iterations: n,
                threads: parallel,
                real_time_ns: wall / n as f64,
                cpu_time_ns: cpu / n as f64,
                items_per_second: Some(n as f64 / (wall / 1e9)),
                bytes_per_second: None,
                counters: ["p50", "p90", "p99"]
                    .iter()
                    .zip([0.5, 0.9, 0.99])
                    .map(|(k, q)| Counter::new(k, percentile(&samples, q), "ns", Direction::Lower))
                    .collect(),
                checksum: digest.hex(),
            });
        }
        Ok(entries)
    }
}
