//! `benchlab-launch -- COMMAND...`: starts one workload process and reports
//! the kernel's account of it.
//!
//! benchlab starts every run through this small launcher rather than from
//! the Python runner itself: Linux carries the max-RSS watermark of the
//! process that calls exec into the child's rusage, so a command spawned
//! straight from a 100+ MiB interpreter would report the interpreter's
//! footprint. Wall time is taken here too, around fork and wait4, in native
//! code. The result is one JSON line written to --result-fd (default 3).
//!
//! The child waits on a pipe until the parent has opened its perf counters
//! (see `counters`, a few hundred microseconds), which start counting when it
//! execs the command; the wall clock starts when the child is released, so
//! that cost stays out of the run's time. Before that release it also joins the
//! run's memory cgroup and is watched for the libraries it maps (`memory`,
//! `mapped`), each on request, and, in a container environment, enters the
//! container (`container`), which it reports done on a second pipe.
//!
//! Nothing started for a run outlives benchlab (`--die-with PID`): the launcher asks
//! for SIGTERM when the thread that started it dies (PR_SET_PDEATHSIG, `kill -9`
//! included), and on it kills the workload, removes the run's cgroup with whatever
//! is left in it, and takes its own process group down; the workload asks for
//! SIGKILL should the launcher die first. Each checks, after asking, that its
//! parent is still the one it was started by, for the parent may die before.

use crate::container::{self, Container};
use crate::counters::Counters;
use crate::mapped::Mapped;
use crate::memory::{RunCgroup, Sampler};
use serde_json::json;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Instant;

static CHILD: AtomicI32 = AtomicI32::new(0);
static ORPHANED: AtomicBool = AtomicBool::new(false);

/// SIGTERM, on the death of benchlab (or from anyone): the workload is killed at once, and the
/// launcher goes on to remove its cgroup (killing what the workload left there) and then its
/// process group. Before there is a workload there is nothing to clean: the launcher just ends;
/// after it was reaped, its pid may be another process's, so only the cleanup goes on.
extern "C" fn on_terminate(_: libc::c_int) {
    ORPHANED.store(true, Ordering::SeqCst);
    let child = CHILD.load(Ordering::SeqCst);
    // SAFETY: kill and _exit are async-signal-safe.
    unsafe {
        if child > 0 {
            libc::kill(child, libc::SIGKILL);
        } else if child == 0 {
            libc::_exit(1);
        } // below 0: the workload is reaped; cleaning up is under way

    }
}

/// Asks for SIGTERM when `parent` dies; false when it already has.
fn die_with(parent: libc::pid_t) -> bool {
    // SAFETY: a zeroed sigaction with a handler that only makes async-signal-safe calls; no
    // SA_RESTART, so a wait4 in progress returns (to be retried) rather than hide the signal.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_terminate as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
        libc::getppid() == parent
    }
}

/// After an orphaned run is cleaned up: the rest of the launcher's process group (what the
/// workload started outside any cgroup), the launcher included, when it leads that group.
fn end_if_orphaned() {
    if !ORPHANED.load(Ordering::SeqCst) {
        return;
    }
    // SAFETY: signalling our own process group only when we lead it (benchlab starts us in a new
    // session), else just ending.
    unsafe {
        if libc::getpgrp() == libc::getpid() {
            libc::kill(0, libc::SIGKILL);
        }
        libc::_exit(1);
    }
}

pub struct Settings {
    pub result_fd: i32,
    pub perf_counters: bool,
    pub mapped: bool,
    pub cgroup: Option<String>,
    pub memory_interval_ms: u64,
    pub container: Option<Container>,
    pub memory_limit: Option<u64>,
    pub cpu_limit: Option<f64>,
    pub cpu_cgroup: Option<String>, // cgroup v1's cpu hierarchy; v2 limits CPU in the memory cgroup
    pub die_with: Option<libc::pid_t>, // benchlab's pid: everything started here dies with it
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            result_fd: 3,
            perf_counters: false,
            mapped: false,
            cgroup: None,
            memory_interval_ms: 0,
            container: None,
            memory_limit: None,
            cpu_limit: None,
            cpu_cgroup: None,
            die_with: None,
        }
    }
}

/// What to write in the run's cgroups before the child joins: (memory group, cpu group).
fn limits(settings: &Settings) -> (Vec<(&'static str, String)>, Vec<(&'static str, String)>) {
    let (mut memory, mut cpu) = (vec![], vec![]);
    let v1 = settings.cgroup.as_ref().is_some_and(|p| std::path::Path::new(p).join("memory.limit_in_bytes").exists());
    if let Some(bytes) = settings.memory_limit {
        memory.push((if v1 { "memory.limit_in_bytes" } else { "memory.max" }, bytes.to_string()));
    }
    if let Some(cpus) = settings.cpu_limit {
        let quota = ((cpus * 100_000.0).round() as u64).max(1000);
        if settings.cpu_cgroup.is_some() {
            cpu.push(("cpu.cfs_period_us", "100000".to_string()));
            cpu.push(("cpu.cfs_quota_us", quota.to_string()));
        } else {
            memory.push(("cpu.max", format!("{quota} 100000")));
        }
    }
    (memory, cpu)
}

