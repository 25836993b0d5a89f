//! Memory of the whole process tree, beyond what wait4 says (the largest single
//! process, not the tree at its fullest):
//!
//! - `RunCgroup`: a fresh memory cgroup per run, joined by the child before its
//!   exec, so every descendant is charged there; its high-water mark is the peak
//!   of the tree together (anonymous memory and the page cache the run itself
//!   brought in). cgroup v1 (`memory.max_usage_in_bytes`) and v2 (`memory.peak`).
//!   A container's memory and CPU limits are written there too.
//! - `Sampler`: RSS and PSS of every process of the tree from `smaps_rollup`,
//!   summed, at a fixed interval on a thread of the launcher, so that settings
//!   that trade memory for time (an allocator's decay) show their footprint over
//!   the run rather than at its peak. Reading smaps_rollup takes the process's
//!   memory-map lock briefly, so sampling is asked for per workload, not always.

use serde_json::{json, Map, Value};
use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// One cgroup made for one run, joined by the child before its exec, removed after.
pub struct RunCgroup {
    dir: Option<PathBuf>,
    pub note: Option<String>,
}

impl RunCgroup {
    /// A new cgroup under `parent` holding `pid` (stopped before its exec), with `settings`
    /// (file, value) written first (limits); named after the launcher, so that benchlab can
    /// remove it should the launcher itself be killed.
    pub fn join(parent: Option<&str>, settings: &[(&str, String)], pid: libc::pid_t) -> RunCgroup {
        let mut cgroup = RunCgroup::make(parent, settings);
        cgroup.add(pid);
        cgroup
    }

    /// A new, empty cgroup under `parent` with `settings` written: made ahead of its run by a
    /// launcher that serves many, so that the run waits only for `add`.
    pub fn make(parent: Option<&str>, settings: &[(&str, String)]) -> RunCgroup {
        let Some(parent) = parent else {
            return RunCgroup {
                dir: None,
                note: None,
            };
        };
        let dir = PathBuf::from(parent).join(format!("run-{}", std::process::id()));
        let made = fs::create_dir(&dir).and_then(|_| {
            settings
                .iter()
                .try_for_each(|(file, value)| fs::write(dir.join(file), value))
        });
        match made {
            Ok(()) => RunCgroup {
                dir: Some(dir),
                note: None,
            },
            Err(e) => RunCgroup::failed(dir, e),
        }
    }

    /// Moves `pid` (stopped before its exec) into the cgroup; its descendants are charged there too.
    pub fn add(&mut self, pid: libc::pid_t) {
        let Some(dir) = self.dir.take() else { return };
        match fs::write(dir.join("cgroup.procs"), pid.to_string()) {
            Ok(()) => self.dir = Some(dir),
            Err(e) => *self = RunCgroup::failed(dir, e),
        }
    }

    fn failed(dir: PathBuf, e: std::io::Error) -> RunCgroup {
        let _ = fs::remove_dir(&dir);
        RunCgroup {
            dir: None,
            note: Some(format!("cannot use cgroup {} ({e})", dir.display())),
        }
    }

    pub fn joined(&self) -> bool {
        self.dir.is_some()
    }

    /// The memory high-water mark of everything the cgroup held, in KiB.
    pub fn peak_kib(&self) -> Option<u64> {
        let dir = self.dir.as_ref()?;
        ["memory.max_usage_in_bytes", "memory.peak"]
            .iter()
            .find_map(|f| fs::read_to_string(dir.join(f)).ok())
            .and_then(|text| text.trim().parse::<u64>().ok())
            .map(|bytes| bytes / 1024)
    }

    /// Kills the processes the workload left behind in the cgroup (they leave it once they have exited).
    pub fn kill_left(&self) {
        let Some(dir) = self.dir.as_ref() else { return };
        kill_procs(dir);
    }

