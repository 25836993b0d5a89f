//! benchlab-launch: starts one workload process and reports the kernel's account of it.
//!
//! A separate, small executable rather than a subcommand of the probe: the probe links the
//! whole CPU suite, and loading that much code costs ~2 ms per exec, which every run would pay.

mod counters;
mod launch;

fn usage() -> ! {
    eprintln!("usage: benchlab-launch [--result-fd N] [--perf-counters] -- COMMAND [ARGS...]");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut fd = 3;
    let mut rest = &args[..];
    let mut counters = false;
    loop {
        match rest.first().map(String::as_str) {
            Some("--result-fd") => {
                fd = rest.get(1).and_then(|v| v.parse().ok()).unwrap_or_else(|| usage());
                rest = &rest[2..];
            }
            Some("--perf-counters") => {
                counters = true;
                rest = &rest[1..];
            }
            _ => break,
        }
    }
    match rest.split_first() {
        Some((dashes, command)) if dashes == "--" && !command.is_empty() => {
            std::process::exit(launch::launch(command, fd, counters))
        }
        _ => usage(),
    }
}
