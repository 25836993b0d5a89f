//! `benchlab-launch -- COMMAND...`: starts one workload process and reports
//! the kernel's account of it.
//!
//! benchlab starts every run through this small launcher rather than from
//! the Python runner itself: Linux carries the max-RSS watermark of the
//! process that calls exec into the child's rusage, so a command spawned
//! straight from a 100+ MiB interpreter would report the interpreter's
//! footprint. Wall time is taken here too, around fork and wait4, in native
//! code. The result is one JSON line written to --result-fd (default 3).
//! The same run, served to a launcher that stays up for a whole experiment,
//! is `serve` (see there); this module holds what both share.
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
use serde::Serialize;
use serde_json::{Map, Value};
use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The version of the account's fields (`src/benchlab/measure/process.py` ACCOUNT_PROTOCOL):
/// both change together, and benchlab refuses an account of another version.
pub const ACCOUNT_PROTOCOL: u32 = 1;
use std::time::{Duration, Instant};

static CHILD: AtomicI32 = AtomicI32::new(0);
static ORPHANED: AtomicBool = AtomicBool::new(false);
/// A launcher that serves many runs has its own clean-up to do even between runs (see `serve`).
pub static SERVING: AtomicBool = AtomicBool::new(false);

/// SIGTERM, on the death of benchlab (or from anyone): the workload is killed at once, with its
/// process group where it leads one (a served run), and the launcher goes on to remove its cgroup
/// (killing what the workload left there) and then its process group. Before there is a workload
/// a one-shot launcher has nothing to clean and just ends, a serving one stops serving; after it
/// was reaped, its pid may be another process's, so only the cleanup goes on.
extern "C" fn on_terminate(_: libc::c_int) {
    ORPHANED.store(true, Ordering::SeqCst);
    let child = CHILD.load(Ordering::SeqCst);
    // SAFETY: kill and _exit are async-signal-safe.
    unsafe {
        if child > 0 {
            libc::kill(-child, libc::SIGKILL);
            libc::kill(child, libc::SIGKILL);
        } else if child == 0 && !SERVING.load(Ordering::SeqCst) {
            libc::_exit(1);
        } // below 0: the workload is reaped; cleaning up is under way
    }
}

/// Whether SIGTERM (benchlab's death) asked the launcher to stop.
pub fn orphaned() -> bool {
    ORPHANED.load(Ordering::SeqCst)
}

