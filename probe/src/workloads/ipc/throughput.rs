//! `ipc.<mechanism>.throughput` is Android's binder throughput test on Linux
//! mechanisms: a client sends synchronous requests of growing payloads (4 B to
//! 64 KiB, doubling) to a server process, which reads every byte, adds one to
//! each and sends them back; the client checks every byte of every reply. One
//! Google Benchmark entry per payload: time per transaction, the client's CPU
//! time per transaction (as Google Benchmark counts the calling thread), bytes
//! per second (payload x transactions / time), and the on-CPU time of both
//! processes per transaction, which is what an explicit `--spin-us` costs.

use super::channel::{with_spin, Channel, Mechanism, MECHANISMS};
use super::{migrations_of, payloads, pin, placement_cpus, thread_cpu_ns, Ledger, PLACEMENTS};
use crate::protocol::Said;
use crate::report::{Counter, Direction, Entry};
use crate::timing::Stopwatch;
use crate::workload::{
    failed, About, Digest, Kind, MetricSpec, OptionSpec, Options, Workload, WorkloadError, SEED,
};
use crate::workloads::children::{fork_with, reap};
use rand::{RngCore, SeedableRng};
use rand_pcg::Pcg64;

per_mechanism!(Throughput, "throughput");

static OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "min-payload",
        default: "4",
        help: "smallest payload in bytes",
        kind: Kind::Size {
            min: 1,
            max: 1 << 20,
        },
    },
    OptionSpec {
        name: "max-payload",
        default: "64k",
        help: "largest payload in bytes (payloads double up to it)",
        kind: Kind::Size {
            min: 1,
            max: 1 << 20,
        },
    },
    OptionSpec {
        name: "iterations",
        default: "5000",
        help: "timed transactions per payload",
        kind: Kind::Int {
            min: 1,
            max: 1 << 32,
        },
    },
    OptionSpec {
        name: "warmup",
        default: "200",
        help: "untimed transactions per payload first",
        kind: Kind::Int {
            min: 0,
            max: 1 << 32,
        },
    },
    OptionSpec {
        name: "seed",
        default: "1",
        help: "seed of the payload bytes",
        kind: SEED,
    },
    OptionSpec {
        name: "placement",
        default: "unpinned",
        help: "unpinned, same (one CPU for both) or different (a CPU each)",
        kind: Kind::Choice(PLACEMENTS),
    },
    OptionSpec {
        name: "spin-us",
        default: "0",
        help: "spin up to this many microseconds before each blocking receive (0: block)",
        kind: Kind::Int {
            min: 0,
            max: 1_000_000,
        },
    },
];

static METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "<workload>/<payload>:real_time",
        unit: "ns",
        direction: "lower",
        help: "wall time per transaction (request and reply)",
    },
    MetricSpec {
        name: "<workload>/<payload>:cpu_time",
        unit: "ns",
        direction: "lower",
        help: "the client's CPU time per transaction",
    },
    MetricSpec {
        name: "<workload>/<payload>:items_per_second",
        unit: "1/s",
        direction: "higher",
        help: "transactions per second",
    },
    MetricSpec {
        name: "<workload>/<payload>:bytes_per_second",
        unit: "B/s",
        direction: "higher",
        help: "payload bytes sent per second",
    },
    MetricSpec {
        name: "<workload>/<payload>:cpu_per_transaction",
        unit: "ns",
        direction: "lower",
        help: "on-CPU time of client and server per transaction (spinning shows here)",
    },
    MetricSpec {
        name: "<workload>/<payload>:migrations",
        unit: "count",
        direction: "none",
        help: "CPU migrations of both processes per transaction",
    },
];

/// The server: every request read in full, each byte plus one sent back; its
/// CPU time over each payload's timed transactions goes to the ledger just
/// before the last reply, so the client finds it there when that reply arrives.
fn serve(
    channel: &mut dyn Channel,
    sizes: &[usize],
    warmup: u64,
    iterations: u64,
    ledger: &Ledger,
) -> Result<(), WorkloadError> {
    let mut buf = vec![0u8; sizes.iter().copied().max().unwrap_or(0)];
    for (slot, &size) in sizes.iter().enumerate() {
        let msg = &mut buf[..size];
        let mut start = thread_cpu_ns();
        for t in 0..warmup + iterations {
            channel.recv(msg)?;
            msg.iter_mut().for_each(|b| *b = b.wrapping_add(1));
            if t + 1 == warmup + iterations {
                ledger.put(slot, thread_cpu_ns() - start);
            }
            channel.send(msg)?;
            if t + 1 == warmup {
                start = thread_cpu_ns();
            }
        }
    }
    Ok(())
}

