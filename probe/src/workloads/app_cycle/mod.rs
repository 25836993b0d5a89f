//! `memory.app_cycle`: the app cycle kernel engineers judge page reclaim with
//! (Android's MGLRU evaluation): apps launched in a seeded pseudo-random order,
//! every app once per iteration, under memory pressure, with start types as
//! Android decides them, an activity-manager-like cached-app limit and trims,
//! an lmkd-like killer on PSI triggers, and the kernel's reclaim counters over
//! the cycle. One run is one whole cycle; every launch is measured inside it.
//!
//! The controller is one thread: it forks the apps (as Android's zygote does;
//! a single-threaded parent forks safely), asks them to launch, dwell in the
//! foreground and trim over a socket each, and between those answers handles
//! the PSI events, so the killer acts while a launch is under way. A launch's
//! latency is the app's READY timestamp minus the request's, both on
//! CLOCK_MONOTONIC, so the controller's own delays are not in it.
//!
//! Memory pressure itself is not made here: it is the variant's (a hugetlb
//! ballast, zram, swappiness: benchlab's `memory` variant field) or the
//! guest's size, so that identical cycles run under each setting.

mod accounting;
mod app;
mod kernel;
mod lmkd;
mod reclaim_trace;

use crate::protocol::Said;
use crate::report::{Counter, Direction, Entry};
use crate::timing::Stopwatch;
use crate::workload::{About, Digest, Kind, MetricSpec, OptionSpec, Options, Workload, SEED};
use app::{Message, Profile, PAGE};
use kernel::{allocstall, kswapd_cpu_ns, monotonic_ns, psi, vmstat, zram_swaps, Psi};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

pub struct AppCycle;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

static OPTIONS: &[OptionSpec] = &[
    OptionSpec { name: "apps", default: "30", help: "apps in the cycle", kind: Kind::Int { min: 2, max: 512 } },
    OptionSpec { name: "iterations", default: "10", help: "rounds; each launches every app once, in a seeded order", kind: Kind::Int { min: 1, max: 100_000 } },
    OptionSpec { name: "seed", default: "1", help: "seed of the launch order and of the apps' profiles and contents", kind: SEED },
    OptionSpec { name: "anon", default: "24m", help: "mean anonymous memory of an app (each app's is 0.5-1.5 times it)", kind: Kind::Size { min: MIB, max: 64 * GIB } },
    OptionSpec { name: "activity", default: "40", help: "percent of an app's anonymous memory that is activity/UI state (released by a trim, rebuilt by a warm start)", kind: Kind::Int { min: 5, max: 95 } },
    OptionSpec { name: "code", default: "8m", help: "mean size of an app's own code file, mapped privately (0.5-1.5 times it)", kind: Kind::Size { min: 64 << 10, max: 4 * GIB } },
    OptionSpec { name: "framework", default: "32m", help: "size of the framework file every app maps", kind: Kind::Size { min: 64 << 10, max: 16 * GIB } },
    OptionSpec { name: "compressible", default: "66", help: "percent of each anonymous page that repeats one word (the rest is random): sets how well it compresses", kind: Kind::Int { min: 0, max: 99 } },
    OptionSpec { name: "dwell", default: "200", help: "ms an app stays in the foreground after its launch, touching its working set", kind: Kind::Int { min: 0, max: 600_000 } },
    OptionSpec { name: "cached-limit", default: "32", help: "cached apps the activity manager keeps before it kills the oldest (Android's default 32)", kind: Kind::Int { min: 1, max: 1024 } },
    OptionSpec { name: "lmkd", default: "1", help: "1: the lmkd-like killer on PSI triggers; 0: none (kills by the activity manager and the kernel only)", kind: Kind::Flag },
    OptionSpec { name: "psi-some", default: "70", help: "lmkd: partial-stall threshold, ms per window", kind: Kind::Int { min: 1, max: 10_000 } },
    OptionSpec { name: "psi-full", default: "700", help: "lmkd: complete-stall threshold, ms per window", kind: Kind::Int { min: 1, max: 10_000 } },
    OptionSpec { name: "psi-window", default: "1000", help: "lmkd: PSI window, ms (scaled up where the kernel refuses it)", kind: Kind::Int { min: 500, max: 10_000 } },
    OptionSpec { name: "swap-free-low", default: "20", help: "lmkd: percent of swap free below which swap counts as low", kind: Kind::Int { min: 0, max: 100 } },
    OptionSpec { name: "thrashing-limit", default: "100", help: "lmkd: file refaults per window, percent of the file LRU, above which the cache thrashes", kind: Kind::Int { min: 1, max: 10_000 } },
    OptionSpec { name: "thrashing-decay", default: "10", help: "lmkd: percent the thrashing limit drops after each kill", kind: Kind::Int { min: 0, max: 100 } },
    OptionSpec { name: "trace", default: "1", help: "1: direct-reclaim latency from the vmscan tracepoints (root, tracefs); 0: counts only", kind: Kind::Flag },
    OptionSpec { name: "trace-buffer", default: "16m", help: "trace buffer per CPU", kind: Kind::Size { min: 64 << 10, max: GIB } },
    OptionSpec { name: "launch-timeout", default: "300", help: "seconds a launch may take before the app counts as hung (killed, a failed launch)", kind: Kind::Int { min: 1, max: 86_400 } },
    OptionSpec { name: "dir", default: "", help: "where the code and framework files go; a disk-backed filesystem (default /var/benchlab/disk where it exists, else /var/tmp)", kind: Kind::Text },
];

