//! The CPU suite: Geekbench-style tasks built on real libraries, each on
//! deterministic generated input and each verifying its own result.
//!
//! Every task runs the same way: its input is prepared untimed, then the
//! timed work runs on `threads` threads (0: every CPU this process may use)
//! in one of two modes, and the wall time from a common start to the last
//! thread's end gives the throughput:
//! - copies (Geekbench 5's multi-core model): each thread runs its own copy
//!   of the task for `iterations` rounds; every copy must produce the same
//!   checksum, or the run fails;
//! - shared (Geekbench 6's): tasks whose round splits naturally into
//!   independent parts run one round at a time, the threads taking parts as
//!   they come free; the checksum must equal a single thread's.

mod aes_xts;
mod camera;
mod compiler;
mod face_detection;
mod gaussian_blur;
mod hdr;
mod horizon_detection;
mod html5;
mod image;
mod image_compression;
mod image_inpainting;
mod ml_inference;
mod navigation;
mod nbody;
mod ray_tracing;
mod rigid_body;
mod speech_recognition;
mod sqlite;
mod structure_from_motion;
mod text_compression;
mod text_rendering;
mod vector_rendering;

use crate::protocol::Said;
use crate::report::{Counter, Direction, Entry};
use crate::timing::Stopwatch;
use crate::workload::{
    failed, refused, About, Digest, Kind, MetricSpec, OptionSpec, Options, Workload, WorkloadError,
    SEED,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;

/// Bumped with any task's version or any change to how the suite is run; the score
/// baseline names the suite version it was measured on, and runs of one suite version are
/// never compared with another's. 2: Geekbench 5's 21 kinds of workload, each in its
/// section (text rendering, face detection, inpainting, structure from motion and speech
/// recognition added; camera moved to Integer).
pub const SUITE_VERSION: u32 = 2;

/// One task of the suite; the driver below turns it into a probe workload.
pub trait Task: Sync {
    type Input: Sync;
    /// Per-thread working memory, allocated untimed (output buffers and the like).
    type Scratch: Send;
    const NAME: &'static str;
    /// crypto, integer or floating_point: the score section.
    const SECTION: &'static str;
    const DESCRIPTION: &'static str;
    const VERSION: u32;
    /// Rounds per copy by default, chosen so one copy runs 0.1 to 0.3 s on the baseline machine
    /// (the whole suite, single- and multi-core, within 3 minutes on 2 cores).
    const ITERATIONS: u64;
    /// What one unit of work is, for the throughput's unit (e.g. "B" for bytes).
    const WORK_UNIT: &'static str;
    /// Independent parts a round splits into, for the shared-task mode; 0 where it does not
    /// split naturally. A task with parts implements `part` and keeps the default `round`,
    /// so that both modes compute the very same checksum.
    const PARTS: usize = 0;
    /// Whether the parts are even enough to share among threads (shared-task mode).
    const SHARES: bool = true;

    fn prepare(&self, seed: u64) -> Self::Input;
    fn scratch(&self, input: &Self::Input) -> Self::Scratch;
    /// Units of work one round does on this input.
    fn work(&self, input: &Self::Input) -> f64;
    /// One timed round; verifies its own result and returns a checksum of it.
    fn round(
        &self,
        input: &Self::Input,
        scratch: &mut Self::Scratch,
    ) -> Result<u64, WorkloadError> {
        let mut digest = Digest::new();
        for index in 0..Self::PARTS {
            digest.word(self.part(input, scratch, index)?);
        }
        Ok(digest.0)
    }
    /// The generated input as a file another tool can read (the text corpus, for `zstd -b`).
    fn input_file(&self, _input: &Self::Input) -> Option<Vec<u8>> {
        None
    }
    /// Part `index` of a round (verified like a round); only for tasks with PARTS > 0.
    fn part(
        &self,
        _input: &Self::Input,
        _scratch: &mut Self::Scratch,
        _index: usize,
    ) -> Result<u64, WorkloadError> {
        Err(failed!("{} does not split into parts", Self::NAME))
    }
}

static OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "threads",
        default: "1",
        help: "threads (0: every CPU this process may run on)",
        kind: Kind::Int { min: 0, max: 4096 },
    },
    OptionSpec {
        name: "mode",
        default: "copies",
        help: "copies: a copy of the task per thread; shared: the threads split one task",
        kind: Kind::Choice(&["copies", "shared"]),
    },
    OptionSpec {
        name: "iterations",
        default: "0",
        help: "rounds per copy (0: the task's default)",
        kind: Kind::Int {
            min: 0,
            max: 1 << 40,
        },
    },
    OptionSpec {
        name: "seed",
        default: "1",
        help: "seed of the generated input",
        kind: SEED,
    },
    OptionSpec {
        name: "part",
        default: "all",
        help: "only this part of each round (to compare one codec with its own tool)",
        kind: Kind::Text,
    },
    OptionSpec {
        name: "save-input",
        default: "",
        help: "write the generated input to this file first",
        kind: Kind::Text,
    },
];

static METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "real_time",
        unit: "ns",
        direction: "lower",
        help: "wall time per round of one copy",
    },
    MetricSpec {
        name: "cpu_time",
        unit: "ns",
        direction: "lower",
        help: "CPU time per round, all threads",
    },
    MetricSpec {
        name: "items_per_second",
        unit: "work/s",
        direction: "higher",
        help: "throughput: units of work per second, all threads",
    },
    MetricSpec {
        name: "threads",
        unit: "threads",
        direction: "none",
        help: "threads the run used",
    },
];

/// What the timed part of a run produced: per thread, its checksum (copies) or its
/// (part number, checksum) list (shared); the caller drains `results` as it judges them.
struct Timed<R> {
    results: Vec<Result<R, WorkloadError>>,
    wall_ns: f64,
    cpu_ns: f64,
}

/// What one thread of a shared task did: (part number, checksum) for each part it took.
type Parts = Vec<(usize, u64)>;

/// Runs `body` on `threads` threads, each with its own scratch, from a common start.
fn timed<T: Task, R: Send>(
    task: &T,
    input: &T::Input,
    threads: usize,
    body: impl Fn(&mut T::Scratch) -> Result<R, WorkloadError> + Sync,
) -> Timed<R> {
    let start = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut scratch = task.scratch(input);
                    start.wait();
                    body(&mut scratch)
                })
            })
            .collect();
        let watch = Stopwatch::start(false);
        start.wait();
        let results = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(failed!("a thread panicked")))
            })
            .collect();
        let (wall_ns, cpu_ns) = watch.elapsed();
        Timed {
            results,
            wall_ns,
            cpu_ns,
        }
    })
}

pub struct Cpu<T: Task>(pub T);

impl<T: Task> Cpu<T> {
    /// `--part`: None for all of each round, else the one part to run (checked before running).
    fn part_option(opts: &Options) -> Result<Option<usize>, WorkloadError> {
        let text = opts.text("part");
        if text == "all" {
            return Ok(None);
        }
        if T::PARTS == 0 {
            return Err(refused!(
                "option --part: {} has no parts (only all)",
                T::NAME
            ));
        }
        match text.parse::<usize>() {
            Ok(part) if part < T::PARTS => Ok(Some(part)),
            _ => Err(refused!(
                "option --part: '{text}' is not all or a part 0..={}",
                T::PARTS - 1
            )),
        }
    }

    /// Every thread runs all rounds; returns the common checksum.
    fn copies_of(
        &self,
        input: &T::Input,
        threads: usize,
        iterations: u64,
        round: impl Fn(&mut T::Scratch) -> Result<u64, WorkloadError> + Sync,
    ) -> Result<(u64, Timed<u64>), WorkloadError> {
        let mut timed = timed(&self.0, input, threads, |scratch| {
            let mut digest = Digest::new();
            for _ in 0..iterations {
                digest.word(round(scratch)?);
            }
            Ok(digest.0)
        });
        let checksums: Vec<u64> = timed.results.drain(..).collect::<Result<_, _>>()?;
        if checksums.iter().any(|c| *c != checksums[0]) {
            return Err(failed!("copies of the task disagree on their result"));
        }
        Ok((checksums[0], timed))
    }

    /// `iterations`: rounds per copy (or shared rounds); `rounds`: whole rounds done over all
    /// threads; times in ns.
    #[allow(clippy::too_many_arguments)]
    fn entry(
        &self,
        input: &T::Input,
        checksum: u64,
        iterations: u64,
        rounds: u64,
        threads: usize,
        wall: f64,
        cpu: f64,
    ) -> Entry {
        Entry {
            name: T::NAME.into(),
            iterations: rounds,
            threads: threads as u64,
            real_time_ns: wall / iterations as f64,
            cpu_time_ns: cpu / rounds as f64,
            items_per_second: Some(self.0.work(input) * rounds as f64 / (wall / 1e9)),
            bytes_per_second: None,
            counters: vec![Counter::new(
                "threads",
                threads as f64,
                "threads",
                Direction::None,
            )],
            checksum: format!("{checksum:016x}"),
        }
    }

