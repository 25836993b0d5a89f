//! The IPC family: the same harness over every mechanism in `channel`.
//!
//! `ipc.<mechanism>.throughput` is Android's binder throughput test on Linux
//! mechanisms: a client sends synchronous requests of growing payloads (4 B to
//! 64 KiB, doubling) to a server process, which reads every byte, adds one to
//! each and sends them back; the client checks every byte of every reply. One
//! Google Benchmark entry per payload: time per transaction, the client's CPU
//! time per transaction (as Google Benchmark counts the calling thread), and
//! bytes per second (payload x transactions / time).
//!
//! CPU placement is an axis (`--placement`): both processes on one CPU, on two
//! different CPUs, or where the scheduler puts them; the migrations of both
//! per transaction are counted (from /proc/PID/sched), because on a VM the
//! round trip differs several-fold between these.

pub mod channel;

use crate::report::{Counter, Direction, Entry};
use crate::timing::Stopwatch;
use crate::workload::{Digest, MetricSpec, OptionSpec, Options, Workload};
use channel::{Channel, Mechanism, MECHANISMS};
use rand::{RngCore, SeedableRng};
use rand_pcg::Pcg64;

pub struct Throughput {
    mechanism: &'static Mechanism,
    name: &'static str,
}

static THROUGHPUT: [Throughput; 5] = [
    Throughput { mechanism: &MECHANISMS[0], name: "ipc.pipe.throughput" },
    Throughput { mechanism: &MECHANISMS[1], name: "ipc.unix.throughput" },
    Throughput { mechanism: &MECHANISMS[2], name: "ipc.seqpacket.throughput" },
    Throughput { mechanism: &MECHANISMS[3], name: "ipc.eventfd.throughput" },
    Throughput { mechanism: &MECHANISMS[4], name: "ipc.futex.throughput" },
];

pub fn all() -> Vec<&'static dyn Workload> {
    THROUGHPUT.iter().map(|w| w as &'static dyn Workload).collect()
}

static OPTIONS: &[OptionSpec] = &[
    OptionSpec { name: "min-payload", default: "4", help: "smallest payload in bytes" },
    OptionSpec { name: "max-payload", default: "64k", help: "largest payload in bytes (payloads double up to it)" },
    OptionSpec { name: "iterations", default: "5000", help: "timed transactions per payload" },
    OptionSpec { name: "warmup", default: "200", help: "untimed transactions per payload first" },
    OptionSpec { name: "seed", default: "1", help: "seed of the payload bytes" },
    OptionSpec { name: "placement", default: "unpinned", help: "unpinned, same (one CPU for both) or different (a CPU each)" },
];

const PLACEMENTS: &[&str] = &["unpinned", "same", "different"];

static METRICS: &[MetricSpec] = &[
    MetricSpec { name: "<workload>/<payload>:real_time", unit: "ns", direction: "lower", help: "wall time per transaction (request and reply)" },
    MetricSpec { name: "<workload>/<payload>:cpu_time", unit: "ns", direction: "lower", help: "the client's CPU time per transaction" },
    MetricSpec { name: "<workload>/<payload>:items_per_second", unit: "1/s", direction: "higher", help: "transactions per second" },
    MetricSpec { name: "<workload>/<payload>:bytes_per_second", unit: "B/s", direction: "higher", help: "payload bytes sent per second" },
    MetricSpec { name: "<workload>/<payload>:migrations", unit: "count", direction: "none", help: "CPU migrations of both processes per transaction" },
];

/// (client CPU, server CPU) for a placement, from the CPUs this run may use.
fn placement_cpus(placement: &str) -> Result<Option<(usize, usize)>, String> {
    if placement == "unpinned" {
        return Ok(None);
    }
    // SAFETY: reading our own affinity into a zeroed set.
    let allowed: Vec<usize> = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(format!("sched_getaffinity: {}", std::io::Error::last_os_error()));
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    };
    match (placement, allowed.as_slice()) {
        ("same", [first, ..]) => Ok(Some((*first, *first))),
        ("different", [first, second, ..]) => Ok(Some((*first, *second))),
        _ => Err(format!("--placement {placement} needs {} CPUs this run may use", if placement == "same" { 1 } else { 2 })),
    }
}

fn pin(cpu: usize) -> Result<(), String> {
    // SAFETY: setting our own affinity from a zeroed set with one CPU.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("sched_setaffinity to CPU {cpu}: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

/// A process's migrations so far, where the kernel keeps scheduler statistics.
fn migrations(pid: libc::pid_t) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/sched")).ok()?;
    text.lines().find(|l| l.starts_with("se.nr_migrations"))?.rsplit(':').next()?.trim().parse().ok()
}

/// The payloads of a run: min, 2 min, 4 min, ... up to max.
fn payloads(min: usize, max: usize) -> Vec<usize> {
    std::iter::successors(Some(min), |&p| p.checked_mul(2)).take_while(|&p| p <= max).collect()
}

/// The server: every request read in full, each byte plus one sent back.
fn serve(channel: &mut dyn Channel, sizes: &[usize], transactions: u64) -> Result<(), String> {
    let mut buf = vec![0u8; sizes.iter().copied().max().unwrap_or(0)];
    for &size in sizes {
        let msg = &mut buf[..size];
        for _ in 0..transactions {
            channel.recv(msg)?;
            msg.iter_mut().for_each(|b| *b = b.wrapping_add(1));
            channel.send(msg)?;
        }
    }
    Ok(())
}

