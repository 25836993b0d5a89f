//! `benchlab-launch --serve`: one launcher for a whole experiment, forking each of its runs.
//!
//! Starting a launcher process per run from the Python runner costs more than the shortest runs
//! themselves: a fork of a 100+ MiB interpreter, the launcher's exec and dynamic loading, ~1.5 ms
//! per run against /bin/true's 0.6 ms. A launcher that stays up pays that once: benchlab writes
//! each run as a JSON line on its stdin and reads the run's account as a JSON line on its stdout,
//! and stores it before it asks for the next, so every run is still committed the moment it ends.
//!
//! A served run keeps every guarantee of a one-shot launch (`launch`): the child is forked from
//! this small process (its max-RSS watermark, not the interpreter's), stopped until its perf
//! counters, library watch and fresh memory cgroup are in place, timed around release and wait4,
//! and asks for SIGKILL should the launcher die. What Python's side did around a one-shot
//! launcher is done here: the child leads a process group of its own in the launcher's session,
//! which is killed whole when it ends or overstays its timeout (`timed_out`), and what left the
//! group is killed in the run's cgroup before the run is answered (the cgroup is removed after the
//! answer, and the next run's made, while benchlab stores the run, so that a run waits only to
//! join a fresh cgroup: a fresh one per run, for a reused one would carry the page cache earlier
//! runs brought in into this run's peak); its environment, folder and CPUs are the run's; its
//! stdout and stderr go to two files benchlab passed (`--stdout-fd`, `--stderr-fd`), emptied
//! before each run, of which benchlab reads back a tail.
//!
//! Nothing outlives benchlab: the launcher asks for SIGTERM when benchlab dies (`--die-with`),
//! on which the workload's group is killed, its cgroup removed and the launcher ends; it also
//! ends when its stdin closes. Its cgroup is named after it (`run-PID`), like a one-shot
//! launcher's, so that the next experiment clears what a launcher killed by `kill -9` left.
//!
//! Request: `{"argv": [...], "env": {"NAME": "value", ...}, "cwd": "/path" or null, "cpus": [0, 2]
//! or null, "timeout_ms": N, "perf_counters": bool, "mapped": bool, "memory_interval_ms": N}`.
//! Answer: the account a one-shot launch writes, with `"timed_out"`; or `{"error": "why"}` for a
//! run that could not be started (nothing ran).

use crate::launch::{self, Account, ChildSetup, LaunchError, Watch};
use crate::memory::RunCgroup;
use serde::Serialize;
use serde_json::{json, Value};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A served run's answer: the one-shot account, then whether the run passed its timeout.
#[derive(Serialize)]
struct Served {
    #[serde(flatten)]
    account: Account,
    timed_out: bool,
}

pub struct ServeSettings {
    pub cgroup: Option<String>,
    pub stdout_fd: RawFd,
    pub stderr_fd: RawFd,
    pub die_with: Option<libc::pid_t>,
}

/// Request lines from stdin, read with plain read(2) so that SIGTERM interrupts the wait
/// (std's readers retry on EINTR); None at end of file or once the launcher is told to stop.
struct Requests {
    buffer: Vec<u8>,
}

impl Requests {
    fn next(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
                let line = self.buffer[..end].to_vec();
                self.buffer.drain(..=end);
                return Some(line);
            }
            if launch::orphaned() {
                return None;
            }
            let mut chunk = [0u8; 65536];
            // SAFETY: reading into a buffer we own.
            let n = unsafe { libc::read(0, chunk.as_mut_ptr() as *mut libc::c_void, chunk.len()) };
            match n {
                0 => return None,
                n if n > 0 => self.buffer.extend_from_slice(&chunk[..n as usize]),
                _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
                    continue
                }
                _ => return None,
            }
        }
    }
}

/// What stays the same from run to run.
struct Context {
    cgroup: Option<String>,
    next: RunCgroup, // the next run's, made while benchlab stores the last one
    stdio: [RawFd; 3],
    home: PathBuf,             // the folder of runs that name none: benchlab's
    all_cpus: libc::cpu_set_t, // the launcher's CPUs as started, for runs that name none
    pinned: Option<Vec<usize>>,
}

