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
mod controller;
mod kernel;
mod killers;
mod lmkd;
mod metrics;
mod reclaim_trace;

use crate::protocol::Said;
use crate::report::{Counter, Direction, Entry};
use crate::timing::Stopwatch;
use crate::workload::{
    failed, refused, About, Digest, Kind, MetricSpec, OptionSpec, Options, Workload, WorkloadError,
    SEED,
};
use app::{Message, Profile, PAGE};
use controller::{Controller, Launch, Settings, Slot, Start, PER_LAUNCH, STARTS};
use kernel::{allocstall, kswapd_cpu_ns, monotonic_ns, psi, vmstat_exact, zram_swaps, Psi};
use killers::{Killer, Kills};
use metrics::{
    app_details, kill_metrics, launch_details, launch_metrics, reclaim_metrics, zram_metrics,
    Metrics, Snapshot, METRICS,
};
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

fn workdir_base(opts: &Options) -> Result<PathBuf, WorkloadError> {
    let given = opts.text("dir");
    let base = if !given.is_empty() {
        PathBuf::from(given)
    } else if Path::new("/var/benchlab/disk").is_dir() {
        PathBuf::from("/var/benchlab/disk")
    } else {
        PathBuf::from("/var/tmp")
    };
    let c = std::ffi::CString::new(base.as_os_str().as_encoded_bytes())
        .map_err(|_| refused!("option --dir: a path without NUL bytes"))?;
    // SAFETY: statfs fills a zeroed struct we own from a NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(WorkloadError::last_os(format!(
            "option --dir: {}",
            base.display()
        )));
    }
    if let Some((_, name)) = NOT_A_DISK
        .iter()
        .find(|(magic, _)| st.f_type as i64 == *magic)
    {
        return Err(refused!(
            "option --dir: {} is on {name}, whose pages the kernel cannot evict to a disk; give a directory on a disk \
             (in a vm guest: the environment's `disk` field, mounted at /var/benchlab/disk)",
            base.display()
        ));
    }
    Ok(base)
}

/// Writes `pages` pages of seeded bytes, synced and dropped from the page cache, so that every
/// run's first launches read them from the disk.
fn write_file(path: &Path, pages: usize, seed: u64) -> Result<(), WorkloadError> {
    let fail = |e| WorkloadError::io(path.display().to_string(), e);
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
fn make_apps(opts: &Options, base: &Path) -> Result<(Files, Vec<Profile>), WorkloadError> {
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
    fs::create_dir(&files.dir)
        .map_err(|e| WorkloadError::io(files.dir.display().to_string(), e))?;
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

    fn check(&self, opts: &Options) -> Result<(), WorkloadError> {
        workdir_base(opts).map(drop)
    }

    fn quick_options(&self) -> &'static [(&'static str, &'static str)] {
        &[("iterations", "10")]
    }

    fn run(&self, opts: &Options, said: &mut Said) -> Result<Vec<Entry>, WorkloadError> {
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
            return Err(failed!("no launch came up"));
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
    use super::metrics::stall_within;
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