/// Asks for SIGTERM when `parent` dies; false when it already has.
pub fn die_with(parent: libc::pid_t) -> bool {
    // SAFETY: a zeroed sigaction with a handler that only makes async-signal-safe calls; no
    // SA_RESTART, so a wait4 or read in progress returns (to be retried) rather than hide the signal.
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
    if !orphaned() {
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

/// Files of one cgroup and the values written to them.
type Writes = Vec<(&'static str, String)>;

/// What to write in the run's cgroups before the child joins: (memory group, cpu group).
fn limits(settings: &Settings) -> (Writes, Writes) {
    let (mut memory, mut cpu) = (vec![], vec![]);
    let v1 = settings.cgroup.as_ref().is_some_and(|p| {
        std::path::Path::new(p)
            .join("memory.limit_in_bytes")
            .exists()
    });
    if let Some(bytes) = settings.memory_limit {
        memory.push((
            if v1 {
                "memory.limit_in_bytes"
            } else {
                "memory.max"
            },
            bytes.to_string(),
        ));
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

/// Why a run could not be started or waited for. A one-shot launcher prints it on stderr, a
/// serving one answers it in the `error` field (docs/protocol.md), so the words are the protocol's.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("an argument contains a NUL byte")]
    NulArgument,
    /// A system call the launcher needs (`pipe`, `fork`, `pidfd_open`, `poll`, `wait4`) failed.
    #[error("{call}: {source}")]
    Call {
        call: &'static str,
        source: io::Error,
    },
}

impl LaunchError {
    fn last_os(call: &'static str) -> LaunchError {
        LaunchError::Call {
            call,
            source: io::Error::last_os_error(),
        }
    }
}

/// NUL-terminated strings for exec, or the reason there are none.
pub fn cstrings<'a>(
    strings: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<CString>, LaunchError> {
    strings
        .into_iter()
        .map(|s| CString::new(s).map_err(|_| LaunchError::NulArgument))
        .collect()
}

/// The NULL-terminated pointer array exec wants, into strings that must outlive it.
pub fn pointers(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|c| c.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

extern "C" {
    static mut environ: *const *const libc::c_char;
}

/// What the child does between fork and exec, all made before the fork: the child only makes
/// system calls (no allocation), so that nothing it does can block on a lock held at the fork.
pub struct ChildSetup<'a> {
    pub argv: &'a [*const libc::c_char],
    pub envp: Option<&'a [*const libc::c_char]>, // the run's own environment (PATH included) where it differs
    pub stdio: Option<[RawFd; 3]>, // descriptors for the child's stdin, stdout and stderr
    pub close: Option<RawFd>,      // a descriptor of ours the workload must not hold
    pub own_group: bool,           // leads a process group of its own, killed whole after it
    pub container: Option<(&'a Container, &'a Path)>,
}

/// A child forked and waiting to be released (`release`) before its exec.
pub struct Forked {
    pub pid: libc::pid_t,
    go: RawFd,
    ready: RawFd,
}

/// Forks the workload's process, stopped before its exec.
pub fn fork_child(setup: &ChildSetup, argv0: &str) -> Result<Forked, LaunchError> {
    // SAFETY: our own pid, read before the fork for the child's check of its parent.
    let launcher = unsafe { libc::getpid() };
    let (mut go, mut ready) = ([0 as libc::c_int; 2], [0 as libc::c_int; 2]);
    // SAFETY: fresh pipes into arrays of two descriptors.
    if unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(LaunchError::last_os("pipe"));
    }
    // SAFETY: as above; the first pipe is closed again if the second cannot be made.
    if unsafe { libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        let e = std::io::Error::last_os_error();
        unsafe {
            libc::close(go[0]);
            libc::close(go[1]);
        }
        return Err(LaunchError::Call {
            call: "pipe",
            source: e,
        });
    }
    let exec_failed = format!("benchlab-launch: cannot execute {argv0}: ");
    // SAFETY: the launcher is single-threaded when it forks (the memory sampler's thread lives
    // only during a run); the child only makes system calls, then execs or _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        unsafe {
            for fd in [go[0], go[1], ready[0], ready[1]] {
                libc::close(fd);
            }
        }
        return Err(LaunchError::Call {
            call: "fork",
            source: e,
        });
    }
    if pid == 0 {
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            let parent = libc::getppid(); // 0 as PID 1 of a container: its parent is outside
            if parent != launcher && parent != 0 {
                libc::_exit(1); // the launcher died before the request could take effect
            }
            if setup.own_group {
                libc::setpgid(0, 0);
            }
            libc::signal(libc::SIGPIPE, libc::SIG_DFL); // Rust ignores it, and exec would keep that
            if let Some(fd) = setup.close {
                libc::close(fd);
            }
            libc::close(go[1]);
            libc::close(ready[0]);
            if let Some(fds) = setup.stdio {
                for (target, fd) in fds.iter().enumerate() {
                    libc::dup2(*fd, target as libc::c_int);
                }
            }
            if let Some((c, cwd)) = setup.container {
                if let Err(e) = c.enter(cwd) {
                    let msg = format!("benchlab-launch: cannot enter the container: {e}\n");
                    libc::write(2, msg.as_ptr() as *const libc::c_void, msg.len());
                    libc::_exit(126);
                }
            }
            if let Some(envp) = setup.envp {
                environ = envp.as_ptr(); // execvp looks the command up in the run's own PATH
            }
            libc::write(ready[1], b"r".as_ptr() as *const libc::c_void, 1);
            let mut byte = 0u8;
            libc::read(go[0], &mut byte as *mut u8 as *mut libc::c_void, 1); // returns at the parent's close
            libc::execvp(setup.argv[0], setup.argv.as_ptr());
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            let why = std::ffi::CStr::from_ptr(libc::strerror(errno)).to_bytes();
            libc::write(
                2,
                exec_failed.as_ptr() as *const libc::c_void,
                exec_failed.len(),
            );
            libc::write(2, why.as_ptr() as *const libc::c_void, why.len());
            libc::write(2, b"\n".as_ptr() as *const libc::c_void, 1);
            // for the account: the same pipe, which a successful exec would have closed (CLOEXEC)
            let code = errno.to_ne_bytes();
            libc::write(ready[1], code.as_ptr() as *const libc::c_void, code.len());
            libc::_exit(127);
        }
    }
    if setup.own_group {
        // SAFETY: our own child; done on both sides so that the group exists whichever runs first.
        unsafe { libc::setpgid(pid, pid) };
    }
    CHILD.store(pid, Ordering::SeqCst);
    // SAFETY: the child's ends, ours no more.
    unsafe {
        libc::close(go[0]);
        libc::close(ready[1]);
    }
    Ok(Forked {
        pid,
        go: go[1],
        ready: ready[0],
    })
}

