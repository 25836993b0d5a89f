//! The CPU suite: Geekbench-style tasks built on real libraries, each on
//! deterministic generated input and each verifying its own result.
//!
//! Every task runs the same way: its input is prepared untimed, then
//! `threads` copies of the task run at once (Geekbench 5's multi-core
//! model), each for `iterations` rounds, and the wall time from a common
//! start to the last copy's end gives the throughput. Every copy must
//! produce the same checksum, or the run fails.

mod aes_xts;
mod camera;
mod compiler;
mod gaussian_blur;
mod hdr;
mod horizon_detection;
mod html5;
mod image;
mod image_compression;
mod ml_inference;
mod navigation;
mod nbody;
mod ray_tracing;
mod rigid_body;
mod sqlite;
mod text_compression;
mod vector_rendering;

use crate::report::Entry;
use crate::timing::Stopwatch;
use crate::workload::{Digest, MetricSpec, OptionSpec, Options, Workload};
use std::sync::Barrier;

/// One task of the suite; the driver below turns it into a probe workload.
pub trait Task: Sync {
    type Input: Sync;
    /// Per-copy working memory, allocated untimed (output buffers and the like).
    type Scratch: Send;
    const NAME: &'static str;
    /// crypto, integer or floating_point: the score section.
    const SECTION: &'static str;
    const DESCRIPTION: &'static str;
    const VERSION: u32;
    /// Rounds per copy by default, chosen so one copy runs ~0.3 s on the baseline machine.
    const ITERATIONS: u64;
    /// What one unit of work is, for the throughput's unit (e.g. "B" for bytes).
    const WORK_UNIT: &'static str;

    fn prepare(&self, seed: u64) -> Self::Input;
    fn scratch(&self, input: &Self::Input) -> Self::Scratch;
    /// Units of work one round does on this input.
    fn work(&self, input: &Self::Input) -> f64;
    /// One timed round; verifies its own result and returns a checksum of it.
    fn round(&self, input: &Self::Input, scratch: &mut Self::Scratch) -> Result<u64, String>;
}

static OPTIONS: &[OptionSpec] = &[
    OptionSpec { name: "threads", default: "1", help: "copies of the task run at once (multi-core: online CPUs)" },
    OptionSpec { name: "iterations", default: "0", help: "rounds per copy (0: the task's default)" },
    OptionSpec { name: "seed", default: "1", help: "seed of the generated input" },
];

static METRICS: &[MetricSpec] = &[
    MetricSpec { name: "real_time", unit: "ns", direction: "lower", help: "wall time per round of one copy" },
    MetricSpec { name: "cpu_time", unit: "ns", direction: "lower", help: "CPU time per round, all copies" },
    MetricSpec { name: "items_per_second", unit: "work/s", direction: "higher", help: "throughput: units of work per second, all copies" },
];

pub struct Cpu<T: Task>(pub T);

impl<T: Task> Workload for Cpu<T> {
    fn name(&self) -> &'static str {
        T::NAME
    }
    fn description(&self) -> &'static str {
        T::DESCRIPTION
    }
    fn version(&self) -> u32 {
        T::VERSION
    }
    fn section(&self) -> Option<&'static str> {
        Some(T::SECTION)
    }
    fn work_unit(&self) -> Option<&'static str> {
        Some(T::WORK_UNIT)
    }
    fn options(&self) -> &'static [OptionSpec] {
        OPTIONS
    }
    fn metrics(&self) -> &'static [MetricSpec] {
        METRICS
    }
    fn run(&self, opts: &Options) -> Result<Vec<Entry>, String> {
        let threads = opts.bounded("threads", 1, 4096)? as usize;
        let mut iterations = opts.u64("iterations")?;
        if iterations == 0 {
            iterations = T::ITERATIONS;
        }
        let input = self.0.prepare(opts.u64("seed")?);
        let start = Barrier::new(threads + 1);
        let task = &self.0;
        let (results, wall, cpu) = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut scratch = task.scratch(&input);
                        start.wait();
                        let mut digest = Digest::new();
                        for _ in 0..iterations {
                            digest.word(task.round(&input, &mut scratch)?);
                        }
                        Ok::<u64, String>(digest.0)
                    })
                })
                .collect();
            let watch = Stopwatch::start(false);
            start.wait();
            let results: Vec<Result<u64, String>> =
                handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a copy panicked".into()))).collect();
            let (wall, cpu) = watch.elapsed();
            (results, wall, cpu)
        });
        let mut checksums = Vec::with_capacity(threads);
        for r in results {
            checksums.push(r?);
        }
        if checksums.iter().any(|c| *c != checksums[0]) {
            return Err("copies of the task disagree on their result".into());
        }
        let rounds = (iterations * threads as u64) as f64;
        Ok(vec![Entry {
            name: T::NAME.into(),
            iterations: iterations * threads as u64,
            real_time_ns: wall / iterations as f64,
            cpu_time_ns: cpu / rounds,
            items_per_second: Some(self.0.work(&input) * rounds / (wall / 1e9)),
            bytes_per_second: None,
            counters: vec![],
            checksum: format!("{:016x}", checksums[0]),
        }])
    }
}

pub fn all() -> Vec<&'static dyn Workload> {
    vec![
        &Cpu(aes_xts::AesXts),
        &Cpu(text_compression::TextCompression),
        &Cpu(navigation::Navigation),
        &Cpu(html5::Html5),
        &Cpu(sqlite::Sqlite),
        &Cpu(vector_rendering::VectorRendering),
        &Cpu(image_compression::ImageCompression),
        &Cpu(nbody::NBody),
        &Cpu(gaussian_blur::GaussianBlur),
        &Cpu(ml_inference::MlInference),
        &Cpu(compiler::Compiler),
        &Cpu(rigid_body::RigidBody),
        &Cpu(ray_tracing::RayTracing),
        &Cpu(hdr::Hdr),
        &Cpu(camera::Camera),
        &Cpu(horizon_detection::HorizonDetection),
    ]
}

/// XOR-fold of a byte slice as little-endian words: a cheap digest of a large output whose
/// correctness the task has already checked another way.
pub fn fold(bytes: &[u8]) -> u64 {
    let mut acc = 0u64;
    let mut chunks = bytes.chunks_exact(8);
    for (i, c) in chunks.by_ref().enumerate() {
        acc ^= u64::from_le_bytes(c.try_into().expect("8 bytes")).rotate_left((i % 64) as u32);
    }
    for &b in chunks.remainder() {
        acc = acc.rotate_left(8) ^ b as u64;
    }
    acc ^ bytes.len() as u64
}