impl Workload for Throughput {
    fn name(&self) -> &'static str {
        self.name
    }
    fn description(&self) -> &'static str {
        "synchronous request/reply between two processes over payloads of 4 B to 64 KiB (binder throughput test)"
    }
    fn version(&self) -> u32 {
        1
    }
    fn options(&self) -> &'static [OptionSpec] {
        OPTIONS
    }
    fn metrics(&self) -> &'static [MetricSpec] {
        METRICS
    }
    fn run(&self, opts: &Options) -> Result<Vec<Entry>, String> {
        let min = opts.bounded("min-payload", 1, 1 << 20)? as usize;
        let max = opts.bounded("max-payload", min as u64, 1 << 20)? as usize;
        let iterations = opts.bounded("iterations", 1, 1 << 32)?;
        let warmup = opts.bounded("warmup", 0, 1 << 32)?;
        let mut rng = Pcg64::seed_from_u64(opts.u64("seed")?);
        let sizes = payloads(min, max);
        let cpus = placement_cpus(opts.choice("placement", PLACEMENTS)?)?;
        let (mut client, mut server) = (self.mechanism.make)(max)?;
        // SAFETY: the probe is single-threaded here; the child serves and leaves with _exit.
        let child = unsafe { libc::fork() };
        if child < 0 {
            return Err(format!("fork: {}", std::io::Error::last_os_error()));
        }
        if child == 0 {
            drop(client);
            let served = cpus.map_or(Ok(()), |(_, cpu)| pin(cpu)).and_then(|_| serve(server.as_mut(), &sizes, warmup + iterations));
            let code = match served {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("{} server: {e}", self.name);
                    1
                }
            };
            // SAFETY: leaving the forked child without running the parent's destructors.
            unsafe { libc::_exit(code) }
        }
        drop(server);
        let result = cpus
            .map_or(Ok(()), |(cpu, _)| pin(cpu))
            .and_then(|_| self.measure(client.as_mut(), child, &sizes, warmup, iterations, &mut rng));
        drop(client); // the server sees the end of its requests
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(child, &mut status, 0) };
        let entries = result?;
        if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
            return Err(format!("the serving process ended badly (wait status {status})"));
        }
        Ok(entries)
    }
}

impl Throughput {
    fn measure(
        &self, client: &mut dyn Channel, server: libc::pid_t, sizes: &[usize], warmup: u64, iterations: u64, rng: &mut Pcg64,
    ) -> Result<Vec<Entry>, String> {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        let moved = || Some(migrations(me)? + migrations(server)?);
        let largest = sizes.iter().copied().max().unwrap_or(0);
        let (mut out, mut back) = (vec![0u8; largest], vec![0u8; largest]);
        rng.fill_bytes(&mut out);
        let mut entries = Vec::with_capacity(sizes.len());
        for &size in sizes {
            let (request, reply) = (&mut out[..size], &mut back[..size]);
            let mut digest = Digest::new();
            let mut watch = Stopwatch::start(false);
            let mut moved_before = moved();
            for i in 0..warmup + iterations {
                if i == warmup {
                    watch = Stopwatch::start(false);
                    moved_before = moved();
                }
                request[i as usize % size] ^= (i as u8) | 1; // every request differs from the last
                client.send(request)?;
                client.recv(reply)?;
                if request.iter().zip(reply.iter()).any(|(q, r)| q.wrapping_add(1) != *r) {
                    return Err(format!("transaction {i} of {size} bytes over {} came back altered", self.mechanism.name));
                }
            }
            let (wall, cpu) = watch.elapsed();
            let per_transaction = moved().zip(moved_before).map(|(after, before)| (after - before) as f64 / iterations as f64);
            digest.word(reply.iter().fold(size as u64, |acc, &b| acc.wrapping_mul(31).wrapping_add(b as u64)));
            let n = iterations as f64;
            entries.push(Entry {
                name: format!("{}/{size}", self.name),
                iterations,
                threads: 1,
                real_time_ns: wall / n,
                cpu_time_ns: cpu / n,
                items_per_second: Some(n / (wall / 1e9)),
                bytes_per_second: Some(size as f64 * n / (wall / 1e9)),
                counters: per_transaction
                    .map(|m| Counter::new("migrations", m, "count", Direction::None))
                    .into_iter()
                    .collect(),
                checksum: digest.hex(),
            });
        }
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_double_from_min_to_max() {
        assert_eq!(payloads(4, 64), vec![4, 8, 16, 32, 64]);
        assert_eq!(payloads(4, 65536).len(), 15);
        assert_eq!(payloads(3, 20), vec![3, 6, 12]);
    }

    #[test]
    fn every_mechanism_carries_every_payload_both_ways() {
        for mechanism in MECHANISMS {
            let (mut client, mut server) = (mechanism.make)(1 << 16).unwrap();
            let sizes = payloads(4, 1 << 16);
            let serving = std::thread::spawn(move || serve(server.as_mut(), &sizes, 3));
            for size in payloads(4, 1 << 16) {
                for round in 0..3u8 {
                    let request: Vec<u8> = (0..size).map(|i| (i as u8).wrapping_mul(7).wrapping_add(round)).collect();
                    let mut reply = vec![0u8; size];
                    client.send(&request).unwrap();
                    client.recv(&mut reply).unwrap();
                    assert!(request.iter().zip(&reply).all(|(q, r)| q.wrapping_add(1) == *r), "{} at {size}", mechanism.name);
                }
            }
            serving.join().unwrap().unwrap();
        }
    }
}
