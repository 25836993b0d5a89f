//! A low-memory killer modelled on Android's lmkd (its PSI mode): PSI
//! triggers on `/proc/pressure/memory` with lmkd's defaults (partial stall
//! 70 ms, complete stall 700 ms per 1 s window), and on each event (and every
//! 100 ms for a window after it, as lmkd polls while pressure lasts) lmkd's
//! decision: the zone watermarks, swap left, file-cache thrashing (file
//! refaults since the window's start relative to the file LRU, with a limit
//! that decays 10% per kill) and whether direct reclaim ran, giving a kill
//! reason and the lowest oom_score_adj a victim may have (perceptible apps,
//! adj <= 200, are spared unless thrashing is critical). Choosing the victim
//! is the controller's: it knows the apps.
//!
//! Two of lmkd's reasons are off by lmkd's own defaults and stay off here:
//! LOW_MEM_AND_SWAP_UTIL (swap_util_max 100) and LOW_FILECACHE_AFTER_THRASHING
//! (filecache_min_kb 0).

use super::kernel::{meminfo, vmstat, watermarks};
use crate::workload::WorkloadError;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

pub const REASONS: [&str; 8] = [
    "pressure_after_kill",
    "not_responding",
    "low_swap_and_thrashing",
    "low_mem_and_swap",
    "low_mem_and_swap_util",
    "low_mem_and_thrashing",
    "direct_recl_and_thrashing",
    "low_filecache_after_thrashing",
];

/// Android's PERCEPTIBLE_APP_ADJ: apps at or below it are spared unless thrashing is critical.
const PERCEPTIBLE_APP_ADJ: i32 = 200;
/// lmkd's THRASHING_RESET_INTERVAL_MS: thrashing is measured over windows of this length.
const THRASHING_WINDOW_NS: u64 = 1_000_000_000;

pub struct Settings {
    pub some_ms: u64,
    pub full_ms: u64,
    pub window_ms: u64,
    pub swap_free_low_pct: u64,
    pub thrashing_limit_pct: u64,
    pub thrashing_decay_pct: u64,
}

#[derive(Clone, Copy, PartialEq)]
pub enum Event {
    Partial,
    Full,
    /// no new event: lmkd looking again while the last one's window lasts
    Poll,
}

/// How often lmkd looks again after an event (its PSI_POLL_PERIOD_LONG_MS).
const POLL_NS: u64 = 100_000_000;

pub struct Decision {
    pub reason: &'static str,
    pub min_adj: i32,
}

pub struct Lmkd {
    some: File,
    full: File,
    settings: Settings,
    /// Some(note) when the kernel took only a longer window and the thresholds were scaled
    pub scaled: Option<String>,
    window_start_ns: u64,
    window_refaults: u64,
    window_file_lru: u64,
    limit_pct: u64,
    last_kill_ns: u64,
    pgscan_direct: u64,
    pgscan_kswapd: u64,
    /// when the last complete-stall event came (0: never)
    pub last_full_ns: u64,
    last_event_ns: u64,
    last_look_ns: u64,
    /// the PSI window the kernel took
    window_ns: u64,
}

fn trigger(kind: &str, stall_ms: u64, window_ms: u64) -> std::io::Result<File> {
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/proc/pressure/memory")?;
    // the kernel takes the trigger only when the write ends in NUL or newline
    f.write_all(format!("{kind} {} {}\0", stall_ms * 1000, window_ms * 1000).as_bytes())?;
    Ok(f)
}

impl Lmkd {
    /// Registers both triggers. A kernel that refuses the window (one without CAP_SYS_RESOURCE
    /// takes only multiples of 2 s) gets the smallest window it takes, with the stall thresholds
    /// scaled by the same factor, and `scaled` says so. Err: no PSI here.
    pub fn start(settings: Settings) -> Result<Lmkd, WorkloadError> {
        let mut factor = 1;
        let (some, full) = loop {
            let window = settings.window_ms * factor;
            match (
                trigger("some", settings.some_ms * factor, window),
                trigger("full", settings.full_ms * factor, window),
            ) {
                (Ok(s), Ok(f)) => break (s, f),
                (Err(e), _) | (_, Err(e))
                    if e.raw_os_error() == Some(libc::EINVAL) && window < 10_000 =>
                {
                    factor += 1
                }
                (Err(e), _) | (_, Err(e)) => {
                    return Err(WorkloadError::io(
                        "PSI triggers on /proc/pressure/memory",
                        e,
                    ))
                }
            }
        };
        let scaled = (factor > 1).then(|| {
            format!(
                "this kernel takes PSI windows of {} ms at the least here (no CAP_SYS_RESOURCE): lmkd's thresholds scaled to \
                 {} ms partial and {} ms complete stall per {} ms",
                settings.window_ms * factor, settings.some_ms * factor, settings.full_ms * factor, settings.window_ms * factor
            )
        });
        let vm = vmstat();
        let window_ns = settings.window_ms * factor * 1_000_000;
        Ok(Lmkd {
            some,
            full,
            scaled,
            limit_pct: settings.thrashing_limit_pct,
            settings,
            window_start_ns: 0,
            window_refaults: 0,
            window_file_lru: 0,
            last_kill_ns: 0,
            pgscan_direct: vm.get("pgscan_direct").copied().unwrap_or(0),
            pgscan_kswapd: vm.get("pgscan_kswapd").copied().unwrap_or(0),
            last_full_ns: 0,
            last_event_ns: 0,
            last_look_ns: 0,
            window_ns,
        })
    }

