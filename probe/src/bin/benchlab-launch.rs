//! benchlab-launch: starts one workload process and reports the kernel's account of it; with
//! `--serve`, stays up and does so for every run benchlab sends it (see `serve`).
//!
//! A separate, small executable rather than a subcommand of the probe (see the library's notes).
//! Its command line is what `benchlab.measure.process` (one-shot runs), `measure.served` and
//! `measure.guest` (`--serve`) and `measure.remote` write: flags first, then `-- COMMAND ARGS`.

use benchlab_probe::container::Container;
use benchlab_probe::launch::{self, Settings};
use benchlab_probe::serve::{self, ServeSettings};
use clap::{value_parser, Arg, ArgAction, ArgMatches, Command};

/// The options of a single launch, refused beside `--serve` (a served run brings its own).
const LAUNCH_ONLY: [&str; 10] = [
    "result-fd",
    "perf-counters",
    "mapped",
    "memory-interval-ms",
    "container",
    "bind",
    "memory-limit",
    "cpu-limit",
    "cpu-cgroup",
    "command",
];

fn command() -> Command {
    let value = |name: &'static str, placeholder: &'static str, help: &'static str| {
        Arg::new(name).long(name).value_name(placeholder).help(help)
    };
    let flag = |name: &'static str, help: &'static str| {
        Arg::new(name)
            .long(name)
            .action(ArgAction::SetTrue)
            .help(help)
    };
    Command::new("benchlab-launch")
        .version(env!("CARGO_PKG_VERSION"))
        .about("starts one workload process and writes the kernel's account of it, a JSON line, on --result-fd")
        .args_override_self(true) // a repeated option: the last one counts
        .arg(value("result-fd", "N", "where the account goes").default_value("3").value_parser(value_parser!(i32)))
        .arg(flag("perf-counters", "count perf events (cycles, instructions, ...) for the run"))
        .arg(flag("mapped", "list the shared libraries the workload mapped"))
        .arg(value("cgroup", "PARENT", "the cgroup under which each run gets its own"))
        .arg(value("memory-interval-ms", "N", "sample the tree's RSS and PSS every N ms (0: never)").default_value("0").value_parser(value_parser!(u64)))
        .arg(value("container", "ROOTFS", "run in new namespaces, chrooted into ROOTFS"))
        .arg(value("bind", "PATH", "bind PATH into the container (repeatable)").action(ArgAction::Append).requires("container"))
        .arg(value("memory-limit", "BYTES", "the run's cgroup memory limit").value_parser(value_parser!(u64)))
        .arg(value("cpu-limit", "CPUS", "the run's cgroup CPU limit").value_parser(value_parser!(f64)))
        .arg(value("cpu-cgroup", "PARENT", "cgroup v1's cpu hierarchy for --cpu-limit").requires("cpu-limit"))
        .arg(value("die-with", "PID", "end everything started here when PID ends").value_parser(value_parser!(libc::pid_t)))
        .arg(flag("serve", "stay up and launch every run read from stdin, answering on stdout").conflicts_with_all(LAUNCH_ONLY))
        .arg(value("stdout-fd", "N", "--serve: the runs' stdout").value_parser(value_parser!(i32)).requires("serve"))
        .arg(value("stderr-fd", "N", "--serve: the runs' stderr").value_parser(value_parser!(i32)).requires("serve"))
        .arg(Arg::new("command").value_name("COMMAND").num_args(1..).last(true).help("the workload and its arguments, after --"))
        .group(clap::ArgGroup::new("mode").args(["serve", "command"]).required(true))
}

fn settings(matches: &ArgMatches) -> Settings {
    let text = |name: &str| matches.get_one::<String>(name).cloned();
    Settings {
        result_fd: *matches.get_one("result-fd").expect("has a default"),
        perf_counters: matches.get_flag("perf-counters"),
        mapped: matches.get_flag("mapped"),
        cgroup: text("cgroup"),
        memory_interval_ms: *matches
            .get_one("memory-interval-ms")
            .expect("has a default"),
        container: text("container").map(|rootfs| Container {
            rootfs: rootfs.into(),
            binds: matches
                .get_many::<String>("bind")
                .into_iter()
                .flatten()
                .map(Into::into)
                .collect(),
        }),
        memory_limit: matches.get_one("memory-limit").copied(),
        cpu_limit: matches.get_one("cpu-limit").copied(),
        cpu_cgroup: text("cpu-cgroup"),
        die_with: matches.get_one("die-with").copied(),
    }
}

fn main() {
    let mut cli = command();
    let matches = cli.get_matches_mut();
    let settings = settings(&matches);
    if matches.get_flag("serve") {
        let fd = |name: &str| matches.get_one::<i32>(name).copied();
        let (Some(stdout_fd), Some(stderr_fd)) = (fd("stdout-fd"), fd("stderr-fd")) else {
            cli.error(
                clap::error::ErrorKind::MissingRequiredArgument,
                "--serve needs --stdout-fd and --stderr-fd",
            )
            .exit()
        };
        let serve = ServeSettings {
            cgroup: settings.cgroup,
            stdout_fd,
            stderr_fd,
            die_with: settings.die_with,
        };
        std::process::exit(serve::serve(&serve))
    }
    let command: Vec<String> = matches
        .get_many::<String>("command")
        .expect("required without --serve")
        .cloned()
        .collect();
    std::process::exit(launch::launch(&command, &settings))
}