/// Why a request started no run: answered as its `error` field (docs/protocol.md), which
/// benchlab shows as "cannot start COMMAND: ...", so the words are the protocol's.
#[derive(Debug, thiserror::Error)]
enum RequestError {
    #[error("the request is not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("{0} is not a list")]
    NotList(&'static str),
    #[error("{0} holds a non-string")]
    NonString(&'static str),
    #[error("no command given")]
    NoCommand,
    #[error("env {0} is not a string")]
    EnvNotString(String),
    #[error("env is not a table")]
    EnvNotTable,
    #[error("cpus holds {0}")]
    NotCpu(Value),
    #[error("timeout_ms is not a count")]
    NoTimeout,
    #[error("cannot change to folder {}: {source}", .folder.display())]
    Folder { folder: PathBuf, source: io::Error },
    #[error("no such CPU: {0}")]
    NoSuchCpu(usize),
    #[error("cannot run on CPUs {cpus:?}: {source}")]
    Affinity {
        cpus: Option<Vec<usize>>,
        source: io::Error,
    },
    #[error("cannot empty the run's output file: {0}")]
    Truncate(io::Error),
    #[error(transparent)]
    Launch(#[from] LaunchError),
}

fn strings(value: &Value, field: &'static str) -> Result<Vec<String>, RequestError> {
    value
        .as_array()
        .ok_or(RequestError::NotList(field))?
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or(RequestError::NonString(field))
        })
        .collect()
}

fn truncate(fd: RawFd) -> Result<(), RequestError> {
    // SAFETY: a file descriptor benchlab passed for the run's output.
    if unsafe { libc::ftruncate(fd, 0) } != 0 || unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } != 0
    {
        return Err(RequestError::Truncate(io::Error::last_os_error()));
    }
    Ok(())
}

