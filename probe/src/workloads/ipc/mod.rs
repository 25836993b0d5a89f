//! The IPC family: Android's binder throughput and latency tests, run over the
//! mechanisms Linux programs really use (`channel`), with one protocol and one
//! way of placing and accounting the processes (this module; they are forked
//! and reaped by `workloads::children`).
//!
//! CPU placement is an axis: both ends of a pair on one CPU, on two different
//! CPUs, or where the scheduler puts them. Migrations (/proc/PID/sched) and
//! CPU time (each end's own thread clock, see `Ledger`) of both ends are read
//! from outside the timed loop, because on a VM the round trip differs
//! several-fold between placements and a spinning end must show what it burns.

/// A workload type with one instance per mechanism, named
/// `ipc.<mechanism>.<kind>`, in the order of `channel::MECHANISMS`.
macro_rules! per_mechanism {
    ($kind:ident, $suffix:literal) => {
        pub struct $kind {
            pub(super) mechanism: &'static Mechanism,
            pub(super) name: &'static str,
        }

        pub static ALL: [$kind; 6] = [
            $kind {
                mechanism: &MECHANISMS[0],
                name: concat!("ipc.pipe.", $suffix),
            },
            $kind {
                mechanism: &MECHANISMS[1],
                name: concat!("ipc.unix.", $suffix),
            },
            $kind {
                mechanism: &MECHANISMS[2],
                name: concat!("ipc.seqpacket.", $suffix),
            },
            $kind {
                mechanism: &MECHANISMS[3],
                name: concat!("ipc.eventfd.", $suffix),
            },
            $kind {
                mechanism: &MECHANISMS[4],
                name: concat!("ipc.futex.", $suffix),
            },
            $kind {
                mechanism: &MECHANISMS[5],
                name: concat!("ipc.binder.", $suffix),
            },
        ];
    };
}

pub mod binder;
pub mod channel;
mod inheritance;
mod latency;
mod pingpong;
mod throughput;
mod tracing;

pub use pingpong::PipePingPong;

use crate::workload::{refused, Workload, WorkloadError};
use std::sync::atomic::{AtomicU64, Ordering};

pub fn all() -> Vec<&'static dyn Workload> {
    let mut all: Vec<&'static dyn Workload> = throughput::ALL
        .iter()
        .map(|w| w as &'static dyn Workload)
        .collect();
    all.extend(latency::ALL.iter().map(|w| w as &'static dyn Workload));
    all
}

pub const PLACEMENTS: &[&str] = &["unpinned", "same", "different"];

/// The CPUs this process may run on.
fn allowed_cpus() -> Result<Vec<usize>, WorkloadError> {
    // SAFETY: reading our own affinity into a zeroed set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(WorkloadError::last_os("sched_getaffinity"));
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// (client CPU, server CPU) of each of `pairs` pairs, or None when unpinned.
/// Pairs are spread over the allowed CPUs round-robin.
pub fn placement_cpus(
    placement: &str,
    pairs: usize,
) -> Result<Option<Vec<(usize, usize)>>, WorkloadError> {
    if placement == "unpinned" {
        return Ok(None);
    }
    let cpus = allowed_cpus()?;
    let n = cpus.len();
    match placement {
        "same" if n >= 1 => Ok(Some(
            (0..pairs).map(|k| (cpus[k % n], cpus[k % n])).collect(),
        )),
        "different" if n >= 2 => Ok(Some(
            (0..pairs)
                .map(|k| (cpus[2 * k % n], cpus[(2 * k + 1) % n]))
                .collect(),
        )),
        _ => Err(refused!(
            "--placement {placement} needs {} CPUs this run may use",
            if placement == "same" { 1 } else { 2 }
        )),
    }
}

pub fn pin(cpu: usize) -> Result<(), WorkloadError> {
    // SAFETY: setting our own affinity from a zeroed set with one CPU.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(WorkloadError::last_os(format!(
                "sched_setaffinity to CPU {cpu}"
            )));
        }
    }
    Ok(())
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu has no preconditions.
    unsafe { libc::sched_getcpu().max(0) as u32 }
}