/// Closes a descriptor of ours once: -1 marks it closed.
fn close_once(fd: &mut RawFd) {
    if *fd >= 0 {
        // SAFETY: a descriptor this Forked owns and has not closed yet.
        unsafe { libc::close(*fd) };
        *fd = -1;
    }
}

impl Forked {
    /// Waits until the child is ready (one byte, or end of file if it died).
    pub fn wait_ready(&self) {
        let mut byte = 0u8;
        // SAFETY: our read end of the child's pipe.
        unsafe { libc::read(self.ready, &mut byte as *mut u8 as *mut libc::c_void, 1) };
    }

    /// Lets the child go on to exec; the run's clock starts here.
    pub fn release(&mut self) -> Instant {
        let start = Instant::now();
        close_once(&mut self.go); // the child's read returns
        start
    }

    /// Why exec failed, once the child has ended (None: it ran the command). Read from the
    /// ready pipe, which a successful exec closes: the account says so as a field, so that
    /// nobody has to recognise the words the child printed on stderr.
    pub fn exec_error(&mut self) -> Option<String> {
        let mut code = [0u8; 4];
        // SAFETY: our read end; the child has ended, so the read cannot block.
        let n = unsafe {
            libc::read(
                self.ready,
                code.as_mut_ptr() as *mut libc::c_void,
                code.len(),
            )
        };
        close_once(&mut self.ready);
        (n == code.len() as isize)
            .then(|| std::io::Error::from_raw_os_error(i32::from_ne_bytes(code)).to_string())
    }

    /// A child that must not run after all (its cgroup or container could not be set up).
    pub fn abandon(mut self) {
        close_once(&mut self.go);
        close_once(&mut self.ready);
        // SAFETY: our own child, still waiting before its exec; reaped so that no zombie is left.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
        CHILD.store(0, Ordering::SeqCst);
    }
}

impl Drop for Forked {
    /// A served launcher lives for the whole experiment: no run may leave a descriptor open.
    fn drop(&mut self) {
        close_once(&mut self.go);
        close_once(&mut self.ready);
    }
}

/// How a released child ended.
pub struct Exited {
    pub status: libc::c_int,
    pub ru: libc::rusage,
    pub wall_ns: u64,
    pub timed_out: bool,
}

/// Waits for the child until it exits or `timeout` passes (pidfd and poll; a signal to the
/// launcher interrupts the wait so that it is seen at once); false on timeout.
fn exits_within(pid: libc::pid_t, timeout: Duration, start: Instant) -> Result<bool, LaunchError> {
    // SAFETY: pidfd_open on our own unreaped child.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    if fd < 0 {
        return Err(LaunchError::last_os("pidfd_open"));
    }
    let exited = loop {
        let left = timeout.saturating_sub(start.elapsed());
        if left.is_zero() {
            break false;
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: one pollfd we own.
        match unsafe { libc::poll(&mut pfd, 1, ms) } {
            r if r > 0 => break true,
            0 => continue, // the loop's head decides whether the time is up
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
                continue
            }
            _ => {
                let e = std::io::Error::last_os_error();
                unsafe { libc::close(fd) };
                return Err(LaunchError::Call {
                    call: "poll",
                    source: e,
                });
            }
        }
    };
    // SAFETY: our pidfd.
    unsafe { libc::close(fd) };
    Ok(exited)
}

