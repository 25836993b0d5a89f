//! Direct-reclaim latency from the `vmscan:mm_vmscan_direct_reclaim_begin/end`
//! tracepoints, recorded in a private tracefs instance (so the user's own
//! tracing is neither read nor disturbed) on the monotonic clock the launches
//! use. The buffer is read once at the end of the cycle; whatever the kernel
//! overwrote meanwhile is counted from the per-CPU `overrun` statistics and
//! reported, never silently lost. No in-kernel histogram is needed, so any
//! kernel with tracefs and these events will do.
//!
//! The `trace` file is the kernel's own text format; the lines are parsed by
//! hand because no crate reads a tracefs instance, and only two fields of a
//! line matter (the thread and the timestamp).

use crate::workload::{refused, WorkloadError};
use std::fs;
use std::path::{Path, PathBuf};

const ROOTS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
const PREFIX: &str = "benchlab-reclaim-";
const EVENTS: [&str; 2] = [
    "mm_vmscan_direct_reclaim_begin",
    "mm_vmscan_direct_reclaim_end",
];

/// One stay in direct reclaim: [begin, end) in CLOCK_MONOTONIC ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stall {
    pub begin: u64,
    pub end: u64,
}

pub struct Recorded {
    pub stalls: Vec<Stall>,
    /// events the kernel overwrote or dropped before they were read
    pub lost: u64,
}

pub struct ReclaimTrace {
    dir: PathBuf,
}

fn write(path: &Path, value: &str) -> Result<(), WorkloadError> {
    fs::write(path, value).map_err(|e| WorkloadError::io(path.display().to_string(), e))
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || *libc::__errno_location() == libc::EPERM }
}

impl ReclaimTrace {
    /// A new instance tracing the two events, with `buffer_kib` per CPU; instances left by a
    /// probe that was killed are removed first. Err says why there is no trace.
    pub fn start(buffer_kib: u64) -> Result<ReclaimTrace, WorkloadError> {
        let root = ROOTS
            .iter()
            .map(Path::new)
            .find(|r| r.join("instances").is_dir())
            .ok_or_else(|| {
                refused!(
                    "tracefs is not mounted (as root: mount -t tracefs nodev /sys/kernel/tracing)"
                )
            })?;
        let events = root.join("events/vmscan");
        if !EVENTS.iter().all(|e| events.join(e).is_dir()) {
            return Err(refused!(
                "this kernel has no vmscan:mm_vmscan_direct_reclaim_begin/end tracepoints"
            ));
        }
        let instances = root.join("instances");
        for stale in fs::read_dir(&instances).into_iter().flatten().flatten() {
            let name = stale.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix(PREFIX)
                .and_then(|p| p.parse::<i32>().ok());
            if pid.is_some_and(|p| !alive(p)) {
                let _ = fs::remove_dir(stale.path());
            }
        }
        let dir = instances.join(format!("{PREFIX}{}", std::process::id()));
        fs::create_dir(&dir).map_err(|e| WorkloadError::io(dir.display().to_string(), e))?;
        let trace = ReclaimTrace { dir };
        write(&trace.dir.join("buffer_size_kb"), &buffer_kib.to_string())?;
        write(&trace.dir.join("trace_clock"), "mono")?;
        for event in EVENTS {
            write(
                &trace.dir.join(format!("events/vmscan/{event}/enable")),
                "1",
            )?;
        }
        write(&trace.dir.join("tracing_on"), "1")?;
        Ok(trace)
    }

    /// Stops tracing and reads every stall the buffer kept.
    pub fn finish(self) -> Result<Recorded, WorkloadError> {
        write(&self.dir.join("tracing_on"), "0")?;
        let text = fs::read_to_string(self.dir.join("trace"))
            .map_err(|e| WorkloadError::io(format!("{}/trace", self.dir.display()), e))?;
        let lost = fs::read_dir(self.dir.join("per_cpu"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|cpu| {
                lost_events(&fs::read_to_string(cpu.path().join("stats")).unwrap_or_default())
            })
            .sum();
        Ok(Recorded {
            stalls: stalls(&text),
            lost,
        })
    }
}

impl Drop for ReclaimTrace {
    fn drop(&mut self) {
        for event in EVENTS {
            let _ = fs::write(self.dir.join(format!("events/vmscan/{event}/enable")), "0");
        }
        let _ = fs::remove_dir(&self.dir);
    }
}

/// `overrun` and `dropped events` of one CPU's `stats` file.
fn lost_events(stats: &str) -> u64 {
    stats
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| matches!(k.trim(), "overrun" | "dropped events"))
        .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
        .sum()
}

/// (thread id, timestamp ns, is begin) of a line of the two events, None for any other line.
fn event(line: &str) -> Option<(u32, u64, bool)> {
    let (head, rest) = line.split_once(": mm_vmscan_direct_reclaim_")?;
    let begin = rest.starts_with("begin");
    if !begin && !rest.starts_with("end") {
        return None;
    }
    let stamp = head.split_whitespace().last()?;
    let (secs, frac) = stamp.split_once('.')?;
    let scale = 10u64.checked_pow(9u32.checked_sub(frac.len() as u32)?)?;
    let ns = secs.parse::<u64>().ok()? * 1_000_000_000 + frac.parse::<u64>().ok()? * scale;
    // `comm-tid [cpu]`: the comm may hold spaces and dashes, the cpu field never does
    let task = &head[..head.rfind(" [")?];
    let tid = task.trim_end().rsplit_once('-')?.1.parse().ok()?;
    Some((tid, ns, begin))
}

/// Begin/end pairs per thread; a begin without its end (still reclaiming when the trace
/// stopped) or an end whose begin was overwritten is left out.
fn stalls(text: &str) -> Vec<Stall> {
    let mut open: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    let mut found = Vec::new();
    for (tid, ns, begin) in text.lines().filter_map(event) {
        if begin {
            open.insert(tid, ns);
        } else if let Some(start) = open.remove(&tid) {
            found.push(Stall {
                begin: start,
                end: ns.max(start),
            });
        }
    }
    found.sort_by_key(|s| s.begin);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_begin_and_end_per_thread() {
        let text = "# tracer: nop\n\
            \x20  my app-x-41   [001] ..... 100.000100: mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_KERNEL\n\
            \x20  other-7       [000] ..... 100.000200: mm_vmscan_direct_reclaim_end: nr_reclaimed=3\n\
            \x20  other-7       [000] ..... 100.000300: mm_vmscan_direct_reclaim_begin: order=0\n\
            \x20  my app-x-41   [001] ..... 100.004100: mm_vmscan_direct_reclaim_end: nr_reclaimed=32\n\
            \x20  other-7       [000] ..... 100.600300: mm_vmscan_direct_reclaim_end: nr_reclaimed=1\n\
            \x20  other-7       [000] ..... 101.000000: mm_vmscan_direct_reclaim_begin: order=0\n";
        let found = stalls(text);
        assert_eq!(
            found,
            vec![
                Stall {
                    begin: 100_000_100_000,
                    end: 100_004_100_000
                },
                Stall {
                    begin: 100_000_300_000,
                    end: 100_600_300_000
                },
            ]
        );
    }

    #[test]
    fn counts_overruns_and_drops() {
        let stats = "entries: 10\noverrun: 3\ncommit overrun: 0\nbytes: 40\ndropped events: 2\nread events: 0\n";
        assert_eq!(lost_events(stats), 5);
    }
}