impl Context {
    /// The launcher's own folder and CPUs become the run's, so that the child starts with them
    /// (as a one-shot launcher is started in the run's folder, pinned to its CPUs).
    fn place(&mut self, cwd: Option<&str>, cpus: Option<Vec<usize>>) -> Result<(), RequestError> {
        let folder = cwd.map_or(self.home.as_path(), Path::new);
        std::env::set_current_dir(folder).map_err(|source| RequestError::Folder {
            folder: folder.to_path_buf(),
            source,
        })?;
        if cpus != self.pinned {
            let set = match &cpus {
                None => self.all_cpus,
                Some(list) => {
                    // SAFETY: a zeroed cpu set filled through libc's own macros.
                    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
                    for &cpu in list {
                        if cpu >= libc::CPU_SETSIZE as usize {
                            return Err(RequestError::NoSuchCpu(cpu));
                        }
                        // SAFETY: a CPU number checked against the set's size.
                        unsafe { libc::CPU_SET(cpu, &mut set) };
                    }
                    set
                }
            };
            // SAFETY: setting our own affinity from a set we own.
            if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) }
                != 0
            {
                return Err(RequestError::Affinity {
                    cpus,
                    source: io::Error::last_os_error(),
                });
            }
            self.pinned = cpus;
        }
        Ok(())
    }

    /// Runs one request to its end, with the cgroup it used (to be removed once it is answered);
    /// Err when nothing could be started.
    fn run(&mut self, request: &Value) -> Result<(Served, RunCgroup), RequestError> {
        let argv = strings(&request["argv"], "argv")?;
        if argv.is_empty() {
            return Err(RequestError::NoCommand);
        }
        let env: Vec<String> = match &request["env"] {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| {
                    v.as_str()
                        .map(|v| format!("{k}={v}"))
                        .ok_or_else(|| RequestError::EnvNotString(k.clone()))
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(RequestError::EnvNotTable),
        };
        let cpus = match &request["cpus"] {
            Value::Null => None,
            Value::Array(list) => Some(
                list.iter()
                    .map(|v| {
                        v.as_u64()
                            .map(|c| c as usize)
                            .ok_or_else(|| RequestError::NotCpu(v.clone()))
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            _ => return Err(RequestError::NotList("cpus")),
        };
        let timeout = Duration::from_millis(
            request["timeout_ms"]
                .as_u64()
                .ok_or(RequestError::NoTimeout)?,
        );
        let flag = |name: &str| request[name].as_bool().unwrap_or(false);
        let cargs = launch::cstrings(argv.iter().map(String::as_str))?;
        let cenv: Vec<CString> = launch::cstrings(env.iter().map(String::as_str))?;
        let (argp, envp) = (launch::pointers(&cargs), launch::pointers(&cenv));
        self.place(request["cwd"].as_str(), cpus)?;
        truncate(self.stdio[1])?;
        truncate(self.stdio[2])?;
        let setup = ChildSetup {
            argv: &argp,
            envp: Some(&envp),
            stdio: Some(self.stdio),
            close: None,
            own_group: true,
            container: None,
        };
        let mut child = launch::fork_child(&setup, &argv[0])?;
        let pid = child.pid;
        let mut watch = Watch::open(pid, flag("perf_counters"), flag("mapped"));
        let mut cgroup = std::mem::replace(&mut self.next, RunCgroup::make(None, &[]));
        cgroup.add(pid);
        child.wait_ready();
        watch.sample(pid, request["memory_interval_ms"].as_u64().unwrap_or(0));
        let start = child.release();
        let exited = launch::wait_child(pid, start, Some(timeout));
        // SAFETY: the group the child led: what it started and left running dies with the run.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        let exited = match exited {
            Ok(exited) => exited,
            Err(e) => {
                cgroup.remove();
                return Err(e.into());
            }
        };
        cgroup.kill_left(); // before the answer, so that nothing writes to the run's output once it is read
        let account = watch.account(
            &exited,
            child.exec_error(),
            cgroup.peak_kib(),
            cgroup.note.clone(),
        );
        let timed_out = exited.timed_out;
        Ok((Served { account, timed_out }, cgroup))
    }

    /// The answer to one request line, and the cgroup of the run it started.
    fn answer(&mut self, line: &[u8]) -> (Value, Option<RunCgroup>) {
        let served = serde_json::from_slice::<Value>(line)
            .map_err(RequestError::NotJson)
            .and_then(|request| self.run(&request));
        match served {
            Ok((served, cgroup)) => (json!(served), Some(cgroup)),
            Err(e) => (json!({ "error": e.to_string() }), None),
        }
    }
}

pub fn serve(settings: &ServeSettings) -> i32 {
    launch::SERVING.store(true, std::sync::atomic::Ordering::SeqCst);
    if let Some(parent) = settings.die_with {
        if !launch::die_with(parent) {
            eprintln!("benchlab-launch: process {parent}, which started it, has already ended");
            return 1;
        }
    }
    let devnull = match std::fs::File::open("/dev/null") {
        Ok(f) => f,
        Err(e) => {
            eprintln!("benchlab-launch: /dev/null: {e}");
            return 1;
        }
    };
    for fd in [settings.stdout_fd, settings.stderr_fd] {
        // SAFETY: descriptors benchlab passed; the workload gets them only as its stdout and stderr.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            eprintln!("benchlab-launch: file descriptor {fd} is not open for the run's output");
            return 1;
        }
    }
    // SAFETY: reading our own affinity into a zeroed set.
    let mut all_cpus: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut all_cpus) };
    let mut context = Context {
        cgroup: settings.cgroup.clone(),
        next: RunCgroup::make(settings.cgroup.as_deref(), &[]),
        stdio: [devnull.as_raw_fd(), settings.stdout_fd, settings.stderr_fd],
        home: std::env::current_dir().unwrap_or_else(|_| "/".into()),
        all_cpus,
        pinned: None,
    };
    let mut requests = Requests { buffer: Vec::new() };
    while let Some(line) = requests.next() {
        let (answer, used) = context.answer(&line);
        // benchlab may be gone, then nothing is waiting for the answer
        let answered = !launch::orphaned() && launch::write_line(1, &answer).is_ok();
        if let Some(mut cgroup) = used {
            cgroup.remove(); // between runs, once what the run left there has exited
        }
        if !answered {
            break;
        }
        if !context.next.joined() {
            context.next = RunCgroup::make(context.cgroup.as_deref(), &[]);
        }
    }
    context.next.remove();
    0
}
