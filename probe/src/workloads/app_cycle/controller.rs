//! The app cycle's controller: one thread that forks the apps (as Android's zygote does), asks
//! them to launch, dwell and trim over a socket each, and times every launch; between answers
//! it handles the PSI events, so the killers (`killers`) act while a launch is under way.

use super::*;
use crate::workload::{failed, WorkloadError};

#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Start {
    Cold,
    Warm,
    Hot,
}

pub(super) const STARTS: [(Start, &str); 3] = [
    (Start::Hot, "hot"),
    (Start::Warm, "warm"),
    (Start::Cold, "cold"),
];

/// One launch, as the run's details keep it.
pub(super) struct Launch {
    pub(super) iteration: u64,
    pub(super) app: usize,
    pub(super) start: Start,
    pub(super) requested_ns: u64,
    /// None: the app did not come up
    pub(super) latency_ns: Option<u64>,
    /// major faults the app took during the launch
    pub(super) majflt: Option<u64>,
    /// the PER_LAUNCH counters' change over the launch's window (the whole machine's: while
    /// one app launches, the others are idle)
    pub(super) counters: [Option<u64>; 4],
}

pub(super) const PER_LAUNCH: [&str; 4] = ["refault_anon", "refault_file", "pswpin", "allocstall"];

pub(super) fn launch_counters() -> [Option<u64>; 4] {
    let vm = vmstat_exact();
    [
        vm.get("workingset_refault_anon").copied(),
        vm.get("workingset_refault_file").copied(),
        vm.get("pswpin").copied(),
        allocstall(&vm),
    ]
}

#[derive(Default)]
pub(super) struct Slot {
    pub(super) pid: i32,
    pub(super) sock: Option<UnixStream>,
    /// its activity state is alive (released by a TRIM_MEMORY_COMPLETE)
    pub(super) activity: bool,
    /// when it was last in the foreground (launch number)
    pub(super) used: u64,
}

pub(super) struct Settings {
    pub(super) dwell_ms: u64,
    pub(super) cached_limit: usize,
    pub(super) timeout_ns: u64,
}

pub(super) struct Controller {
    pub(super) profiles: Vec<Profile>,
    pub(super) slots: Vec<Slot>,
    pub(super) lmkd: Option<lmkd::Lmkd>,
    pub(super) settings: Settings,
    pub(super) sent: HashMap<i32, Killer>,
    pub(super) kills: Kills,
    pub(super) corrupt: Option<WorkloadError>,
    pub(super) adj_note: Option<String>,
    /// one memory cgroup per app, for accounting; None where there are none
    pub(super) cgroups: Option<accounting::AppCgroups>,
}

impl Controller {
    pub(super) fn alive(&self, app: usize) -> bool {
        self.slots[app].pid != 0
    }

