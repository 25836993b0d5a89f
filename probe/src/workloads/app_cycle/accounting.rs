//! A memory cgroup per app, without limits, for accounting only: each app's peak memory, its
//! own working-set refaults, major faults and swap, summed over every life it had in the
//! cycle (a cold start joins the same cgroup again). They are made inside the run's own
//! memory cgroup (so the run's peak still covers every app) and removed when the cycle ends;
//! a cgroup is a kernel counter, so no reclaim behaviour changes by it.

use crate::workload::{refused, WorkloadError};
use std::fs;
use std::path::PathBuf;

/// What each app's cgroup counted: the name the run's details give it, and memory.stat's (cgroup
/// v1 and v2 alike).
pub const COUNTED: [(&str, &str); 3] = [
    ("refault_anon", "workingset_refault_anon"),
    ("refault_file", "workingset_refault_file"),
    ("majflt", "pgmajfault"),
];

pub struct AppCgroups {
    dirs: Vec<PathBuf>,
}

/// This process's memory cgroup folder: cgroup v1's memory hierarchy, else v2's unified one.
fn own_memory_cgroup() -> Option<PathBuf> {
    let table = fs::read_to_string("/proc/self/cgroup").ok()?;
    let line = |wanted: &dyn Fn(&str) -> bool| {
        table.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            wanted(controllers).then(|| path.to_string())
        })
    };
    if let Some(path) = line(&|c| c.split(',').any(|x| x == "memory")) {
        return Some(PathBuf::from(format!("/sys/fs/cgroup/memory{path}")));
    }
    let unified = PathBuf::from(format!("/sys/fs/cgroup{}", line(&|c| c.is_empty())?));
    let controllers = fs::read_to_string(unified.join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "memory")
        .then_some(unified)
}

impl AppCgroups {
    /// One cgroup per app inside this process's own; Err says why there are none (no memory
    /// controller, or not ours to write).
    pub fn make(apps: usize) -> Result<AppCgroups, WorkloadError> {
        let own = own_memory_cgroup()
            .ok_or_else(|| refused!("no memory cgroup controller holds this process"))?;
        if own.join("cgroup.controllers").exists() {
            // v2: a child gets the memory controller only where its parent hands it down; a
            // parent with processes of its own cannot, so stay without per-app accounting there
            fs::write(own.join("cgroup.subtree_control"), "+memory").map_err(|e| {
                WorkloadError::io(own.join("cgroup.subtree_control").display().to_string(), e)
            })?;
        }
        let mut made = AppCgroups { dirs: Vec::new() };
        for app in 0..apps {
            let dir = own.join(format!("app-{app:03}"));
            fs::create_dir(&dir).map_err(|e| WorkloadError::io(dir.display().to_string(), e))?;
            made.dirs.push(dir);
        }
        Ok(made)
    }

    /// The `cgroup.procs` an app writes its pid to, right after its fork.
    pub fn procs(&self, app: usize) -> PathBuf {
        self.dirs[app].join("cgroup.procs")
    }

    /// Per app: peak bytes, then the COUNTED figures; None where the kernel has no such file.
    pub fn read(&self) -> Vec<(Option<u64>, [Option<u64>; 3])> {
        self.dirs
            .iter()
            .map(|dir| {
                let peak = ["memory.max_usage_in_bytes", "memory.peak"]
                    .iter()
                    .find_map(|f| fs::read_to_string(dir.join(f)).ok())
                    .and_then(|t| t.trim().parse().ok());
                let stat = super::kernel::numbers(dir.join("memory.stat"));
                (peak, COUNTED.map(|(_, key)| stat.get(key).copied()))
            })
            .collect()
    }
}

impl Drop for AppCgroups {
    /// Removed once their apps are gone: a killed app leaves its cgroup within milliseconds.
    fn drop(&mut self) {
        for dir in &self.dirs {
            for _ in 0..500 {
                if fs::remove_dir(dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }
}