impl Workload for Throughput {
    fn about(&self) -> About {
        About { name: self.name, description: "synchronous request/reply between two processes over payloads of 4 B to 64 KiB (binder throughput test)", version: 1, options: OPTIONS, metrics: METRICS }
    }
    fn check(&self, opts: &Options) -> Result<(), WorkloadError> {
        opts.bounded("max-payload", opts.int("min-payload")?, 1 << 20)?;
        placement_cpus(opts.choice("placement")?, 1).map(drop)
    }
    fn run(&self, opts: &Options, _said: &mut Said) -> Result<Vec<Entry>, WorkloadError> {
        let min = opts.int("min-payload")? as usize;
        let max = opts.bounded("max-payload", min as u64, 1 << 20)? as usize;
        let iterations = opts.int("iterations")?;
        let warmup = opts.int("warmup")?;
        let spin_us = opts.int("spin-us")?;
        let mut rng = Pcg64::seed_from_u64(opts.int("seed")?);
        let sizes = payloads(min, max);
        let cpus = placement_cpus(opts.choice("placement")?, 1)?.map(|c| c[0]);
        let (client, server) = (self.mechanism.make)(max)?;
        let (client, server) = (with_spin(client, spin_us), with_spin(server, spin_us));
        let ledger = Ledger::new()?;
        let (child, mut client) = fork_with(
            &format!("{} server", self.name),
            server,
            client,
            |mut server| {
                cpus.map_or(Ok(()), |(_, cpu)| pin(cpu))?;
                serve(server.as_mut(), &sizes, warmup, iterations, &ledger)
            },
        )?;
        let ends = Ends {
            server: child,
            ledger: &ledger,
        };
        let result = cpus.map_or(Ok(()), |(cpu, _)| pin(cpu)).and_then(|_| {
            self.measure(client.as_mut(), &ends, &sizes, warmup, iterations, &mut rng)
        });
        drop(client); // the server sees the end of its requests
        let served = reap(child, "serving process");
        let entries = result?;
        served?;
        Ok(entries)
    }
}

/// What the client needs to account for the other end.
struct Ends<'a> {
    server: libc::pid_t,
    ledger: &'a Ledger,
}

impl Throughput {
    fn measure(
        &self,
        client: &mut dyn Channel,
        ends: &Ends,
        sizes: &[usize],
        warmup: u64,
        iterations: u64,
        rng: &mut Pcg64,
    ) -> Result<Vec<Entry>, WorkloadError> {
        // SAFETY: getpid has no preconditions.
        let pids = [unsafe { libc::getpid() }, ends.server];
        let largest = sizes.iter().copied().max().unwrap_or(0);
        let (mut out, mut back) = (vec![0u8; largest], vec![0u8; largest]);
        rng.fill_bytes(&mut out);
        let mut entries = Vec::with_capacity(sizes.len());
        for (slot, &size) in sizes.iter().enumerate() {
            let (request, reply) = (&mut out[..size], &mut back[..size]);
            let mut digest = Digest::new();
            let mut watch = Stopwatch::start(false);
            let (mut moved_before, mut cpu_before) = (migrations_of(&pids), thread_cpu_ns());
            for i in 0..warmup + iterations {
                if i == warmup {
                    watch = Stopwatch::start(false);
                    (moved_before, cpu_before) = (migrations_of(&pids), thread_cpu_ns());
                }
                request[i as usize % size] ^= (i as u8) | 1; // every request differs from the last
                client.send(request)?;
                client.recv(reply)?;
                if request
                    .iter()
                    .zip(reply.iter())
                    .any(|(q, r)| q.wrapping_add(1) != *r)
                {
                    return Err(failed!(
                        "transaction {i} of {size} bytes over {} came back altered",
                        self.mechanism.name
                    ));
                }
            }
            let (wall, cpu) = watch.elapsed();
            let both_ends =
                (thread_cpu_ns() - cpu_before + ends.ledger.get(slot)) as f64 / iterations as f64;
            let moved = migrations_of(&pids)
                .zip(moved_before)
                .map(|(a, b)| (a - b) as f64 / iterations as f64);
            digest.word(reply.iter().fold(size as u64, |acc, &b| {
                acc.wrapping_mul(31).wrapping_add(b as u64)
            }));
            let n = iterations as f64;
            let mut counters = vec![Counter::new(
                "cpu_per_transaction",
                both_ends,
                "ns",
                Direction::Lower,
            )];
            if let Some(m) = moved {
                counters.push(Counter::new("migrations", m, "count", Direction::None));
            }
            entries.push(Entry {
                name: format!("{}/{size}", self.name),
                iterations,
                threads: 1,
                real_time_ns: wall / n,
                cpu_time_ns: cpu / n,
                items_per_second: Some(n / (wall / 1e9)),
                bytes_per_second: Some(size as f64 * n / (wall / 1e9)),
                counters,
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
    fn every_mechanism_carries_every_payload_both_ways_blocking_and_spinning() {
        for spin_us in [0, 50] {
            for mechanism in MECHANISMS {
                if mechanism.name == "binder" {
                    continue; // binder refuses calls within one process: its own test forks
                }
                let (client, server) = (mechanism.make)(1 << 16).unwrap();
                let (mut client, mut server) =
                    (with_spin(client, spin_us), with_spin(server, spin_us));
                let sizes = payloads(4, 1 << 16);
                let serving = std::thread::spawn(move || {
                    serve(server.as_mut(), &sizes, 1, 2, &Ledger::new().unwrap())
                });
                for size in payloads(4, 1 << 16) {
                    for round in 0..3u8 {
                        let request: Vec<u8> = (0..size)
                            .map(|i| (i as u8).wrapping_mul(7).wrapping_add(round))
                            .collect();
                        let mut reply = vec![0u8; size];
                        client.send(&request).unwrap();
                        client.recv(&mut reply).unwrap();
                        assert!(
                            request
                                .iter()
                                .zip(&reply)
                                .all(|(q, r)| q.wrapping_add(1) == *r),
                            "{} at {size}",
                            mechanism.name
                        );
                    }
                }
                serving.join().unwrap().unwrap();
            }
        }
    }
}