/// Waits for the released child and reaps it; past `timeout` its whole process group is killed
/// first (and when the time cannot be watched, at once: the run fails, and nothing is left). The
/// clock stops when wait4 returns.
pub fn wait_child(
    pid: libc::pid_t,
    start: Instant,
    timeout: Option<Duration>,
) -> Result<Exited, LaunchError> {
    let watched = timeout.map(|limit| exits_within(pid, limit, start));
    let timed_out = !matches!(watched, None | Some(Ok(true)));
    if timed_out {
        // SAFETY: our own child, not reaped yet, and the group it leads.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
            libc::kill(pid, libc::SIGKILL);
        }
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
            return Err(LaunchError::last_os("wait4"));
        }
    }
    let wall_ns = start.elapsed().as_nanos() as u64;
    CHILD.store(-1, Ordering::SeqCst);
    if let Some(Err(e)) = watched {
        return Err(e);
    }
    Ok(Exited {
        status,
        ru,
        wall_ns,
        timed_out,
    })
}

/// The measurements a run may ask for beside wait4's, opened on the child before its release.
pub struct Watch {
    counters: Counters,
    mapped: Mapped,
    sampler: Option<Sampler>,
}

/// A run given up before its account (a wait that failed) still stops its memory sampler, so
/// that the launcher is single-threaded again when it forks the next run.
impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(sampler) = self.sampler.take() {
            sampler.finish();
        }
    }
}

impl Watch {
    pub fn open(pid: libc::pid_t, perf_counters: bool, mapped: bool) -> Watch {
        Watch {
            counters: Counters::open(pid, perf_counters),
            mapped: Mapped::open(pid, mapped),
            sampler: None,
        }
    }

    /// Starts RSS/PSS sampling (every `interval_ms`; 0: none) right before the release.
    pub fn sample(&mut self, pid: libc::pid_t, interval_ms: u64) {
        self.sampler = Some(Sampler::start(pid, interval_ms));
    }

    /// The run's account, with the tree's peak read from its cgroup (and why there is none).
    pub fn account(
        mut self,
        exited: &Exited,
        exec_error: Option<String>,
        tree_peak_kib: Option<u64>,
        tree_peak_note: Option<String>,
    ) -> Account {
        let memory = self.sampler.take().map(Sampler::finish).unwrap_or_default();
        let (status, ru) = (exited.status, &exited.ru);
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        let (exit_code, signal) = if libc::WIFEXITED(status) {
            (Some(libc::WEXITSTATUS(status)), None)
        } else {
            (None, Some(libc::WTERMSIG(status)))
        };
        Account {
            protocol: ACCOUNT_PROTOCOL,
            wall_ns: exited.wall_ns,
            user_ns: tv(ru.ru_utime),
            sys_ns: tv(ru.ru_stime),
            max_rss_kib: ru.ru_maxrss,
            minor_faults: ru.ru_minflt,
            major_faults: ru.ru_majflt,
            voluntary_switches: ru.ru_nvcsw,
            involuntary_switches: ru.ru_nivcsw,
            exit_code,
            signal,
            exec_error,
            counters: self.counters.read(),
            counters_note: self.counters.note.clone(),
            mapped: self.mapped.read(),
            mapped_note: self.mapped.note.clone(),
            tree_peak_kib,
            tree_peak_note,
            memory,
        }
    }
}