/// A process's migrations so far, where the kernel keeps scheduler statistics.
pub fn migrations(pid: libc::pid_t) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/sched")).ok()?;
    text.lines()
        .find(|l| l.starts_with("se.nr_migrations"))?
        .rsplit(':')
        .next()?
        .trim()
        .parse()
        .ok()
}

/// The calling thread's CPU time so far in ns (exact: the kernel's thread clock).
pub fn thread_cpu_ns() -> u64 {
    // SAFETY: reading a clock into a zeroed timespec.
    unsafe {
        let mut t: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t);
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    }
}

/// Where each server leaves its own CPU time over the timed transactions, for
/// its client to read once the last reply has arrived. Each end reads its own
/// thread clock because the kernel only lets a process read another's CPU time
/// through schedstat, rusage or the process clock, which lag by up to a
/// scheduler tick (longer than a short run) while that process runs elsewhere.
pub struct Ledger {
    words: &'static [AtomicU64],
}

impl Ledger {
    pub const SLOTS: usize = 1024; // a latency run takes two per pair (a half each), up to 512 pairs

    pub fn new() -> Result<Ledger, WorkloadError> {
        let page = channel::shared(Self::SLOTS * 8)?;
        // SAFETY: zeroed shared memory, aligned, mapped for the whole life of the process.
        Ok(Ledger {
            words: unsafe { std::slice::from_raw_parts(page as *const AtomicU64, Self::SLOTS) },
        })
    }

    pub fn put(&self, slot: usize, ns: u64) {
        self.words[slot].store(ns, Ordering::Release);
    }

    pub fn get(&self, slot: usize) -> u64 {
        self.words[slot].load(Ordering::Acquire)
    }
}

/// The migrations of some processes so far, where the kernel keeps scheduler statistics.
pub fn migrations_of(pids: &[libc::pid_t]) -> Option<u64> {
    pids.iter().map(|&p| migrations(p)).sum()
}

/// The payloads of a run: min, 2 min, 4 min, ... up to max.
pub fn payloads(min: usize, max: usize) -> Vec<usize> {
    std::iter::successors(Some(min), |&p| p.checked_mul(2))
        .take_while(|&p| p <= max)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_cpus_for_a_placement_is_a_refusal() {
        let cpus = allowed_cpus().unwrap().len();
        assert!(matches!(
            placement_cpus("nowhere", 1),
            Err(WorkloadError::Refused(_))
        ));
        if cpus < 2 {
            let why = placement_cpus("different", 1).unwrap_err();
            assert_eq!(
                why.to_string(),
                "--placement different needs 2 CPUs this run may use"
            );
        }
    }

    #[test]
    fn payloads_double_from_min_to_max() {
        assert_eq!(payloads(4, 64), vec![4, 8, 16, 32, 64]);
        assert_eq!(payloads(4, 65536).len(), 15);
        assert_eq!(payloads(3, 20), vec![3, 6, 12]);
    }

    #[test]
    fn every_workload_is_named_after_its_mechanism() {
        for w in throughput::ALL
            .iter()
            .map(|w| (w.name, w.mechanism))
            .chain(latency::ALL.iter().map(|w| (w.name, w.mechanism)))
        {
            assert_eq!(w.0.split('.').nth(1), Some(w.1.name));
        }
        assert_eq!(channel::MECHANISMS.len(), throughput::ALL.len());
    }

    #[test]
    fn pairs_spread_round_robin() {
        let cpus = allowed_cpus().unwrap();
        let same = placement_cpus("same", 3).unwrap().unwrap();
        assert!(same.iter().all(|(c, s)| c == s && cpus.contains(c)));
        assert!(placement_cpus("unpinned", 3).unwrap().is_none());
        if cpus.len() >= 2 {
            let different = placement_cpus("different", 2).unwrap().unwrap();
            assert!(different.iter().all(|(c, s)| c != s));
        }
    }

    #[test]
    fn the_thread_clock_counts_work_not_sleep() {
        let before = thread_cpu_ns();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let slept = thread_cpu_ns() - before;
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let worked = thread_cpu_ns() - before - slept;
        assert!(
            slept < 5_000_000 && worked > 10_000_000,
            "slept {slept} worked {worked} {x}"
        );
    }
}