    /// Forks app `app`: it maps and fills its memory and sends READY (a cold start).
    pub(super) fn fork_app(&mut self, app: usize) -> Result<(), WorkloadError> {
        let (mine, theirs) = UnixStream::pair().map_err(|e| WorkloadError::io("socketpair", e))?;
        let parent = std::process::id() as i32;
        // SAFETY: the controller is single-threaded; the child leaves with _exit only.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(WorkloadError::last_os("fork"));
        }
        if pid == 0 {
            let cgroup = self.cgroups.as_ref().map(|c| c.procs(app));
            let code = match become_app(parent, theirs.into_raw_fd(), &self.profiles[app], cgroup) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("benchlab-probe memory.app_cycle: {e}");
                    1
                }
            };
            // SAFETY: leaving the child without running the controller's destructors.
            unsafe { libc::_exit(code) }
        }
        drop(theirs);
        self.slots[app] = Slot {
            pid,
            sock: Some(mine),
            activity: true,
            used: 0,
        };
        Ok(())
    }

    /// Reaps every app that has ended and counts who ended it.
    pub(super) fn reap(&mut self) {
        loop {
            let mut status = 0;
            // SAFETY: waiting for our own children without blocking.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                return;
            }
            self.ended(pid, status);
        }
    }

    /// Sends a command and waits for its answer; None: the app died or hung (then it is gone).
    pub(super) fn ask(&mut self, app: usize, kind: u64, arg: u64) -> Option<Message> {
        let sent = match self.slots[app].sock.as_mut() {
            Some(sock) => Message {
                kind,
                at_ns: arg,
                ..Default::default()
            }
            .send(sock)
            .is_ok(),
            None => false,
        };
        if !sent {
            self.gone(app);
            return None;
        }
        self.answer(app)
    }

    /// The app's next message, handling stall events while waiting.
    pub(super) fn answer(&mut self, app: usize) -> Option<Message> {
        let deadline = monotonic_ns() + self.settings.timeout_ns;
        loop {
            let sock_fd = self.slots[app].sock.as_ref()?.as_raw_fd();
            let mut fds = vec![libc::pollfd {
                fd: sock_fd,
                events: libc::POLLIN,
                revents: 0,
            }];
            if let Some(l) = &self.lmkd {
                fds.extend(l.fds().iter().map(|&fd| libc::pollfd {
                    fd,
                    events: libc::POLLPRI,
                    revents: 0,
                }));
            }
            // SAFETY: polling descriptors we own, for at most 100 ms.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 100) };
            if ready < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return None;
            }
            let mut events = 0;
            for (i, event) in [(1, lmkd::Event::Partial), (2, lmkd::Event::Full)] {
                if fds.get(i).is_some_and(|f| f.revents & libc::POLLPRI != 0) {
                    self.pressure(event);
                    events += 1;
                }
            }
            if events == 0
                && self
                    .lmkd
                    .as_ref()
                    .is_some_and(|l| l.polling(monotonic_ns()))
            {
                self.pressure(lmkd::Event::Poll);
            }
            if fds[0].revents != 0 {
                let received = self.slots[app].sock.as_mut().map(Message::receive);
                return match received {
                    Some(Ok(m)) if m.kind == app::CORRUPT => {
                        self.corrupt.get_or_insert(failed!(
                            "app {app}: a page of its memory came back changed (page {})",
                            m.detail
                        ));
                        self.gone(app);
                        None
                    }
                    Some(Ok(m)) => Some(m),
                    _ => {
                        self.gone(app);
                        None
                    }
                };
            }
            self.reap();
            if !self.alive(app) {
                return None;
            }
            if monotonic_ns() > deadline {
                self.kill(app, Killer::Timeout);
                return None;
            }
        }
    }

    /// An app that is ending (its socket broke, or it was killed): wait for it and count why.
    pub(super) fn gone(&mut self, app: usize) {
        let pid = self.slots[app].pid;
        if pid == 0 {
            return;
        }
        let mut status = 0;
        // SAFETY: waiting for our own child, which closed its end.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid {
            self.ended(pid, status);
        } else {
            self.slots[app] = Slot::default();
        }
    }

    /// One launch of `app`, as launch number `n`: its start type and latency (None: it failed).
    pub(super) fn launch(
        &mut self,
        app: usize,
        iteration: u64,
        n: u64,
    ) -> Result<Launch, WorkloadError> {
        let start = if !self.alive(app) {
            Start::Cold
        } else if self.slots[app].activity {
            Start::Hot
        } else {
            Start::Warm
        };
        self.slots[app].used = n; // the foreground app: lmkd never takes it
        let before = launch_counters();
        let requested = monotonic_ns();
        let answer = if start == Start::Cold {
            self.fork_app(app)?;
            self.slots[app].used = n;
            self.answer(app)
        } else {
            self.ask(app, app::LAUNCH, 0)
        };
        let after = launch_counters();
        let ready = answer.filter(|m| m.kind == app::READY);
        let latency_ns = ready.map(|m| m.at_ns.saturating_sub(requested));
        if latency_ns.is_some() {
            self.slots[app].activity = true;
            self.write_adjs();
            self.ask(app, app::FOREGROUND, self.settings.dwell_ms);
        }
        self.manage(app);
        let mut counters = [None; 4];
        for (i, c) in counters.iter_mut().enumerate() {
            *c = after[i].zip(before[i]).map(|(a, b)| a.saturating_sub(b));
        }
        Ok(Launch {
            iteration,
            app,
            start,
            requested_ns: requested,
            latency_ns,
            majflt: ready.map(|m| m.majflt),
            counters,
        })
    }

    /// Ends every app still alive (not counted as kills).
    pub(super) fn close(&mut self) {
        for app in 0..self.slots.len() {
            let pid = self.slots[app].pid;
            if pid != 0 {
                // SAFETY: our own child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                let mut status = 0;
                unsafe { libc::waitpid(pid, &mut status, 0) };
                self.slots[app] = Slot::default();
            }
        }
    }
}

/// The forked child's set-up: it dies with the controller, never writes the probe's stdout,
/// keeps no descriptor but its socket, and lives as the app.
pub(super) fn become_app(
    parent: i32,
    sock: i32,
    profile: &Profile,
    cgroup: Option<PathBuf>,
) -> Result<(), WorkloadError> {
    if let Some(procs) = cgroup {
        // before the app maps anything, so every page it touches is charged to its own cgroup
        fs::write(&procs, std::process::id().to_string())
            .map_err(|e| WorkloadError::io(procs.display().to_string(), e))?;
    }
    // SAFETY: plain system calls on this (child) process's own state.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            return Err(failed!("the controller ended"));
        }
        let name = std::ffi::CString::new(format!("app-{:03}", profile.index)).unwrap();
        libc::prctl(libc::PR_SET_NAME, name.as_ptr());
        libc::dup2(2, 1);
        if sock != 3 {
            libc::dup2(sock, 3);
        }
        libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32);
    }
    // SAFETY: descriptor 3 is the socket, owned from here on.
    let sock = unsafe { UnixStream::from_raw_fd(3) };
    app::live(profile, sock)
}
