//! The kernel's own counters, each read from its exact source: `/proc/vmstat`,
//! `/proc/meminfo`, `/proc/zoneinfo` (watermarks), `/proc/<kswapd>/schedstat`,
//! `/proc/pressure/memory` and zram's `mm_stat`. A counter the kernel does not
//! have is absent from the map, never zero: the cycle reports it as missing.

use std::collections::BTreeMap;
use std::fs;

/// `name value` lines (vmstat) or `Name: value kB` lines (meminfo), as numbers.
/// The `name value` lines of a kernel file (vmstat, a cgroup's memory.stat), empty where it is missing.
pub(super) fn numbers(path: impl AsRef<std::path::Path>) -> BTreeMap<String, u64> {
    let text = fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?.trim_end_matches(':');
            let value = words.next()?.parse().ok()?;
            Some((name.to_string(), value))
        })
        .collect()
}

pub fn vmstat() -> BTreeMap<String, u64> {
    numbers("/proc/vmstat")
}

/// `/proc/vmstat` with every CPU's pending changes folded in first. The kernel keeps each node
/// counter's recent changes per CPU, up to a threshold, and folds them into the total it shows
/// about once a second: a swapoff just before a run (a variant without swap) counted anonymous
/// refaults that then surfaced inside the run. Writing `vm.stat_refresh` (root) folds them now.
/// Without root the plain read stands: the totals are then late by at most the thresholds. For
/// the deltas of a cycle and of a launch, never for the killer's polling (a fold runs on every
/// CPU).
pub fn vmstat_exact() -> BTreeMap<String, u64> {
    let _ = fs::write("/proc/sys/vm/stat_refresh", "1"); // refused without root: the read below stands
    vmstat()
}

/// Values in KiB, as meminfo writes them.
pub fn meminfo() -> BTreeMap<String, u64> {
    numbers("/proc/meminfo")
}

/// The sum of every `allocstall_*` zone counter: one per entry into direct reclaim.
pub fn allocstall(vm: &BTreeMap<String, u64>) -> Option<u64> {
    let stalls: Vec<u64> = vm
        .iter()
        .filter(|(k, _)| k.starts_with("allocstall"))
        .map(|(_, v)| *v)
        .collect();
    (!stalls.is_empty()).then(|| stalls.iter().sum())
}

/// The CPU time of every kswapd thread (the first field of its schedstat, in ns), summed;
/// None where the kernel keeps no schedstat.
pub fn kswapd_cpu_ns() -> Option<u64> {
    let mut total = None;
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if !comm.starts_with("kswapd") {
            continue;
        }
        let stat = fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
        let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
        total = Some(total.unwrap_or(0) + ns);
    }
    total
}

/// Memory pressure stall information: totals in µs and the 10 s averages in percent.
#[derive(Clone, Copy, Default)]
pub struct Psi {
    pub some_us: u64,
    pub full_us: u64,
    pub some_avg10: f64,
    pub full_avg10: f64,
}

pub fn psi() -> Option<Psi> {
    let text = fs::read_to_string("/proc/pressure/memory").ok()?;
    let mut psi = Psi::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let kind = words.next()?;
        let fields: BTreeMap<&str, &str> = words.filter_map(|w| w.split_once('=')).collect();
        let total = fields.get("total")?.parse().ok()?;
        let avg10 = fields.get("avg10")?.parse().ok()?;
        match kind {
            "some" => (psi.some_us, psi.some_avg10) = (total, avg10),
            "full" => (psi.full_us, psi.full_avg10) = (total, avg10),
            _ => {}
        }
    }
    Some(psi)
}

/// The zones' min, low and high watermarks summed, in pages (lmkd compares free memory with them).
pub fn watermarks() -> [u64; 3] {
    let text = fs::read_to_string("/proc/zoneinfo").unwrap_or_default();
    let mut marks = [0u64; 3];
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let slot = match words.next() {
            Some("min") => 0,
            Some("low") => 1,
            Some("high") => 2,
            _ => continue,
        };
        if let Some(v) = words.next().and_then(|w| w.parse::<u64>().ok()) {
            marks[slot] += v;
        }
    }
    marks
}

/// zram devices that are swap now, with their `mm_stat` (orig_data_size, compr_data_size,
/// mem_used_total, mem_limit, mem_used_max, same_pages, pages_compacted, huge_pages).
pub fn zram_swaps() -> Vec<(String, Vec<u64>)> {
    let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
    swaps
        .lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().next())
        .filter_map(|dev| dev.strip_prefix("/dev/"))
        .filter(|dev| dev.starts_with("zram"))
        .filter_map(|dev| {
            let stat = fs::read_to_string(format!("/sys/block/{dev}/mm_stat")).ok()?;
            let fields = stat
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            Some((dev.to_string(), fields))
        })
        .collect()
}

/// What reclaim ran under, read where the cycle runs (inside a guest too): MGLRU's switch,
/// swappiness, and each zram swap device's size and algorithm. None: the kernel has no such file.
pub fn reclaim_state() -> serde_json::Value {
    let read = |p: &str| fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    let selected = |text: String| match (text.find('['), text.find(']')) {
        (Some(a), Some(b)) if a < b => text[a + 1..b].to_string(),
        _ => text,
    };
    let zram: Vec<serde_json::Value> = zram_swaps()
        .iter()
        .map(|(dev, _)| {
            serde_json::json!({
                "device": dev,
                "disksize": read(&format!("/sys/block/{dev}/disksize")).and_then(|s| s.parse::<u64>().ok()),
                "algorithm": read(&format!("/sys/block/{dev}/comp_algorithm")).map(selected),
            })
        })
        .collect();
    serde_json::json!({
        "lru_gen": read("/sys/kernel/mm/lru_gen/enabled"),
        "swappiness": read("/proc/sys/vm/swappiness").and_then(|s| s.parse::<u64>().ok()),
        "swap_kib": meminfo().get("SwapTotal").copied(),
        "zram": zram,
    })
}

/// The clock trace timestamps and launch requests share.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_kernel_counts_what_the_cycle_reads() {
        let vm = vmstat();
        assert!(vm.contains_key("pgfault"), "vmstat has page faults");
        assert!(allocstall(&vm).is_some());
        assert!(meminfo()["MemTotal"] > 0);
        assert!(watermarks()[2] >= watermarks()[0]);
        assert!(monotonic_ns() > 0);
    }
}