    /// The threads take the parts of each round in turn; the checksum is put together in
    /// part order, so it equals the one a single thread computes in copies mode.
    fn shared(
        &self,
        input: &T::Input,
        threads: usize,
        iterations: u64,
    ) -> Result<(u64, Timed<Parts>), WorkloadError> {
        if T::PARTS == 0 || !T::SHARES {
            return Err(refused!(
                "{} does not split into a shared task; use --mode copies",
                T::NAME
            ));
        }
        let total = T::PARTS * iterations as usize;
        let next = AtomicUsize::new(0);
        let mut timed = timed(&self.0, input, threads, |scratch| {
            let mut done = Vec::new();
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= total {
                    return Ok(done);
                }
                match self.0.part(input, scratch, k % T::PARTS) {
                    Ok(c) => done.push((k, c)),
                    Err(e) => {
                        next.store(total, Ordering::Relaxed); // the others stop too
                        return Err(e);
                    }
                }
            }
        });
        let mut parts = Vec::with_capacity(total);
        for r in timed.results.drain(..) {
            parts.extend(r?);
        }
        parts.sort_unstable();
        let mut digest = Digest::new();
        for round in parts.chunks(T::PARTS) {
            let mut of_round = Digest::new();
            for &(_, c) in round {
                of_round.word(c);
            }
            digest.word(of_round.0);
        }
        Ok((digest.0, timed))
    }
}

impl<T: Task> Workload for Cpu<T> {
    fn about(&self) -> About {
        About {
            name: T::NAME,
            description: T::DESCRIPTION,
            version: T::VERSION,
            options: OPTIONS,
            metrics: METRICS,
        }
    }
    fn section(&self) -> Option<&'static str> {
        Some(T::SECTION)
    }
    fn work_unit(&self) -> Option<&'static str> {
        Some(T::WORK_UNIT)
    }
    fn default_iterations(&self) -> Option<u64> {
        Some(T::ITERATIONS)
    }
    fn modes(&self) -> &'static [&'static str] {
        if T::PARTS > 0 && T::SHARES {
            &["copies", "shared"]
        } else {
            &["copies"]
        }
    }
    fn check(&self, opts: &Options) -> Result<(), WorkloadError> {
        Self::part_option(opts).map(|_| ())
    }
    fn run(&self, opts: &Options, _said: &mut Said) -> Result<Vec<Entry>, WorkloadError> {
        let mut threads = opts.int("threads")? as usize;
        if threads == 0 {
            threads = std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1);
        }
        let mut iterations = opts.int("iterations")?;
        if iterations == 0 {
            iterations = T::ITERATIONS;
        }
        let input = self.0.prepare(opts.int("seed")?);
        if let Some(path) = opts.values.get("save-input").filter(|p| !p.is_empty()) {
            let bytes = self
                .0
                .input_file(&input)
                .ok_or_else(|| failed!("{} has no input file to save", T::NAME))?;
            std::fs::write(path, bytes)
                .map_err(|e| WorkloadError::io(format!("cannot write {path}"), e))?;
        }
        if let Some(part) = Self::part_option(opts)? {
            let (c, t) = self.copies_of(&input, threads, iterations, |scratch| {
                self.0.part(&input, scratch, part)
            })?;
            return Ok(vec![self.entry(
                &input,
                c,
                iterations,
                iterations * threads as u64,
                threads,
                t.wall_ns,
                t.cpu_ns,
            )]);
        }
        // rounds: whole rounds of the task done, over all threads
        let (checksum, rounds, wall, cpu) = match opts.choice("mode")? {
            "copies" => {
                let (c, t) = self.copies_of(&input, threads, iterations, |scratch| {
                    self.0.round(&input, scratch)
                })?;
                (c, iterations * threads as u64, t.wall_ns, t.cpu_ns)
            }
            _ => {
                let (c, t) = self.shared(&input, threads, iterations)?;
                (c, iterations, t.wall_ns, t.cpu_ns)
            }
        };
        Ok(vec![self.entry(
            &input, checksum, iterations, rounds, threads, wall, cpu,
        )])
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
        &Cpu(text_rendering::TextRendering),
        &Cpu(face_detection::FaceDetection),
        &Cpu(speech_recognition::SpeechRecognition),
        &Cpu(image_inpainting::ImageInpainting),
        &Cpu(structure_from_motion::StructureFromMotion),
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
