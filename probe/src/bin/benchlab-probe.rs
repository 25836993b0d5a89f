//! benchlab-probe: benchlab's built-in workloads in one executable that
//! speaks Google Benchmark's JSON (see the design notes, "Probe protocol").

use benchlab_probe::protocol::{self, Said};
use benchlab_probe::workload::{Options, Workload};
use benchlab_probe::{report, workloads};
use clap::{Arg, ArgAction, Command};
use serde_json::json;
use std::collections::BTreeMap;

fn format_arg() -> Arg {
    Arg::new("format")
        .long("format")
        .value_parser(["json", "console", "android"])
        .default_value("console")
        .help("json: Google Benchmark JSON; console: Google Benchmark's table; android: the Android latency test's JSON (ipc.*.latency)")
}

fn command(catalogue: &[&'static dyn Workload]) -> Command {
    let mut cmd = Command::new("benchlab-probe")
        .version(env!("CARGO_PKG_VERSION"))
        .about(
            "benchlab's built-in workloads; each prints Google Benchmark's JSON with --format json",
        )
        .subcommand_required(true)
        .subcommand(
            Command::new("list")
                .about("list workloads, options and metrics")
                .arg(format_arg()),
        );
    for w in catalogue {
        let about = w.about();
        let mut sub = Command::new(about.name).about(about.description).arg(format_arg()).arg(
            Arg::new("check")
                .long("check")
                .action(ArgAction::SetTrue)
                .help("check the options against their bounds and the CPUs this process may use, then exit without running"),
        );
        for o in about.options {
            sub = sub.arg(
                Arg::new(o.name)
                    .long(o.name)
                    .default_value(o.default)
                    .help(o.help)
                    .action(ArgAction::Set),
            );
        }
        cmd = cmd.subcommand(sub);
    }
    cmd
}

fn list(catalogue: &[&'static dyn Workload], format: &str) {
    let items: Vec<_> = catalogue
        .iter()
        .map(|w| {
            let about = w.about();
            json!({
                "name": about.name,
                "description": about.description,
                "version": about.version,
                "section": w.section(),
                "work_unit": w.work_unit(),
                "modes": w.modes(),
                "iterations": w.default_iterations(),
                "suite_version": w.section().map(|_| workloads::cpu::SUITE_VERSION),
                // numbers as numbers, as a spec writes them; sizes (`4m`) and words as text
                "quick": w.quick_options().iter().map(|(k, v)| (k.to_string(), v.parse::<u64>().map_or(json!(v), |n| json!(n)))).collect::<serde_json::Map<_, _>>(),
                "options": about.options.iter().map(|o| {
                    let mut option = json!({"name": o.name, "default": o.default, "help": o.help});
                    option.as_object_mut().unwrap().extend(o.kind.describe().as_object().unwrap().clone());
                    option
                }).collect::<Vec<_>>(),
                "metrics": about.metrics.iter().map(|m| json!({"name": m.name, "unit": m.unit, "direction": m.direction, "help": m.help})).collect::<Vec<_>>(),
            })
        })
        .collect();
    if format == "json" {
        let doc = json!({"probe_version": env!("CARGO_PKG_VERSION"), "protocol": protocol::PROTOCOL, "workloads": items});
        println!("{}", serde_json::to_string_pretty(&doc).unwrap());
    } else {
        for w in catalogue {
            let about = w.about();
            println!("{:<24} {}", about.name, about.description);
        }
    }
}

fn main() {
    let catalogue = workloads::all();
    let matches = command(&catalogue).get_matches();
    let (name, sub) = matches.subcommand().expect("subcommand is required");
    let format = sub
        .try_get_one::<String>("format")
        .ok()
        .flatten()
        .map(String::as_str)
        .unwrap_or("console");
    if name == "list" {
        list(&catalogue, format);
        return;
    }
    let w = catalogue
        .iter()
        .find(|w| w.about().name == name)
        .expect("clap only accepts known workloads");
    let about = w.about();
    let checking = sub.get_flag("check");
    let as_json = checking && format != "console";
    let given: BTreeMap<String, String> = about
        .options
        .iter()
        .filter_map(|o| {
            sub.get_one::<String>(o.name)
                .map(|v| (o.name.to_string(), v.clone()))
        })
        .collect();
    let opts = Options::parse(about.options, given)
        .unwrap_or_else(|e| fail(name, as_json, &e.to_string()));
    if let Err(msg) = w.check(&opts) {
        fail(name, as_json, &msg.to_string());
    }
    if checking {
        if format != "console" {
            println!("{}", protocol::checked(None));
        }
        return;
    }
    let mut said = Said::default();
    if format == "android" {
        match w.run_android(&opts, &mut said) {
            Some(Ok(mut doc)) => {
                doc.as_object_mut()
                    .expect("the Android document is an object")
                    .insert("benchlab".into(), said.to_json());
                println!("{}", serde_json::to_string_pretty(&doc).unwrap());
            }
            Some(Err(msg)) => fail(name, as_json, &msg.to_string()),
            None => fail(
                name,
                as_json,
                "--format android is only for the latency workloads (ipc.*.latency)",
            ),
        }
        return;
    }
    match w.run(&opts, &mut said) {
        Ok(entries) => {
            let ctx = report::Context {
                workload: about.name.into(),
                workload_version: about.version,
                said: said.to_json(),
            };
            if format == "json" {
                println!("{}", report::to_json(&ctx, &entries));
            } else {
                said.print(name);
                print!("{}", report::to_console(&entries));
            }
        }
        Err(msg) => fail(name, as_json, &msg.to_string()),
    }
}

/// A failure: one human line on stderr and, for `--check` in a JSON format, the reason as a field on stdout.
fn fail(name: &str, as_json: bool, msg: &str) -> ! {
    if as_json {
        println!("{}", protocol::checked(Some(msg)));
    }
    eprintln!("benchlab-probe {name}: {msg}");
    std::process::exit(1);
}
