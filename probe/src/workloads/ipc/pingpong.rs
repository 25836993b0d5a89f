//! ipc.pipe.pingpong: two processes pass a payload back and forth over a pair
//! of pipes. The echoing child adds one to every byte, and the parent checks
//! each reply, so a round trip that did not really cross both pipes fails
//! the run. Each round trip is timed on its own to give the distribution:
//! its percentiles as metrics, every sample as a histogram (`crate::histogram`,
//! in the protocol's `histograms`), built once the timing is over.
//! It is the family's pipe channel (`channel::MECHANISMS[0]`) without the
//! binder tests' protocol: a plain echo.

use super::channel::{Channel, Mechanism, MECHANISMS};
use crate::histogram::Histogram;
use crate::protocol::Said;
use crate::report::{Counter, Direction, Entry};
use crate::timing::{percentile, Stopwatch};
use crate::workload::{
    failed, About, Digest, Kind, MetricSpec, OptionSpec, Options, Workload, WorkloadError, SEED,
};
use crate::workloads::children::{fork_with, reap};
use rand::{RngCore, SeedableRng};
use rand_pcg::Pcg64;
use std::time::Instant;

pub struct PipePingPong;

/// The workload's name, and its one benchmark entry's.
const NAME: &str = "ipc.pipe.pingpong";

/// The pipe pair of the IPC family's channels.
static PIPE: &Mechanism = &MECHANISMS[0];

static OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "roundtrips",
        default: "20000",
        help: "timed round trips",
        kind: Kind::Int {
            min: 1,
            max: 1 << 32,
        },
    },
    OptionSpec {
        name: "warmup",
        default: "1000",
        help: "untimed round trips first",
        kind: Kind::Int {
            min: 0,
            max: 1 << 32,
        },
    },
    OptionSpec {
        name: "payload",
        default: "64",
        help: "bytes sent each way per round trip",
        kind: Kind::Size {
            min: 1,
            max: 1 << 24,
        },
    },
    OptionSpec {
        name: "seed",
        default: "1",
        help: "seed of the payload bytes",
        kind: SEED,
    },
];

static METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "real_time",
        unit: "ns",
        direction: "lower",
        help: "mean wall time per round trip",
    },
    MetricSpec {
        name: "cpu_time",
        unit: "ns",
        direction: "lower",
        help: "CPU time of both processes per round trip",
    },
    MetricSpec {
        name: "items_per_second",
        unit: "1/s",
        direction: "higher",
        help: "round trips per second",
    },
    MetricSpec {
        name: "bytes_per_second",
        unit: "B/s",
        direction: "higher",
        help: "payload bytes moved per second, both ways",
    },
    MetricSpec {
        name: "latency_p50",
        unit: "ns",
        direction: "lower",
        help: "median round trip",
    },
    MetricSpec {
        name: "latency_p99",
        unit: "ns",
        direction: "lower",
        help: "99th percentile round trip",
    },
];

/// The echo: every byte of every message plus one, until the parent hangs up.
fn echo(channel: &mut dyn Channel, payload: usize) {
    let mut buf = vec![0u8; payload];
    while channel.recv(&mut buf).is_ok() {
        buf.iter_mut().for_each(|b| *b = b.wrapping_add(1));
        if channel.send(&buf).is_err() {
            break;
        }
    }
}

impl Workload for PipePingPong {
    fn about(&self) -> About {
        About { name: NAME, description: "two processes ping-pong a payload over a pair of pipes; round-trip latency distribution", version: 1, options: OPTIONS, metrics: METRICS }
    }
    fn run(&self, opts: &Options, said: &mut Said) -> Result<Vec<Entry>, WorkloadError> {
        let roundtrips = opts.int("roundtrips")?;
        let warmup = opts.int("warmup")?;
        let payload = opts.int("payload")? as usize;
        let mut rng = Pcg64::seed_from_u64(opts.int("seed")?);
        let (client, server) = (PIPE.make)(payload)?;
        let (child, mut client) =
            fork_with("ipc.pipe.pingpong echo", server, client, |mut server| {
                echo(server.as_mut(), payload);
                Ok(())
            })?;
        let mut out = vec![0u8; payload];
        let mut back = vec![0u8; payload];
        let mut samples = Vec::with_capacity(roundtrips as usize);
        let mut digest = Digest::new();
        let mut failure = None;
        let mut watch = Stopwatch::start(true);
        for i in 0..(warmup + roundtrips) {
            if i == warmup {
                watch = Stopwatch::start(true);
            }
            rng.fill_bytes(&mut out);
            let t0 = Instant::now();
            if client
                .send(&out)
                .and_then(|_| client.recv(&mut back))
                .is_err()
            {
                failure = Some(failed!("the echoing process went away"));
                break;
            }
            let ns = t0.elapsed().as_nanos() as u64;
            if out.iter().zip(&back).any(|(a, b)| a.wrapping_add(1) != *b) {
                failure = Some(failed!("round trip {i} came back altered"));
                break;
            }
            if i >= warmup {
                samples.push(ns);
                digest.word(
                    back.iter()
                        .fold(0u64, |acc, &b| acc.wrapping_mul(31).wrapping_add(b as u64)),
                );
            }
        }
        drop(client); // the echo sees the end of its input
        let echoed = reap(child, "echoing process");
        let (wall, cpu) = watch.elapsed();
        if let Some(msg) = failure {
            return Err(msg);
        }
        echoed?;
        samples.sort_unstable();
        if let Some(histogram) = Histogram::of(&samples) {
            said.histograms.push((NAME.into(), histogram));
        }
        let n = roundtrips as f64;
        Ok(vec![Entry {
            name: NAME.into(),
            iterations: roundtrips,
            threads: 1,
            real_time_ns: wall / n,
            cpu_time_ns: cpu / n,
            items_per_second: Some(n / (wall / 1e9)),
            bytes_per_second: Some(2.0 * payload as f64 * n / (wall / 1e9)),
            counters: vec![
                Counter::new(
                    "latency_p50",
                    percentile(&samples, 0.50),
                    "ns",
                    Direction::Lower,
                ),
                Counter::new(
                    "latency_p99",
                    percentile(&samples, 0.99),
                    "ns",
                    Direction::Lower,
                ),
            ],
            checksum: digest.hex(),
        }])
    }
}