    /// The partial and the complete stall trigger, to poll for POLLPRI.
    pub fn fds(&self) -> [RawFd; 2] {
        [self.some.as_raw_fd(), self.full.as_raw_fd()]
    }

    pub fn killed(&mut self, now_ns: u64) {
        self.last_kill_ns = now_ns;
        self.limit_pct = self.limit_pct * (100 - self.settings.thrashing_decay_pct) / 100;
    }

    /// Whether lmkd looks again without an event: for a window after each event, every
    /// POLL_NS, as lmkd polls while pressure lasts (an event comes at most once per window).
    pub fn polling(&self, now_ns: u64) -> bool {
        self.last_event_ns != 0
            && now_ns - self.last_event_ns < self.window_ns
            && now_ns - self.last_look_ns >= POLL_NS
    }

    /// lmkd's decision on a stall event (`full`: the complete-stall trigger fired; neither: a
    /// poll after an event): a kill reason and the lowest adj a victim may have, or None.
    pub fn decide(&mut self, event: Event, now_ns: u64) -> Option<Decision> {
        self.last_look_ns = now_ns;
        if event != Event::Poll {
            self.last_event_ns = now_ns;
        }
        let full = event == Event::Full;
        if full {
            self.last_full_ns = now_ns;
        }
        let vm = vmstat();
        let mem = meminfo();
        let kib = |k: &str| mem.get(k).copied().unwrap_or(0);
        let refaults = vm
            .get("workingset_refault_file")
            .or_else(|| vm.get("workingset_refault"))
            .copied()
            .unwrap_or(0);
        let file_lru = (kib("Active(file)") + kib("Inactive(file)")) / 4;
        // file refaults since the window began, against the file LRU as it was then; a window
        // older than lmkd's interval is measured once more, then starts again from now
        let thrashing = if self.window_start_ns == 0 {
            0
        } else {
            refaults.saturating_sub(self.window_refaults) * 100 / (self.window_file_lru + 1)
        };
        if self.window_start_ns == 0 || now_ns - self.window_start_ns > THRASHING_WINDOW_NS {
            self.window_start_ns = now_ns;
            self.window_refaults = refaults;
            self.window_file_lru = file_lru;
            self.limit_pct = self.settings.thrashing_limit_pct;
        }
        let scanned = |key: &str, last: &mut u64| {
            let now = vm.get(key).copied().unwrap_or(0);
            let moved = now > *last;
            *last = now;
            moved
        };
        let direct = scanned("pgscan_direct", &mut self.pgscan_direct);
        scanned("pgscan_kswapd", &mut self.pgscan_kswapd);
        let free_pages = kib("MemFree") / 4;
        let [_, low, high] = watermarks();
        let (swap_total, swap_free) = (kib("SwapTotal"), kib("SwapFree"));
        let swap_low =
            swap_total > 0 && swap_free * 100 < swap_total * self.settings.swap_free_low_pct;
        let after_kill = self.last_kill_ns != 0 && now_ns - self.last_kill_ns < THRASHING_WINDOW_NS;
        let over = thrashing > self.limit_pct;
        let critical = thrashing > self.settings.thrashing_limit_pct * 2;
        let spare = if critical { 0 } else { PERCEPTIBLE_APP_ADJ + 1 };
        let (reason, min_adj) = if after_kill && free_pages < low {
            ("pressure_after_kill", 0)
        } else if full {
            ("not_responding", 0)
        } else if swap_low && over {
            ("low_swap_and_thrashing", spare)
        } else if swap_low && free_pages < high {
            ("low_mem_and_swap", spare)
        } else if free_pages < high && over {
            ("low_mem_and_thrashing", spare)
        } else if direct && over {
            ("direct_recl_and_thrashing", spare)
        } else {
            return None;
        };
        Some(Decision { reason, min_adj })
    }
}
