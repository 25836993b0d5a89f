//! benchlab-launch: starts one workload process and reports the kernel's account of it.
//!
//! A separate, small executable rather than a subcommand of the probe: the probe links the
//! whole CPU suite, and loading that much code costs ~2 ms per exec, which every run would pay.

mod counters;
mod launch;
mod mapped;
mod memory;

use launch::Settings;

fn usage() -> ! {
    eprintln!(
        "usage: benchlab-launch [--result-fd N] [--perf-counters] [--mapped] [--cgroup PARENT] \
         [--memory-interval-ms N] -- COMMAND [ARGS...]"
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut settings = Settings::default();
    let mut rest = &args[..];
    let value = |rest: &[String]| rest.get(1).cloned().unwrap_or_else(|| usage());
    loop {
        match rest.first().map(String::as_str) {
            Some("--result-fd") => {
                settings.result_fd = value(rest).parse().unwrap_or_else(|_| usage());
                rest = &rest[2..];
            }
            Some("--cgroup") => {
                settings.cgroup = Some(value(rest));
                rest = &rest[2..];
            }
            Some("--memory-interval-ms") => {
                settings.memory_interval_ms = value(rest).parse().unwrap_or_else(|_| usage());
                rest = &rest[2..];
            }
            Some("--perf-counters") => {
                settings.perf_counters = true;
                rest = &rest[1..];
            }
            Some("--mapped") => {
                settings.mapped = true;
                rest = &rest[1..];
            }
            _ => break,
        }
    }
    match rest.split_first() {
        Some((dashes, command)) if dashes == "--" && !command.is_empty() => {
            std::process::exit(launch::launch(command, &settings))
        }
        _ => usage(),
    }
}
