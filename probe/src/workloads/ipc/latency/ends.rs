//! The two ends of a pair: the server's loop and the client's timed transactions.

use super::super::channel::Channel;
use super::super::inheritance::set_policy;
use super::super::tracing::Tracer;
use super::super::{current_cpu, migrations_of, thread_cpu_ns, Ledger};
use super::config::Config;
use super::wire::{read_u32, read_u64, write_u32, PairResult, HEADER};
use crate::workload::{failed, WorkloadError};
use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

fn policy_name() -> String {
    // SAFETY: reading the calling thread's own policy and parameters.
    let (policy, priority) = unsafe {
        let mut param: libc::sched_param = std::mem::zeroed();
        libc::sched_getparam(0, &mut param);
        (libc::sched_getscheduler(0), param.sched_priority)
    };
    match policy {
        libc::SCHED_FIFO => format!("SCHED_FIFO/{priority}"),
        libc::SCHED_RR => format!("SCHED_RR/{priority}"),
        libc::SCHED_OTHER => "SCHED_OTHER".into(),
        other => format!("policy {other}"),
    }
}

/// `--verbose`: who this process is and where it runs, for a person (Android's -v).
pub fn describe(name: &str, pair: usize, role: &str) {
    // SAFETY: getpid and gettid have no preconditions.
    let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
    let line = format!(
        "{name} P{pair} {role}: pid {pid} tid {tid} CPU {} {}\n",
        current_cpu(),
        policy_name()
    );
    let _ = std::io::stderr().write_all(line.as_bytes()); // one write: lines of several processes stay whole
}

/// The ledger slots of a pair's server: its CPU time in the SCHED_OTHER half, then in the
/// SCHED_FIFO half.
pub fn ledger_slots(pair: usize) -> [usize; 2] {
    [2 * pair, 2 * pair + 1]
}

/// The server: checks each request's sequence, stamps its CPU, adds one to
/// every payload byte. Its CPU time over the timed iterations, per half (each
/// message is charged from the end of the one before it, its wake-up
/// included), goes to the ledger just before the last reply.
pub fn serve(
    channel: &mut dyn Channel,
    config: &Config,
    halves: u64,
    ledger: &Ledger,
    pair: usize,
) -> Result<(), WorkloadError> {
    let mut msg = vec![0u8; config.payload];
    let (mut mark, mut cpu) = (thread_cpu_ns(), [0u64; 2]);
    let last = config.warmup + config.iterations - 1;
    for i in 0..=last {
        for half in 0..halves {
            channel.recv(&mut msg)?;
            let seq = 2 * i + half;
            if read_u64(&msg) != seq {
                return Err(failed!(
                    "request {} arrived where {seq} was due",
                    read_u64(&msg)
                ));
            }
            write_u32(&mut msg, 12, current_cpu());
            msg[HEADER..]
                .iter_mut()
                .for_each(|b| *b = b.wrapping_add(1));
            if let Some(delay) = config.delayed(i) {
                std::thread::sleep(delay);
            }
            let timed = i >= config.warmup;
            if i == last && half + 1 == halves {
                cpu[half as usize] += thread_cpu_ns() - mark;
                for (slot, ns) in ledger_slots(pair).into_iter().zip(cpu) {
                    ledger.put(slot, ns);
                }
            }
            channel.send(&msg)?;
            if timed && !(i == last && half + 1 == halves) {
                let now = thread_cpu_ns();
                cpu[half as usize] += now - mark;
                mark = now;
            }
        }
        if i + 1 == config.warmup {
            mark = thread_cpu_ns();
        }
    }
    Ok(())
}

pub struct Client<'a> {
    pub name: &'static str,
    pub mechanism: &'static str,
    pub config: &'a Config,
    pub pair: usize,
    pub missed: &'static AtomicU32, // set by the run's first deadline miss, whichever pair makes it
    pub tracer: Option<&'a Tracer>,
    pub request: Vec<u8>,
    pub reply: Vec<u8>,
}