macro_rules! metric {
    ($name:expr, $unit:expr, $dir:expr, $help:expr) => {
        MetricSpec {
            name: $name,
            unit: $unit,
            direction: $dir,
            help: $help,
        }
    };
}

static METRICS: &[MetricSpec] = &[
    metric!(
        "real_time",
        "ns",
        "lower",
        "mean launch time over every launch of the cycle"
    ),
    metric!(
        "launch_hot",
        "ms",
        "lower",
        "mean hot launch time (process and activity alive)"
    ),
    metric!(
        "launch_warm",
        "ms",
        "lower",
        "mean warm launch time (process alive, activity state rebuilt)"
    ),
    metric!(
        "launch_cold",
        "ms",
        "lower",
        "mean cold launch time (a new process)"
    ),
    metric!("launches_hot", "count", "none", "hot launches"),
    metric!("launches_warm", "count", "none", "warm launches"),
    metric!("launches_cold", "count", "none", "cold launches"),
    metric!(
        "hot_cold",
        "ratio",
        "higher",
        "hot launches per cold launch"
    ),
    metric!(
        "hot_warm",
        "ratio",
        "higher",
        "hot launches per warm launch"
    ),
    metric!(
        "warm_cold",
        "ratio",
        "higher",
        "warm launches per cold launch"
    ),
    metric!(
        "launch_failures",
        "count",
        "lower",
        "launches that did not come up (the app died or hung)"
    ),
    metric!("kills", "count", "lower", "apps killed, every source"),
    metric!(
        "kills_am",
        "count",
        "lower",
        "apps the activity manager killed (over the cached-app limit)"
    ),
    metric!(
        "kills_lmk",
        "count",
        "lower",
        "apps the low-memory killer killed (kills_lmk_REASON by reason)"
    ),
    metric!(
        "kills_oom",
        "count",
        "lower",
        "apps the kernel killed (SIGKILL benchlab did not send)"
    ),
    metric!(
        "oom_kill",
        "count",
        "none",
        "the kernel's oom_kill count over the cycle (every process)"
    ),
    metric!(
        "refault_anon",
        "count",
        "lower",
        "anonymous working-set refaults (workingset_refault_anon)"
    ),
    metric!(
        "refault_file",
        "count",
        "lower",
        "file working-set refaults (workingset_refault_file)"
    ),
    metric!(
        "kswapd_cpu",
        "ms",
        "lower",
        "CPU time of kswapd (schedstat)"
    ),
    metric!(
        "efficiency_kswapd",
        "%",
        "higher",
        "pgsteal_kswapd / pgscan_kswapd"
    ),
    metric!(
        "efficiency_direct",
        "%",
        "higher",
        "pgsteal_direct / pgscan_direct"
    ),
    metric!(
        "efficiency_anon",
        "%",
        "higher",
        "pgsteal_anon / pgscan_anon"
    ),
    metric!(
        "efficiency_file",
        "%",
        "higher",
        "pgsteal_file / pgscan_file"
    ),
    metric!(
        "direct_share",
        "%",
        "none",
        "share of pages scanned by direct reclaim: direct / (direct + kswapd)"
    ),
    metric!(
        "direct_reclaims",
        "count",
        "lower",
        "entries into direct reclaim (traced; allocstall without a trace)"
    ),
    metric!(
        "direct_stall",
        "ms",
        "lower",
        "time spent in direct reclaim, summed"
    ),
    metric!(
        "direct_lt5ms",
        "count",
        "lower",
        "direct reclaims under 5 ms"
    ),
    metric!(
        "direct_5_50ms",
        "count",
        "lower",
        "direct reclaims of 5-50 ms"
    ),
    metric!(
        "direct_50_500ms",
        "count",
        "lower",
        "direct reclaims of 50-500 ms"
    ),
    metric!(
        "direct_gt500ms",
        "count",
        "lower",
        "direct reclaims over 500 ms"
    ),
    metric!(
        "trace_lost",
        "count",
        "none",
        "trace events the kernel overwrote before they were read"
    ),
    metric!(
        "allocstall",
        "count",
        "none",
        "the kernel's allocstall count (entries into direct reclaim)"
    ),
    metric!("pswpin", "count", "none", "pages swapped in"),
    metric!("pswpout", "count", "none", "pages swapped out"),
    metric!(
        "psi_some",
        "ms",
        "lower",
        "time some task stalled on memory (PSI)"
    ),
    metric!(
        "psi_full",
        "ms",
        "lower",
        "time all tasks stalled on memory (PSI)"
    ),
    metric!(
        "zram_ratio",
        "ratio",
        "none",
        "zram: original / compressed size at the cycle's end"
    ),
    metric!(
        "zram_used_max",
        "B",
        "none",
        "zram: the most memory it used"
    ),
];

#[derive(Clone, Copy, PartialEq, Debug)]
enum Start {
    Cold,
    Warm,
    Hot,
}

const STARTS: [(Start, &str); 3] = [
    (Start::Hot, "hot"),
    (Start::Warm, "warm"),
    (Start::Cold, "cold"),
];

