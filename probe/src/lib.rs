//! benchlab's native parts as one library, behind three executables (`src/bin/`):
//!
//! - `benchlab-probe`: the built-in workloads (`workload`, `workloads`), each speaking Google
//!   Benchmark's JSON (`report`, `protocol`, `histogram`, `timing`);
//! - `benchlab-launch`: starts one workload process, or serves many (`launch`, `serve`), and
//!   reports the kernel's account of each (`counters`, `memory`, `mapped`, in a `container`);
//! - `benchlab-columns`: reads a SQLite file's results as binary columns (`columns`).
//!
//! The launcher is an executable of its own rather than a subcommand of the probe: the probe
//! links the whole CPU suite, and loading that much code costs ~2 ms per exec, which every run
//! would pay. Linking only what each `main` reaches keeps the launcher small.

pub mod columns;
pub mod container;
pub mod counters;
pub mod histogram;
pub mod launch;
pub mod mapped;
pub mod memory;
pub mod protocol;
pub mod report;
pub mod serve;
pub mod timing;
pub mod workload;
pub mod workloads;