impl Client<'_> {
    /// One timed transaction: (latency ns, served on the client's CPU).
    fn transact(
        &mut self,
        channel: &mut dyn Channel,
        seq: u64,
        timed: bool,
    ) -> Result<(u64, bool), WorkloadError> {
        self.request[..8].copy_from_slice(&seq.to_le_bytes());
        for (j, b) in self.request[HEADER..].iter_mut().enumerate() {
            *b = (seq as u8).wrapping_mul(31).wrapping_add(j as u8);
        }
        let cpu = current_cpu();
        write_u32(&mut self.request, 8, cpu);
        let start = Instant::now();
        channel.send(&self.request)?;
        channel.recv(&mut self.reply)?;
        let ns = start.elapsed().as_nanos() as u64;
        let intact = read_u64(&self.reply) == seq
            && self.request[HEADER..]
                .iter()
                .zip(&self.reply[HEADER..])
                .all(|(q, r)| q.wrapping_add(1) == *r);
        if !intact {
            return Err(failed!(
                "transaction {seq} over {} came back altered",
                self.mechanism
            ));
        }
        let server_cpu = read_u32(&self.reply, 12);
        if timed && ns > self.config.deadline_ns {
            self.missed(seq, ns, cpu, server_cpu);
        }

        Ok((ns, server_cpu == cpu))
    }

    /// The run's first miss, whichever pair makes it, marks the trace and stops tracing.
    fn missed(&self, seq: u64, ns: u64, cpu: u32, server_cpu: u32) {
        if self.missed.swap(1, Ordering::AcqRel) != 0 {
            return;
        }
        if let Some(tracer) = self.tracer {
            let half = if seq.is_multiple_of(2) {
                "SCHED_OTHER"
            } else {
                "SCHED_FIFO"
            };
            tracer.miss(&format!(
                "{} deadline miss: pair P{} iteration {} {half} {} us > {} us, client CPU {cpu} server CPU {server_cpu}",
                self.name,
                self.pair,
                seq / 2 - self.config.warmup,
                ns / 1000,
                self.config.deadline_ns / 1000
            ));
        }
    }

    pub fn run(
        &mut self,
        channel: &mut dyn Channel,
        server: libc::pid_t,
        fifo: bool,
        ledger: &Ledger,
    ) -> Result<PairResult, WorkloadError> {
        // SAFETY: getpid has no preconditions.
        let pids = [unsafe { libc::getpid() }, server];
        let config = self.config;
        let mut result = PairResult::default();
        let mut moved_before = migrations_of(&pids);
        let mut cpu = [0u64; 2]; // the client's own, per half: each transaction between two reads of its clock
        for i in 0..config.warmup + config.iterations {
            if i == config.warmup {
                moved_before = migrations_of(&pids);
            }
            let timed = i >= config.warmup;
            let before = thread_cpu_ns();
            let (ns, same) = self.transact(channel, 2 * i, timed)?;
            if timed {
                cpu[0] += thread_cpu_ns() - before;
                result.other.push(ns);
                result.same_cpu_other += same as u64;
            }
            if fifo {
                set_policy(libc::SCHED_FIFO, config.fifo_priority)?;
                if config.verbose && i == 0 {
                    describe(self.name, self.pair, "client");
                }
                let before = thread_cpu_ns();
                let (ns, same) = self.transact(channel, 2 * i + 1, timed)?;
                if timed {
                    cpu[1] += thread_cpu_ns() - before;
                }
                set_policy(libc::SCHED_OTHER, 0)?;
                if timed {
                    result.fifo.push(ns);
                    result.same_cpu_fifo += same as u64;
                }
            }
        }
        result.migrations = migrations_of(&pids)
            .zip(moved_before)
            .map(|(a, b)| a.saturating_sub(b));
        let [other, fifo] = ledger_slots(self.pair).map(|slot| ledger.get(slot));
        (result.cpu_other_ns, result.cpu_fifo_ns) = (cpu[0] + other, cpu[1] + fifo);
        Ok(result)
    }
}