pub fn launch(argv: &[String], settings: &Settings) -> i32 {
    let result_fd = settings.result_fd;
    if let Some(parent) = settings.die_with {
        if !die_with(parent) {
            eprintln!("benchlab-launch: process {parent}, which started it, has already ended");
            return 1;
        }
    }
    if argv.is_empty() {
        eprintln!("benchlab-launch: no command given");
        return 2;
    }
    let cargs: Vec<CString> = match argv.iter().map(|a| CString::new(a.as_bytes())).collect() {
        Ok(v) => v,
        Err(_) => {
            eprintln!("benchlab-launch: an argument contains a NUL byte");
            return 2;
        }
    };
    let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let own_pid_namespace = match settings.container {
        Some(_) => match container::enter_namespaces() {
            Ok(ns) => Some(ns),
            Err(e) => {
                eprintln!("benchlab-launch: cannot make the container's namespaces: {e}");
                return 1;
            }
        },
        None => None,
    };
    // SAFETY: our own pid, read before the fork for the child's check of its parent.
    let launcher = unsafe { libc::getpid() };
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let (mut go, mut ready) = ([0 as libc::c_int; 2], [0 as libc::c_int; 2]);
    // SAFETY: fresh pipes into arrays of two descriptors.
    if unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) | libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        eprintln!("benchlab-launch: pipe: {}", std::io::Error::last_os_error());
        return 1;
    }
    // SAFETY: the launcher is single-threaded; the child only reads, calls exec and _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        eprintln!("benchlab-launch: fork: {}", std::io::Error::last_os_error());
        return 1;
    }
    if pid == 0 {
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            let parent = libc::getppid(); // 0 as PID 1 of a container: its parent is outside
            if parent != launcher && parent != 0 {
                libc::_exit(1); // the launcher died before the request could take effect
            }
            libc::close(result_fd);
            libc::close(go[1]);
            libc::close(ready[0]);
            if let Some(c) = &settings.container {
                if let Err(e) = c.enter(&cwd) {
                    let msg = format!("benchlab-launch: cannot enter the container: {e}\n");
                    libc::write(2, msg.as_ptr() as *const libc::c_void, msg.len());
                    libc::_exit(126);
                }
            }
            libc::write(ready[1], b"r".as_ptr() as *const libc::c_void, 1);
            let mut byte = 0u8;
            libc::read(go[0], &mut byte as *mut u8 as *mut libc::c_void, 1); // returns at the parent's close
            libc::execvp(ptrs[0], ptrs.as_ptr());
            let msg = format!("benchlab-launch: cannot execute {}: {}\n", argv[0], std::io::Error::last_os_error());
            libc::write(2, msg.as_ptr() as *const libc::c_void, msg.len());
            libc::_exit(127);
        }
    }
    CHILD.store(pid, Ordering::SeqCst);
    if let Some(ns) = &own_pid_namespace {
        if let Err(e) = container::back_to_own_pid_namespace(ns) {
            eprintln!("benchlab-launch: {e}");
            // SAFETY: our own child, still waiting before its exec.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return 1;
        }
    }
    let mut counters = Counters::open(pid, settings.perf_counters);
    let mut mapped = Mapped::open(pid, settings.mapped);
    let (memory_limits, cpu_limits) = limits(settings);
    let mut cgroup = RunCgroup::join(settings.cgroup.as_deref(), &memory_limits, pid);
    let mut cpu_group = RunCgroup::join(settings.cpu_cgroup.as_deref().filter(|_| !cpu_limits.is_empty()), &cpu_limits, pid);
    let limited = !memory_limits.is_empty() || !cpu_limits.is_empty();
    if limited && (!cgroup.joined() || (!cpu_limits.is_empty() && !cpu_group.joined())) {
        let why = cgroup.note.as_deref().or(cpu_group.note.as_deref()).unwrap_or("no cgroup to put them in");
        eprintln!("benchlab-launch: the container's limits cannot be set: {why}");
        // SAFETY: our own child, still waiting before its exec.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        cgroup.remove();
        cpu_group.remove();
        return 1;
    }
    // SAFETY: our read end; one byte from the child once it is ready, or end of file if it died.
    unsafe {
        libc::close(ready[1]);
        let mut byte = 0u8;
        libc::read(ready[0], &mut byte as *mut u8 as *mut libc::c_void, 1);
        libc::close(ready[0]);
    }
    let sampler = Sampler::start(pid, settings.memory_interval_ms);
    let start = Instant::now();
    // SAFETY: closing our write end lets the child go on to exec.
    unsafe {
        libc::close(go[0]);
        libc::close(go[1]);
    }
    let mut status = 0;
    // SAFETY: waiting for our own child into a zeroed rusage we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            eprintln!("benchlab-launch: wait4: {}", std::io::Error::last_os_error());
            return 1;
        }
    }
    let wall_ns = start.elapsed().as_nanos() as u64;
    CHILD.store(-1, Ordering::SeqCst);
    let memory = sampler.finish();
    let tree_peak_kib = cgroup.peak_kib();
    cgroup.remove();
    cpu_group.remove();
    end_if_orphaned();
    let libraries = mapped.read();
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    let (exit_code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else {
        (None, Some(libc::WTERMSIG(status)))
    };
    let line = json!({
        "wall_ns": wall_ns,
        "user_ns": tv(ru.ru_utime),
        "sys_ns": tv(ru.ru_stime),
        "max_rss_kib": ru.ru_maxrss,
        "minor_faults": ru.ru_minflt,
        "major_faults": ru.ru_majflt,
        "voluntary_switches": ru.ru_nvcsw,
        "involuntary_switches": ru.ru_nivcsw,
        "exit_code": exit_code,
        "signal": signal,
        "counters": counters.read(),
        "counters_note": counters.note,
        "mapped": libraries,
        "mapped_note": mapped.note,
        "tree_peak_kib": tree_peak_kib,
        "tree_peak_note": cgroup.note,
        "memory": memory,
    });
    // SAFETY: result_fd is the pipe benchlab passes; if it is not open the write fails and we say so.
    let mut result = unsafe { std::fs::File::from_raw_fd(result_fd) };
    if writeln!(result, "{line}").is_err() {
        eprintln!("benchlab-launch: file descriptor {result_fd} is not open for the result");
        return 1;
    }
    0
}
