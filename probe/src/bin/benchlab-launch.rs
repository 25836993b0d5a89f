//! benchlab-launch: starts one workload process and reports the kernel's account of it; with
//! `--serve`, stays up and does so for every run benchlab sends it (see `serve`).
//! A separate, small executable rather than a subcommand of the probe (see the library's notes).

use benchlab_probe::container::Container;
use benchlab_probe::launch::{self, Settings};
use benchlab_probe::serve::{self, ServeSettings};

fn usage() -> ! {
    eprintln!(
        "usage: benchlab-launch [--result-fd N] [--perf-counters] [--mapped] [--cgroup PARENT] \
         [--memory-interval-ms N] [--container ROOTFS [--bind PATH]...] [--memory-limit BYTES] \
         [--cpu-limit CPUS [--cpu-cgroup PARENT]] [--die-with PID] -- COMMAND [ARGS...]\n       \
         benchlab-launch --serve --stdout-fd N --stderr-fd N [--cgroup PARENT] [--die-with PID]"
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut settings = Settings::default();
    let (mut serving, mut stdout_fd, mut stderr_fd) = (false, None, None);
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
            Some("--container") => {
                settings.container = Some(Container {
                    rootfs: value(rest).into(),
                    binds: vec![],
                });
                rest = &rest[2..];
            }
            Some("--bind") => {
                let path = value(rest);
                settings
                    .container
                    .as_mut()
                    .unwrap_or_else(|| usage())
                    .binds
                    .push(path.into());
                rest = &rest[2..];
            }
            Some("--memory-limit") => {
                settings.memory_limit = Some(value(rest).parse().unwrap_or_else(|_| usage()));
                rest = &rest[2..];
            }
            Some("--cpu-limit") => {
                settings.cpu_limit = Some(value(rest).parse().unwrap_or_else(|_| usage()));
                rest = &rest[2..];
            }
            Some("--cpu-cgroup") => {
                settings.cpu_cgroup = Some(value(rest));
                rest = &rest[2..];
            }
            Some("--die-with") => {
                settings.die_with = Some(value(rest).parse().unwrap_or_else(|_| usage()));
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
            Some("--serve") => {
                serving = true;
                rest = &rest[1..];
            }
            Some("--stdout-fd") => {
                stdout_fd = Some(value(rest).parse().unwrap_or_else(|_| usage()));
                rest = &rest[2..];
            }
            Some("--stderr-fd") => {
                stderr_fd = Some(value(rest).parse().unwrap_or_else(|_| usage()));
                rest = &rest[2..];
            }
            _ => break,
        }
    }
    if serving {
        let (Some(stdout_fd), Some(stderr_fd), true) = (stdout_fd, stderr_fd, rest.is_empty())
        else {
            usage()
        };
        let serve = ServeSettings {
            cgroup: settings.cgroup,
            stdout_fd,
            stderr_fd,
            die_with: settings.die_with,
        };
        std::process::exit(serve::serve(&serve))
    }
    match rest.split_first() {
        Some((dashes, command)) if dashes == "--" && !command.is_empty() => {
            std::process::exit(launch::launch(command, &settings))
        }
        _ => usage(),
    }
}