    /// Removes the cgroup; processes the workload left behind are killed first, as benchlab
    /// kills them after every run.
    pub fn remove(&mut self) {
        for _ in 0..100 {
            let Some(dir) = self.dir.as_ref() else { return };
            remove_nested(dir);
            if fs::remove_dir(dir).is_ok() {
                self.dir = None;
                return;
            }
            self.kill_left();
            std::thread::sleep(Duration::from_millis(2));
        }
        if let Some(dir) = self.dir.take() {
            self.note = Some(format!("could not remove {}", dir.display()));
        }
    }
}

/// The cgroups a workload made inside its run's (the app cycle's, one per app), deepest first,
/// their processes killed: the run's cgroup cannot go while they exist.
fn remove_nested(dir: &std::path::Path) {
    for child in fs::read_dir(dir).into_iter().flatten().flatten() {
        // the kind getdents reported: a stat of each of a cgroup's 30-odd files made the
        // kernel build an inode for each, a fifth of the serving launcher's time per run
        if !child.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        let path = child.path();
        remove_nested(&path);
        kill_procs(&path);
        let _ = fs::remove_dir(&path);
    }
}

/// SIGKILL to every process in a cgroup (the run's, or one nested in it).
fn kill_procs(dir: &std::path::Path) {
    let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    for pid in procs
        .split_whitespace()
        .filter_map(|p| p.parse::<libc::pid_t>().ok())
    {
        // SAFETY: signalling a process id read from our own run's cgroup or one inside it.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

#[derive(Default)]
struct Totals {
    samples: u64,
    rss_sum: u64,
    pss_sum: u64,
    rss_peak: u64,
    pss_peak: u64,
}

pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Totals>>,
}

/// `pid` and all its descendants, through each thread's `children` list.
fn tree(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let mut all = vec![pid];
    let mut i = 0;
    while i < all.len() {
        if let Ok(tasks) = fs::read_dir(format!("/proc/{}/task", all[i])) {
            for task in tasks.flatten() {
                let children = fs::read_to_string(task.path().join("children")).unwrap_or_default();
                all.extend(
                    children
                        .split_whitespace()
                        .filter_map(|c| c.parse::<libc::pid_t>().ok()),
                );
            }
        }
        i += 1;
    }
    all
}

/// (Rss, Pss) in KiB of one process, or None once it is gone.
fn rollup(pid: libc::pid_t) -> Option<(u64, u64)> {
    let text = fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((field("Rss:")?, field("Pss:")?))
}

impl Sampler {
    pub fn start(pid: libc::pid_t, interval_ms: u64) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        if interval_ms == 0 {
            return Sampler { stop, thread: None };
        }
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut totals = Totals::default();
            loop {
                std::thread::park_timeout(Duration::from_millis(interval_ms)); // `finish` unparks
                if flag.load(Ordering::Relaxed) {
                    return totals;
                }
                let (rss, pss) = tree(pid)
                    .into_iter()
                    .filter_map(rollup)
                    .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
                if rss == 0 {
                    continue; // between exit and reaping: nothing left to read
                }
                totals.samples += 1;
                totals.rss_sum += rss;
                totals.pss_sum += pss;
                totals.rss_peak = totals.rss_peak.max(rss);
                totals.pss_peak = totals.pss_peak.max(pss);
            }
        });
        Sampler {
            stop,
            thread: Some(thread),
        }
    }

    /// Means and peaks over the samples taken; empty when the run ended before the first.
    pub fn finish(self) -> Map<String, Value> {
        self.stop.store(true, Ordering::Relaxed);
        let Some(thread) = self.thread else {
            return Map::new();
        };
        thread.thread().unpark();
        let t = thread.join().unwrap_or_default();
        if t.samples == 0 {
            return Map::new();
        }
        let out = json!({
            "samples": t.samples,
            "rss_mean_kib": t.rss_sum / t.samples,
            "pss_mean_kib": t.pss_sum / t.samples,
            "rss_peak_kib": t.rss_peak,
            "pss_peak_kib": t.pss_peak,
        });
        out.as_object().cloned().unwrap_or_default()
    }
}