/// Who killed an app, as far as benchlab knows.
#[derive(Clone, Copy)]
enum Killer {
    ActivityManager,
    Lmkd(&'static str),
    /// the controller, after a launch that did not answer in time
    Timeout,
}

#[derive(Default)]
struct Kills {
    am: u64,
    lmk: BTreeMap<&'static str, u64>,
    oom: u64,
    timeouts: u64,
    crashes: u64,
}

/// One launch, as the run's details keep it.
struct Launch {
    iteration: u64,
    app: usize,
    start: Start,
    requested_ns: u64,
    /// None: the app did not come up
    latency_ns: Option<u64>,
    /// major faults the app took during the launch
    majflt: Option<u64>,
    /// the PER_LAUNCH counters' change over the launch's window (the whole machine's: while
    /// one app launches, the others are idle)
    counters: [Option<u64>; 4],
}

const PER_LAUNCH: [&str; 4] = ["refault_anon", "refault_file", "pswpin", "allocstall"];

fn launch_counters() -> [Option<u64>; 4] {
    let vm = vmstat();
    [
        vm.get("workingset_refault_anon").copied(),
        vm.get("workingset_refault_file").copied(),
        vm.get("pswpin").copied(),
        allocstall(&vm),
    ]
}

#[derive(Default)]
struct Slot {
    pid: i32,
    sock: Option<UnixStream>,
    /// its activity state is alive (released by a TRIM_MEMORY_COMPLETE)
    activity: bool,
    /// when it was last in the foreground (launch number)
    used: u64,
}

struct Settings {
    dwell_ms: u64,
    cached_limit: usize,
    timeout_ns: u64,
}

struct Controller {
    profiles: Vec<Profile>,
    slots: Vec<Slot>,
    lmkd: Option<lmkd::Lmkd>,
    settings: Settings,
    sent: HashMap<i32, Killer>,
    kills: Kills,
    corrupt: Option<String>,
    adj_note: Option<String>,
    /// one memory cgroup per app, for accounting; None where there are none
    cgroups: Option<accounting::AppCgroups>,
}

/// Android's oom_score_adj of the foreground app, the previous app and the cached range.
const FOREGROUND_APP_ADJ: i32 = 0;
const PREVIOUS_APP_ADJ: i32 = 700;
const CACHED_APP_MIN_ADJ: i32 = 900;
const CACHED_APP_MAX_ADJ: i32 = 999;
/// The activity manager trims when few cached apps are left (Android's TRIM_LOW_THRESHOLD and
/// TRIM_CRITICAL_THRESHOLD) or, here, when lmkd saw a complete-stall event within the last window.
const TRIM_LOW_CACHED: usize = 5;
const TRIM_CRITICAL_CACHED: usize = 3;
const PRESSURE_RECENT_NS: u64 = 2_000_000_000;

impl Controller {
    fn alive(&self, app: usize) -> bool {
        self.slots[app].pid != 0
    }

