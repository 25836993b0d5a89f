//! A whole run: every pair forked (server, then client), started at once
//! through a gate, its results read from the client's pipe and both reaped;
//! then the priority-inheritance check.

use super::super::channel::{shared_word, with_spin, Gate};
use super::super::inheritance::{self, set_policy};
use super::super::tracing::Tracer;
use super::super::{pin, placement_cpus, Ledger};
use super::config::Config;
use super::ends::{describe, serve, Client};
use super::wire::PairResult;
use super::Latency;
use crate::protocol::{Inheritance, Said};
use crate::workload::{failed, refused, WorkloadError};
use crate::workloads::children::{fork_with, pipe, reap};
use std::io::{Read, Write};

/// Whether this process may make SCHED_FIFO calls; Err says why not.
fn fifo_permitted(priority: i32) -> Result<(), WorkloadError> {
    set_policy(libc::SCHED_FIFO, priority).map_err(|e| {
        refused!(
            "no real-time privilege ({e}); run as root or grant CAP_SYS_NICE or an RLIMIT_RTPRIO"
        )
    })?;
    set_policy(libc::SCHED_OTHER, 0)
}

/// Every pair's result and why the SCHED_FIFO half was skipped, if it was.
pub struct Outcome {
    pub pairs: Vec<PairResult>,
    pub fifo_skipped: Option<String>,
}

impl Latency {
    /// Runs the pairs; what the run could not do and the inheritance check go to `said`.
    pub(super) fn measure(
        &self,
        opts: &crate::workload::Options,
        said: &mut Said,
    ) -> Result<(Config, Outcome), WorkloadError> {
        let config = Config::parse(opts)?;
        if let (Some(why), 2..) = (self.mechanism.one_pair, config.pairs) {
            return Err(refused!(
                "{} runs at most 1 pair(s) at once: {why}",
                self.mechanism.name
            ));
        }
        let fifo_skipped = fifo_permitted(config.fifo_priority)
            .err()
            .map(|why| format!("the SCHED_FIFO half was skipped: {why}"));
        if let Some(why) = &fifo_skipped {
            said.note("fifo_skipped", why.clone());
        }
        let tracer = match config.trace.then(Tracer::start) {
            Some(Ok(tracer)) => Some(tracer),
            Some(Err(why)) => {
                said.note("trace_unavailable", format!("--trace: {why}"));
                None
            }
            None => None,
        };
        let pairs = self.run_pairs(&config, fifo_skipped.is_none(), tracer.as_ref())?;
        if let Some(stopped) = tracer.as_ref().and_then(Tracer::stopped) {
            said.note("trace_stopped", stopped);
        }
        said.inheritance = match (config.inheritance, &fifo_skipped) {
            ("off", _) => None,
            (lock, Some(_)) => Some(skipped(
                lock,
                &config,
                "skipped: no real-time privilege".into(),
            )),
            (lock, None) => Some(match inheritance::check(lock, config.fifo_priority) {
                Ok(f) => Inheritance {
                    lock,
                    verdict: if f.holder_priority.is_some() {
                        "PASS"
                    } else {
                        "FAIL"
                    },
                    holder_priority: f.holder_priority,
                    waiter_priority: config.fifo_priority,
                    text: f.text,
                },
                Err(why) => skipped(lock, &config, why.to_string()),
            }),
        };
        if let Some(Inheritance {
            verdict: "SKIPPED",
            text,
            ..
        }) = &said.inheritance
        {
            let text = format!("priority-inheritance check: {text}");
            said.note("inheritance_skipped", text);
        }
        Ok((
            config,
            Outcome {
                pairs,
                fifo_skipped,
            },
        ))
    }

    fn run_pairs(
        &self,
        config: &Config,
        fifo: bool,
        tracer: Option<&Tracer>,
    ) -> Result<Vec<PairResult>, WorkloadError> {
        let placement = placement_cpus(config.placement, config.pairs)?;
        let (start, missed) = (Gate::new()?, shared_word()?);
        let ledger = Ledger::new()?;
        let halves = if fifo { 2 } else { 1 };
        let mut children = Vec::new(); // (client, server, results pipe)
        for pair in 0..config.pairs {
            let cpus = placement.as_ref().map(|p| p[pair]);
            let (client, server) = (self.mechanism.make)(config.payload)?;
            let (client, server) = (
                with_spin(client, config.spin_us),
                with_spin(server, config.spin_us),
            );
            let (server_pid, client) = fork_with(
                &format!("{} P{pair} server", self.name),
                server,
                client,
                |mut server| {
                    cpus.map_or(Ok(()), |(_, cpu)| pin(cpu))?;
                    if config.verbose {
                        describe(self.name, pair, "server");
                    }
                    serve(server.as_mut(), config, halves, &ledger, pair)
                },
            )?;
            let (results, to_parent) = pipe()?;
            let mut client_state = Client {
                name: self.name,
                mechanism: self.mechanism.name,
                config,
                pair,
                missed,
                tracer,
                request: vec![0u8; config.payload],
                reply: vec![0u8; config.payload],
            };
            let (client_pid, results) = fork_with(
                &format!("{} P{pair} client", self.name),
                (client, to_parent),
                results,
                |(mut channel, mut to_parent)| {
                    cpus.map_or(Ok(()), |(cpu, _)| pin(cpu))?;
                    if config.verbose {
                        describe(self.name, pair, "client");
                    }
                    start.wait();
                    let result = client_state.run(channel.as_mut(), server_pid, fifo, &ledger)?;
                    to_parent
                        .write_all(&result.to_bytes())
                        .map_err(|e| WorkloadError::io("sending the results", e))
                },
            )?;
            children.push((client_pid, server_pid, results));
        }
        start.open();
        let mut pairs = Vec::new();
        let mut failure = None;
        for (client, server, mut results) in children {
            let mut bytes = Vec::new();
            let read = results.read_to_end(&mut bytes);
            let ended = reap(client, "client");
            if ended.is_err() || read.is_err() {
                // SAFETY: killing our own child, which may wait forever for a client that is gone.
                unsafe { libc::kill(server, libc::SIGKILL) };
            }
            let served = reap(server, "server");
            match (ended, served, PairResult::from_bytes(&bytes)) {
                (Ok(()), Ok(()), Some(result)) => pairs.push(result),
                (Err(e), _, _) | (_, Err(e), _) => failure = failure.or(Some(e.into())),
                (_, _, None) => {
                    failure = failure.or(Some(failed!("a client's results arrived incomplete")))
                }
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(pairs),
        }
    }
}

fn skipped(lock: &'static str, config: &Config, why: String) -> Inheritance {
    Inheritance {
        lock,
        verdict: "SKIPPED",
        holder_priority: None,
        waiter_priority: config.fifo_priority,
        text: why,
    }
}