/// What the launcher reports about one run: one JSON object, its fields in this order, every
/// field always present (null where there is nothing). `benchlab.measure.account.Account` mirrors
/// it field for field and refuses an account with a field missing, unknown or of another type.
#[derive(Debug, Default, Serialize)]
pub struct Account {
    /// ACCOUNT_PROTOCOL: benchlab refuses another.
    pub protocol: u32,
    /// Fork to wait4's return, in native code.
    pub wall_ns: u64,
    /// wait4's rusage of the process and every descendant it waited for.
    pub user_ns: u64,
    pub sys_ns: u64,
    pub max_rss_kib: libc::c_long,
    pub minor_faults: libc::c_long,
    pub major_faults: libc::c_long,
    pub voluntary_switches: libc::c_long,
    pub involuntary_switches: libc::c_long,
    /// One of the two is set: how the process ended.
    pub exit_code: Option<libc::c_int>,
    pub signal: Option<libc::c_int>,
    /// Why the command could not be executed (exec's error); the exit code is then 127.
    pub exec_error: Option<String>,
    /// Perf event counts by name (`--perf-counters`), and why some are missing.
    pub counters: Map<String, Value>,
    pub counters_note: Option<String>,
    /// The files mapped executable (`--mapped`), and why they are not known.
    pub mapped: Option<Vec<String>>,
    pub mapped_note: Option<String>,
    /// The whole tree's memory peak from its cgroup, and why there is none.
    pub tree_peak_kib: Option<u64>,
    pub tree_peak_note: Option<String>,
    /// RSS and PSS means and peaks over the run's samples (`--memory-interval-ms`).
    pub memory: Map<String, Value>,
}

/// One JSON line in a single write, so that a reader never sees half an account.
pub fn write_line(fd: RawFd, value: &impl Serialize) -> std::io::Result<()> {
    let mut line = serde_json::to_string(value)?;
    line.push('\n');
    // SAFETY: a descriptor benchlab passes and keeps open; ManuallyDrop leaves it open here too.
    let mut file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    file.write_all(line.as_bytes())
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
    let cargs = match cstrings(argv.iter().map(String::as_str)) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("benchlab-launch: {e}");
            return 2;
        }
    };
    let ptrs = pointers(&cargs);
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
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let setup = ChildSetup {
        argv: &ptrs,
        envp: None,
        stdio: None,
        close: Some(result_fd),
        own_group: false,
        container: settings.container.as_ref().map(|c| (c, cwd.as_path())),
    };
    let mut child = match fork_child(&setup, &argv[0]) {
        Ok(child) => child,
        Err(e) => {
            eprintln!("benchlab-launch: {e}");
            return 1;
        }
    };
    let pid = child.pid;
    if let Some(ns) = &own_pid_namespace {
        if let Err(e) = container::back_to_own_pid_namespace(ns) {
            eprintln!("benchlab-launch: {e}");
            child.abandon();
            return 1;
        }
    }
    let mut watch = Watch::open(pid, settings.perf_counters, settings.mapped);
    let (memory_limits, cpu_limits) = limits(settings);
    let mut cgroup = RunCgroup::join(settings.cgroup.as_deref(), &memory_limits, pid);
    let mut cpu_group = RunCgroup::join(
        settings
            .cpu_cgroup
            .as_deref()
            .filter(|_| !cpu_limits.is_empty()),
        &cpu_limits,
        pid,
    );
    let limited = !memory_limits.is_empty() || !cpu_limits.is_empty();
    if limited && (!cgroup.joined() || (!cpu_limits.is_empty() && !cpu_group.joined())) {
        let why = cgroup
            .note
            .as_deref()
            .or(cpu_group.note.as_deref())
            .unwrap_or("no cgroup to put them in");
        eprintln!("benchlab-launch: the container's limits cannot be set: {why}");
        child.abandon();
        cgroup.remove();
        cpu_group.remove();
        return 1;
    }
    child.wait_ready();
    watch.sample(pid, settings.memory_interval_ms);
    let start = child.release();
    let exited = match wait_child(pid, start, None) {
        Ok(exited) => exited,
        Err(e) => {
            eprintln!("benchlab-launch: {e}");
            return 1;
        }
    };
    let tree_peak_kib = cgroup.peak_kib();
    cgroup.remove();
    cpu_group.remove();
    end_if_orphaned();
    let account = watch.account(
        &exited,
        child.exec_error(),
        tree_peak_kib,
        cgroup.note.clone(),
    );
    if write_line(result_fd, &account).is_err() {
        eprintln!("benchlab-launch: file descriptor {result_fd} is not open for the result");
        return 1;
    }
    0
}