    /// Forks app `app`: it maps and fills its memory and sends READY (a cold start).
    fn fork_app(&mut self, app: usize) -> Result<(), String> {
        let (mine, theirs) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
        let parent = std::process::id() as i32;
        // SAFETY: the controller is single-threaded; the child leaves with _exit only.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!("fork: {}", std::io::Error::last_os_error()));
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
    fn reap(&mut self) {
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

    fn ended(&mut self, pid: i32, status: i32) {
        match self.sent.remove(&pid) {
            Some(Killer::ActivityManager) => self.kills.am += 1,
            Some(Killer::Lmkd(reason)) => *self.kills.lmk.entry(reason).or_default() += 1,
            Some(Killer::Timeout) => self.kills.timeouts += 1,
            None if libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL => {
                self.kills.oom += 1
            }
            None => self.kills.crashes += 1,
        }
        if let Some(slot) = self.slots.iter_mut().find(|s| s.pid == pid) {
            *slot = Slot::default();
        }
    }

    fn kill(&mut self, app: usize, killer: Killer) {
        let pid = self.slots[app].pid;
        self.sent.insert(pid, killer);
        // SAFETY: our own child, not yet reaped (its slot still names it).
        unsafe { libc::kill(pid, libc::SIGKILL) };
        self.gone(app);
    }

    /// lmkd's turn after a stall event: its decision, then the victim with the highest adj
    /// (the least recently used among equals); the foreground app is never its victim.
    fn pressure(&mut self, event: lmkd::Event) {
        let now = monotonic_ns();
        let Some(decision) = self.lmkd.as_mut().and_then(|l| l.decide(event, now)) else {
            return;
        };
        let victim = (0..self.slots.len())
            .filter(|&a| self.alive(a))
            .map(|a| (self.adj(a), a))
            .filter(|&(adj, _)| adj > FOREGROUND_APP_ADJ && adj >= decision.min_adj)
            .max_by_key(|&(adj, a)| (adj, std::cmp::Reverse(self.slots[a].used)));
        if let Some((_, app)) = victim {
            self.kill(app, Killer::Lmkd(decision.reason));
            if let Some(l) = self.lmkd.as_mut() {
                l.killed(monotonic_ns());
            }
        }
    }

    /// Alive apps, most recently used first.
    fn by_recency(&self) -> Vec<usize> {
        let mut alive: Vec<usize> = (0..self.slots.len()).filter(|&a| self.alive(a)).collect();
        alive.sort_by_key(|&a| std::cmp::Reverse(self.slots[a].used));
        alive
    }

    /// The adj the activity manager gives an app by its place in the recency order.
    fn adj(&self, app: usize) -> i32 {
        let order = self.by_recency();
        let rank = order.iter().position(|&a| a == app).unwrap_or(order.len());
        match rank {
            0 => FOREGROUND_APP_ADJ,
            1 => PREVIOUS_APP_ADJ,
            r => {
                let span = (CACHED_APP_MAX_ADJ - CACHED_APP_MIN_ADJ) as usize;
                CACHED_APP_MIN_ADJ
                    + ((r - 2) * span / self.settings.cached_limit.max(1)).min(span) as i32
            }
        }
    }

    /// Writes every app's oom_score_adj, so the kernel's OOM killer prefers the same victims.
    fn write_adjs(&mut self) {
        for app in self.by_recency() {
            let adj = self.adj(app);
            let path = format!("/proc/{}/oom_score_adj", self.slots[app].pid);
            if let Err(e) = fs::write(&path, adj.to_string()) {
                self.adj_note.get_or_insert_with(|| {
                    format!("{path}: {e}: the kernel's OOM killer does not see the apps' order")
                });
            }
        }
    }

    /// Sends a command and waits for its answer; None: the app died or hung (then it is gone).
    fn ask(&mut self, app: usize, kind: u64, arg: u64) -> Option<Message> {
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
    fn answer(&mut self, app: usize) -> Option<Message> {
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
                        self.corrupt.get_or_insert(format!(
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
    fn gone(&mut self, app: usize) {
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
    fn launch(&mut self, app: usize, iteration: u64, n: u64) -> Result<Launch, String> {
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

    /// The activity manager after a launch: over the cached-app limit the oldest cached apps
    /// are killed; under pressure the oldest cached apps get TRIM_MEMORY_COMPLETE, which makes
    /// them release their activity state: a third of them when memory is low (few cached apps
    /// left, as Android counts it, or a complete-stall event within the last window), two
    /// thirds when it is critical (fewer still). Partial stalls trim nothing: under lasting
    /// pressure they come every window, and every app, the oldest when its turn comes again in
    /// the cycle, would start warm.
    fn manage(&mut self, foreground: usize) {
        let order = self.by_recency();
        let cached: Vec<usize> = order
            .into_iter()
            .filter(|&a| a != foreground)
            .skip(1)
            .collect();
        let mut kept = cached.len();
        for &app in cached.iter().rev() {
            if kept <= self.settings.cached_limit {
                break;
            }
            self.kill(app, Killer::ActivityManager);
            kept -= 1;
        }
        let now = monotonic_ns();
        let recent = |t: u64| t != 0 && now - t < PRESSURE_RECENT_NS;
        let stalled = self.lmkd.as_ref().is_some_and(|l| recent(l.last_full_ns));
        let cached: Vec<usize> = cached.into_iter().filter(|&a| self.alive(a)).collect();
        let trimmed = if cached.len() <= TRIM_CRITICAL_CACHED {
            cached.len() * 2 / 3
        } else if stalled || cached.len() <= TRIM_LOW_CACHED {
            cached.len() / 3
        } else {
            0
        };
        for &app in &cached[cached.len() - trimmed..] {
            if self.slots[app].activity {
                if let Some(m) = self.ask(app, app::TRIM, app::TRIM_MEMORY_COMPLETE) {
                    self.slots[app].activity = m.detail == 0;
                }
            }
        }
    }

    /// Ends every app still alive (not counted as kills).
    fn close(&mut self) {
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
fn become_app(
    parent: i32,
    sock: i32,
    profile: &Profile,
    cgroup: Option<PathBuf>,
) -> Result<(), String> {
    if let Some(procs) = cgroup {
        // before the app maps anything, so every page it touches is charged to its own cgroup
        fs::write(&procs, std::process::id().to_string())
            .map_err(|e| format!("{}: {e}", procs.display()))?;
    }
    // SAFETY: plain system calls on this (child) process's own state.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            return Err("the controller ended".into());
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

/// The files apps map, in a directory of their own, removed when the run ends.
struct Files {
    dir: PathBuf,
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

const WORKDIR_PREFIX: &str = "benchlab-app-cycle-";

/// Filesystems whose pages are not a file cache the kernel can evict and read back from a
/// disk: their "file" pages would be anonymous memory or a host's cache.
const NOT_A_DISK: &[(i64, &str)] = &[
    (0x0102_1994, "tmpfs"),
    (0x8584_58f6, "ramfs"),
    (0x0102_1997, "9p"),
    (0x6573_5546, "fuse (virtiofs)"),
];

fn workdir_base(opts: &Options) -> Result<PathBuf, String> {
    let given = opts.text("dir");
    let base = if !given.is_empty() {
        PathBuf::from(given)
    } else if Path::new("/var/benchlab/disk").is_dir() {
        PathBuf::from("/var/benchlab/disk")
    } else {
        PathBuf::from("/var/tmp")
    };
    let c = std::ffi::CString::new(base.as_os_str().as_encoded_bytes())
        .map_err(|_| "option --dir: a path without NUL bytes")?;
    // SAFETY: statfs fills a zeroed struct we own from a NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(format!(
            "option --dir: {}: {}",
            base.display(),
            std::io::Error::last_os_error()
        ));
    }
    if let Some((_, name)) = NOT_A_DISK
        .iter()
        .find(|(magic, _)| st.f_type as i64 == *magic)
    {
        return Err(format!(
            "option --dir: {} is on {name}, whose pages the kernel cannot evict to a disk; give a directory on a disk \
             (in a vm guest: the environment's `disk` field, mounted at /var/benchlab/disk)",
            base.display()
        ));
    }
    Ok(base)
}

/// Writes `pages` pages of seeded bytes, synced and dropped from the page cache, so that every
/// run's first launches read them from the disk.
fn write_file(path: &Path, pages: usize, seed: u64) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut f = File::create(path).map_err(fail)?;
    let mut chunk = vec![0u8; 256 * PAGE];
    let mut written = 0;
    while written < pages {
        let n = (pages - written).min(256);
        for (i, word) in chunk[..n * PAGE].chunks_exact_mut(8).enumerate() {
            word.copy_from_slice(&app::mix(seed ^ ((written * PAGE / 8 + i) as u64)).to_le_bytes());
        }
        f.write_all(&chunk[..n * PAGE]).map_err(fail)?;
        written += n;
    }
    f.sync_all().map_err(fail)?;
    // SAFETY: advice on a file we own.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(())
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// The apps' profiles and files: sizes drawn from the seed, so every variant gets the same apps.
fn make_apps(opts: &Options, base: &Path) -> Result<(Files, Vec<Profile>), String> {
    for stale in fs::read_dir(base).into_iter().flatten().flatten() {
        let name = stale.file_name().to_string_lossy().into_owned();
        if name
            .strip_prefix(WORKDIR_PREFIX)
            .and_then(|p| p.parse().ok())
            .is_some_and(|p| !alive(p))
        {
            let _ = fs::remove_dir_all(stale.path());
        }
    }
    let files = Files {
        dir: base.join(format!("{WORKDIR_PREFIX}{}", std::process::id())),
    };
    fs::create_dir(&files.dir).map_err(|e| format!("{}: {e}", files.dir.display()))?;
    let seed = opts.int("seed")?;
    let pages = |bytes: u64| (bytes as usize).div_ceil(PAGE);
    let framework = files.dir.join("framework");
    let framework_pages = pages(opts.int("framework")?);
    write_file(&framework, framework_pages, seed ^ 0xf)?;
    let mut rng = Pcg64::seed_from_u64(seed);
    let random = 100 - opts.int("compressible")? as usize;
    let random_bytes = ((PAGE * random / 100).next_multiple_of(8)).max(8);
    let activity = opts.int("activity")? as f64 / 100.0;
    let mut profiles = Vec::new();
    for index in 0..opts.int("apps")? as u32 {
        let anon = opts.int("anon")? as f64 * rng.random_range(0.5..1.5);
        let code_pages = pages((opts.int("code")? as f64 * rng.random_range(0.5..1.5)) as u64);
        let code = files.dir.join(format!("app-{index:03}.code"));
        write_file(&code, code_pages, seed ^ mix_index(index))?;
        profiles.push(Profile {
            index,
            seed,
            process_pages: pages((anon * (1.0 - activity)) as u64),
            activity_pages: pages((anon * activity) as u64),
            code,
            code_pages,
            framework: framework.clone(),
            framework_pages,
            random_bytes,
        });
    }
    Ok((files, profiles))
}

fn mix_index(index: u32) -> u64 {
    app::mix(0xc0de ^ index as u64)
}

/// Every iteration launches each app once, in an order drawn from the seed and the iteration
/// alone: identical in every variant, whatever the kills.
fn sequence(seed: u64, apps: usize, iterations: u64) -> Vec<(u64, usize)> {
    (0..iterations)
        .flat_map(|it| {
            let mut order: Vec<usize> = (0..apps).collect();
            order.shuffle(&mut Pcg64::seed_from_u64(app::mix(
                seed ^ it.wrapping_mul(0x51_7cc1_b727_220a),
            )));
            order.into_iter().map(move |a| (it, a))
        })
        .collect()
}

/// The kernel's state at one moment, for deltas over the cycle.
struct Snapshot {
    vm: BTreeMap<String, u64>,
    kswapd_ns: Option<u64>,
    psi: Option<Psi>,
}

impl Snapshot {
    fn take() -> Snapshot {
        Snapshot {
            vm: vmstat(),
            kswapd_ns: kswapd_cpu_ns(),
            psi: psi(),
        }
    }

    /// The change of a vmstat counter; None where the kernel has no such counter.
    fn delta(&self, before: &Snapshot, key: &str) -> Option<f64> {
        Some(self.vm.get(key)?.saturating_sub(*before.vm.get(key)?) as f64)
    }
}

struct Metrics {
    counters: Vec<Counter>,
    said: Vec<(&'static str, String)>,
}

impl Metrics {
    fn add(&mut self, name: &str, value: f64) {
        let spec = METRICS
            .iter()
            .find(|m| m.name == name)
            .expect("a declared metric");
        let direction = match spec.direction {
            "lower" => Direction::Lower,
            "higher" => Direction::Higher,
            _ => Direction::None,
        };
        self.counters
            .push(Counter::new(name, value, spec.unit, direction));
    }

    fn maybe(&mut self, name: &str, value: Option<f64>) {
        if let Some(v) = value {
            self.add(name, v);
        }
    }

    /// `steal / scan` in percent; None where nothing was scanned (no efficiency to speak of).
    fn efficiency(&mut self, name: &str, end: &Snapshot, start: &Snapshot, class: &str) {
        let scanned = end.delta(start, &format!("pgscan_{class}"));
        let stolen = end.delta(start, &format!("pgsteal_{class}"));
        if let (Some(scan), Some(steal)) = (scanned, stolen) {
            if scan > 0.0 {
                self.add(name, 100.0 * steal / scan);
            }
        }
    }
}

const MS: f64 = 1e6;

fn launch_metrics(m: &mut Metrics, launches: &[Launch]) -> f64 {
    let mut counts = BTreeMap::new();
    for (start, name) in STARTS {
        let times: Vec<f64> = launches
            .iter()
            .filter(|l| l.start == start)
            .filter_map(|l| l.latency_ns)
            .map(|t| t as f64)
            .collect();
        counts.insert(name, times.len() as f64);
        m.add(&format!("launches_{name}"), times.len() as f64);
        if !times.is_empty() {
            m.add(
                &format!("launch_{name}"),
                times.iter().sum::<f64>() / times.len() as f64 / MS,
            );
        }
    }
    for (name, (a, b)) in [
        ("hot_cold", ("hot", "cold")),
        ("hot_warm", ("hot", "warm")),
        ("warm_cold", ("warm", "cold")),
    ] {
        if counts[b] > 0.0 {
            m.add(name, counts[a] / counts[b]);
        }
    }
    m.add(
        "launch_failures",
        launches.iter().filter(|l| l.latency_ns.is_none()).count() as f64,
    );
    let ok: Vec<f64> = launches
        .iter()
        .filter_map(|l| l.latency_ns)
        .map(|t| t as f64)
        .collect();
    ok.iter().sum::<f64>() / ok.len().max(1) as f64
}

fn kill_metrics(m: &mut Metrics, kills: &Kills, lmkd_ran: bool, end: &Snapshot, start: &Snapshot) {
    let lmk: u64 = kills.lmk.values().sum();
    m.add("kills", (kills.am + lmk + kills.oom) as f64);
    m.add("kills_am", kills.am as f64);
    m.add("kills_oom", kills.oom as f64);
    m.maybe("oom_kill", end.delta(start, "oom_kill"));
    if lmkd_ran {
        m.add("kills_lmk", lmk as f64);
        for reason in lmkd::REASONS {
            let n = kills.lmk.get(reason).copied().unwrap_or(0) as f64;
            m.counters.push(Counter::new(
                &format!("kills_lmk_{reason}"),
                n,
                "count",
                Direction::None,
            ));
        }
    }
}

fn reclaim_metrics(
    m: &mut Metrics,
    end: &Snapshot,
    start: &Snapshot,
    traced: Option<&reclaim_trace::Recorded>,
) {
    m.maybe("refault_anon", end.delta(start, "workingset_refault_anon"));
    m.maybe("refault_file", end.delta(start, "workingset_refault_file"));
    if let (Some(a), Some(b)) = (end.kswapd_ns, start.kswapd_ns) {
        m.add("kswapd_cpu", a.saturating_sub(b) as f64 / MS);
    }
    for class in ["kswapd", "direct", "anon", "file"] {
        m.efficiency(&format!("efficiency_{class}"), end, start, class);
    }
    if let (Some(d), Some(k)) = (
        end.delta(start, "pgscan_direct"),
        end.delta(start, "pgscan_kswapd"),
    ) {
        if d + k > 0.0 {
            m.add("direct_share", 100.0 * d / (d + k));
        }
    }
    let stalls = allocstall(&end.vm)
        .zip(allocstall(&start.vm))
        .map(|(a, b)| a.saturating_sub(b) as f64);
    m.maybe("allocstall", stalls);
    match traced {
        Some(t) => {
            let ms: Vec<f64> = t
                .stalls
                .iter()
                .map(|s| (s.end - s.begin) as f64 / MS)
                .collect();
            m.add("direct_reclaims", ms.len() as f64);
            m.add("direct_stall", ms.iter().fold(0.0, |a, b| a + b));
            for (name, lo, hi) in [
                ("direct_lt5ms", 0.0, 5.0),
                ("direct_5_50ms", 5.0, 50.0),
                ("direct_50_500ms", 50.0, 500.0),
                ("direct_gt500ms", 500.0, f64::INFINITY),
            ] {
                m.add(
                    name,
                    ms.iter().filter(|&&x| x >= lo && x < hi).count() as f64,
                );
            }
            m.add("trace_lost", t.lost as f64);
            if t.lost > 0 {
                m.said.push(("trace_lost", format!("the kernel overwrote {} direct-reclaim trace events: stall counts and times are too low (raise --trace-buffer)", t.lost)));
            }
        }
        None => m.maybe("direct_reclaims", stalls),
    }
    m.maybe("pswpin", end.delta(start, "pswpin"));
    m.maybe("pswpout", end.delta(start, "pswpout"));
    if let (Some(a), Some(b)) = (end.psi, start.psi) {
        m.add("psi_some", a.some_us.saturating_sub(b.some_us) as f64 / 1e3);
        m.add("psi_full", a.full_us.saturating_sub(b.full_us) as f64 / 1e3);
    }
    for (key, _) in [
        ("workingset_refault_anon", ()),
        ("workingset_refault_file", ()),
        ("pgscan_kswapd", ()),
        ("pswpin", ()),
    ] {
        if !end.vm.contains_key(key) {
            m.said.push(("counter_missing", format!("this kernel has no {key} in /proc/vmstat: what depends on it is missing, not zero")));
        }
    }
}

/// zram's compression at the cycle's end, over the zram swap devices.
fn zram_metrics(m: &mut Metrics) {
    let devices = zram_swaps();
    if devices.is_empty() {
        return;
    }
    let field = |i: usize| {
        devices
            .iter()
            .map(|(_, f)| f.get(i).copied().unwrap_or(0))
            .sum::<u64>() as f64
    };
    if field(1) > 0.0 {
        m.add("zram_ratio", field(0) / field(1));
    }
    m.add("zram_used_max", field(4));
}

/// Time spent in direct reclaim (by any task) inside the window [from, to).
fn stall_within(stalls: &[reclaim_trace::Stall], longest: u64, from: u64, to: u64) -> u64 {
    let end = stalls.partition_point(|s| s.begin < to);
    stalls[..end]
        .iter()
        .rev()
        .take_while(|s| s.begin + longest >= from)
        .map(|s| s.end.min(to).saturating_sub(s.begin.max(from)))
        .sum()
}

/// Every app's own accounting as columns, indexed by app.
fn app_details(read: &[(Option<u64>, [Option<u64>; 3])]) -> serde_json::Value {
    let mut doc =
        serde_json::json!({"peak_bytes": read.iter().map(|(peak, _)| *peak).collect::<Vec<_>>()});
    for (i, (key, _)) in accounting::COUNTED.iter().enumerate() {
        doc[*key] = read
            .iter()
            .map(|(_, counted)| counted[i])
            .collect::<Vec<_>>()
            .into();
    }
    doc
}

/// Every launch as columns (one list per field), for the run's details; `stalls` None: not traced.
fn launch_details(
    launches: &[Launch],
    stalls: Option<&[reclaim_trace::Stall]>,
) -> serde_json::Value {
    let longest = stalls.map_or(0, |s| s.iter().map(|s| s.end - s.begin).max().unwrap_or(0));
    let name = |s: Start| {
        STARTS
            .iter()
            .find(|(k, _)| *k == s)
            .map(|(_, n)| *n)
            .unwrap_or("cold")
    };
    let mut doc = serde_json::json!({
        "iteration": launches.iter().map(|l| l.iteration).collect::<Vec<_>>(),
        "app": launches.iter().map(|l| l.app).collect::<Vec<_>>(),
        "start": launches.iter().map(|l| name(l.start)).collect::<Vec<_>>(),
        "latency_ns": launches.iter().map(|l| l.latency_ns).collect::<Vec<_>>(),
        "majflt": launches.iter().map(|l| l.majflt).collect::<Vec<_>>(),
        "stall_ns": launches.iter().map(|l| {
            let (s, t) = (stalls?, l.latency_ns?);
            Some(stall_within(s, longest, l.requested_ns, l.requested_ns + t))
        }).collect::<Vec<_>>(),
    });
    for (i, key) in PER_LAUNCH.iter().enumerate() {
        doc[*key] = launches
            .iter()
            .map(|l| l.counters[i])
            .collect::<Vec<_>>()
            .into();
    }
    doc
}

impl Workload for AppCycle {
    fn about(&self) -> About {
        About {
            name: "memory.app_cycle",
            description: "an Android-like app cycle under memory pressure: hot, warm and cold launches, an activity manager and an lmkd-like killer, the kernel's reclaim counters",
            version: 1,
            options: OPTIONS,
            metrics: METRICS,
        }
    }

    fn check(&self, opts: &Options) -> Result<(), String> {
        workdir_base(opts).map(drop)
    }

    fn quick_options(&self) -> &'static [(&'static str, &'static str)] {
        &[("iterations", "10")]
    }

    fn run(&self, opts: &Options, said: &mut Said) -> Result<Vec<Entry>, String> {
        let base = workdir_base(opts)?;
        let (_files, profiles) = make_apps(opts, &base)?;
        let apps = profiles.len();
        let seed = opts.int("seed")?;
        let order = sequence(seed, apps, opts.int("iterations")?);
        // as lmkd does: the controller's own pages never wait on reclaim, so under thrashing
        // it still sees the stall events in time and its kills land
        // SAFETY: a flag-only system call on this process (apps forked later do not inherit it).
        if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT) } != 0
        {
            said.note(
                "mlock_failed",
                format!(
                    "mlockall: {}: the controller may stall under thrashing",
                    std::io::Error::last_os_error()
                ),
            );
        }
        let lmkd = if opts.flag("lmkd")? {
            let settings = lmkd::Settings {
                some_ms: opts.int("psi-some")?,
                full_ms: opts.int("psi-full")?,
                window_ms: opts.int("psi-window")?,
                swap_free_low_pct: opts.int("swap-free-low")?,
                thrashing_limit_pct: opts.int("thrashing-limit")?,
                thrashing_decay_pct: opts.int("thrashing-decay")?,
            };
            match lmkd::Lmkd::start(settings) {
                Ok(l) => Some(l),
                Err(e) => {
                    said.note("lmkd_off", format!("{e}: no low-memory killer; kills by the activity manager and the kernel only"));
                    None
                }
            }
        } else {
            None
        };
        if let Some(text) = lmkd.as_ref().and_then(|l| l.scaled.clone()) {
            said.note("psi_scaled", text);
        }
        let lmkd_ran = lmkd.is_some();
        let trace = if opts.flag("trace")? {
            match reclaim_trace::ReclaimTrace::start(opts.int("trace-buffer")? / 1024) {
                Ok(t) => Some(t),
                Err(e) => {
                    said.note(
                        "trace_unavailable",
                        format!(
                            "{e}: direct reclaims counted from allocstall, without their latency"
                        ),
                    );
                    None
                }
            }
        } else {
            None
        };
        let mut controller = Controller {
            slots: (0..apps).map(|_| Slot::default()).collect(),
            profiles,
            lmkd,
            settings: Settings {
                dwell_ms: opts.int("dwell")?,
                cached_limit: opts.int("cached-limit")? as usize,
                timeout_ns: opts.int("launch-timeout")? * 1_000_000_000,
            },
            sent: HashMap::new(),
            kills: Kills::default(),
            corrupt: None,
            adj_note: None,
            cgroups: match accounting::AppCgroups::make(apps) {
                Ok(c) => Some(c),
                Err(e) => {
                    said.note(
                        "per_app_accounting",
                        format!("{e}: no per-app memory accounting"),
                    );
                    None
                }
            },
        };
        said.reclaim = Some(kernel::reclaim_state());
        let watch = Stopwatch::start(false);
        let start = Snapshot::take();
        let mut launches = Vec::with_capacity(order.len());
        let mut digest = Digest::new();
        for (n, &(iteration, app)) in order.iter().enumerate() {
            digest.word(iteration << 32 | app as u64);
            let launch = controller.launch(app, iteration, n as u64 + 1);
            match launch {
                Ok(l) => launches.push(l),
                Err(e) => {
                    controller.close();
                    return Err(e);
                }
            }
            if let Some(e) = controller.corrupt.take() {
                controller.close();
                return Err(e);
            }
        }
        let end = Snapshot::take();
        let mut m = Metrics {
            counters: Vec::new(),
            said: Vec::new(),
        };
        zram_metrics(&mut m);
        controller.close();
        said.apps = controller.cgroups.as_ref().map(|c| app_details(&c.read()));
        let (_, cpu_ns) = watch.elapsed();
        let traced = match trace.map(reclaim_trace::ReclaimTrace::finish).transpose() {
            Ok(t) => t,
            Err(e) => {
                said.note("trace_unavailable", format!("reading the trace: {e}"));
                None
            }
        };
        let mean_ns = launch_metrics(&mut m, &launches);
        kill_metrics(&mut m, &controller.kills, lmkd_ran, &end, &start);
        reclaim_metrics(&mut m, &end, &start, traced.as_ref());
        if controller.kills.timeouts > 0 || controller.kills.crashes > 0 {
            said.note("launch_failures", format!("{} app(s) hung past --launch-timeout and {} crashed: failed launches, not kills", controller.kills.timeouts, controller.kills.crashes));
        }
        if let Some(text) = controller.adj_note.take() {
            said.note("oom_score_adj", text);
        }
        for (topic, text) in m.said.drain(..) {
            said.note(topic, text);
        }
        said.launches = Some(launch_details(
            &launches,
            traced.as_ref().map(|t| t.stalls.as_slice()),
        ));
        if launches.iter().all(|l| l.latency_ns.is_none()) {
            return Err("no launch came up".into());
        }
        Ok(vec![Entry {
            name: "memory.app_cycle".into(),
            iterations: launches.len() as u64,
            threads: 1,
            real_time_ns: mean_ns,
            cpu_time_ns: cpu_ns / launches.len().max(1) as f64,
            items_per_second: None,
            bytes_per_second: None,
            counters: m.counters,
            checksum: digest.hex(),
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_iteration_launches_every_app_once_in_a_seeded_order() {
        let s = sequence(7, 5, 3);
        assert_eq!(s.len(), 15);
        for it in 0..3 {
            let mut apps: Vec<usize> = s
                .iter()
                .filter(|(i, _)| *i == it)
                .map(|(_, a)| *a)
                .collect();
            apps.sort_unstable();
            assert_eq!(apps, vec![0, 1, 2, 3, 4]);
        }
        assert_eq!(s, sequence(7, 5, 3));
        assert_ne!(s, sequence(8, 5, 3));
    }

    #[test]
    fn a_launch_counts_the_reclaim_inside_its_window() {
        use reclaim_trace::Stall;
        let stalls = [
            Stall { begin: 0, end: 50 },
            Stall {
                begin: 90,
                end: 110,
            },
            Stall {
                begin: 120,
                end: 130,
            },
            Stall {
                begin: 300,
                end: 400,
            },
        ];
        assert_eq!(stall_within(&stalls, 100, 100, 200), 10 + 10);
        assert_eq!(stall_within(&stalls, 100, 0, 1000), 50 + 20 + 10 + 100);
        assert_eq!(stall_within(&stalls, 100, 60, 80), 0);
    }

    #[test]
    fn every_metric_it_writes_is_declared() {
        let mut m = Metrics {
            counters: Vec::new(),
            said: Vec::new(),
        };
        let launch = |start, latency_ns| Launch {
            iteration: 0,
            app: 0,
            start,
            requested_ns: 0,
            latency_ns,
            majflt: None,
            counters: [None; 4],
        };
        let launches = [
            launch(Start::Cold, Some(2_000_000)),
            launch(Start::Hot, Some(1_000_000)),
            launch(Start::Hot, None),
        ];
        let mean = launch_metrics(&mut m, &launches);
        assert_eq!(mean, 1_500_000.0);
        let get = |m: &Metrics, k: &str| m.counters.iter().find(|c| c.name == k).map(|c| c.value);
        assert_eq!(get(&m, "launch_cold"), Some(2.0));
        assert_eq!(get(&m, "hot_cold"), Some(1.0));
        assert_eq!(get(&m, "launch_failures"), Some(1.0));
        assert_eq!(
            get(&m, "hot_warm"),
            None,
            "no warm launch: no ratio, rather than infinity"
        );
    }
}
