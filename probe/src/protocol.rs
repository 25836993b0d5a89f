//! What benchlab reads from the probe besides the measurements, as JSON fields:
//! the notes a run wants its reader to see (a half it skipped, tracing it could
//! not start), the priority-inheritance result and why options cannot run here. They ride
//! in the output document (`context.benchlab` in Google Benchmark JSON, `benchlab`
//! in the Android latency JSON, `benchlab` alone as the answer of `--check`) with
//! a protocol version that benchlab checks, so that the human lines on stderr are
//! free to change.

use crate::histogram::{Histogram, PER_OCTAVE};
use serde_json::{json, Map, Value};

/// Bumped whenever a field below changes meaning or shape; benchlab refuses any other.
pub const PROTOCOL: u32 = 1;

/// Something a run could not do and says so; `topic` is for programs, `text` for people.
pub struct Note {
    pub topic: &'static str,
    pub text: String,
}

/// The priority-inheritance check of a latency run.
pub struct Inheritance {
    /// pi or plain: the lock the check used
    pub lock: &'static str,
    /// PASS (the holder ran at the waiter's real-time priority), FAIL (it did not: the
    /// inversion), SKIPPED (no real-time privilege, or the check could not block the waiter)
    pub verdict: &'static str,
    /// the real-time priority the holder ran at while the waiter waited; None: not boosted
    pub holder_priority: Option<i64>,
    /// the SCHED_FIFO waiter's priority
    pub waiter_priority: i32,
    pub text: String,
}

/// Everything a run says besides its entries.
#[derive(Default)]
pub struct Said {
    pub notes: Vec<Note>,
    pub inheritance: Option<Inheritance>,
    /// memory.app_cycle: every launch, as columns (one list per field)
    pub launches: Option<Value>,
    /// memory.app_cycle: what reclaim ran under (MGLRU, swappiness, zram)
    pub reclaim: Option<Value>,
    /// memory.app_cycle: each app's own memory cgroup's figures, as columns
    pub apps: Option<Value>,
    /// IPC runs timing each transaction: per benchmark entry (named as its metrics are), the
    /// histogram of every sample on the fixed grid of `histogram`
    pub histograms: Vec<(String, Histogram)>,
}

impl Said {
    pub fn note(&mut self, topic: &'static str, text: String) {
        self.notes.push(Note { topic, text });
    }

    pub fn to_json(&self) -> Value {
        let notes: Vec<Value> = self
            .notes
            .iter()
            .map(|n| json!({"topic": n.topic, "text": n.text}))
            .collect();
        let inheritance = self.inheritance.as_ref().map(|i| {
            json!({
                "lock": i.lock, "verdict": i.verdict, "holder_priority": i.holder_priority,
                "waiter_priority": i.waiter_priority, "text": i.text,
            })
        });
        let mut doc = json!({"protocol": PROTOCOL, "notes": notes, "inheritance": inheritance});
        if let Some(launches) = &self.launches {
            doc["launches"] = launches.clone();
        }
        if let Some(reclaim) = &self.reclaim {
            doc["reclaim"] = reclaim.clone();
        }
        if let Some(apps) = &self.apps {
            doc["apps"] = apps.clone();
        }
        if !self.histograms.is_empty() {
            let of: Map<String, Value> = self
                .histograms
                .iter()
                .map(|(name, h)| (name.clone(), h.to_json()))
                .collect();
            doc["histograms"] = json!({"per_octave": PER_OCTAVE, "unit": "ns", "of": of});
        }
        doc
    }

    /// The same, for a person reading the console table.
    pub fn print(&self, workload: &str) {
        for note in &self.notes {
            eprintln!("benchlab-probe: note: {workload}: {}", note.text);
        }
        if let Some(i) = &self.inheritance {
            eprintln!(
                "benchlab-probe: {workload}: priority inheritance {}: {}",
                i.verdict, i.text
            );
        }
    }
}

/// The answer of `--check` in a JSON format: `error` is why these options cannot run here, null when they can.
pub fn checked(error: Option<&str>) -> Value {
    json!({"benchlab": {"protocol": PROTOCOL, "error": error}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_document_names_its_protocol() {
        let mut said = Said::default();
        said.note("trace", "no tracefs".into());
        let doc = said.to_json();
        assert_eq!(doc["protocol"], PROTOCOL);
        assert_eq!(doc["notes"][0]["topic"], "trace");
        assert!(doc["inheritance"].is_null());
        assert_eq!(checked(Some("x"))["benchlab"]["error"], "x");
        assert!(checked(None)["benchlab"]["error"].is_null());
        assert!(doc.get("histograms").is_none());
    }

    #[test]
    fn histograms_go_by_their_benchmark_with_the_grid() {
        let mut said = Said::default();
        let h = Histogram::of(&[1000, 2000]).unwrap();
        said.histograms.push(("ipc.pipe.latency/other".into(), h));
        let doc = said.to_json();
        assert_eq!(doc["histograms"]["per_octave"], 8);
        assert_eq!(doc["histograms"]["unit"], "ns");
        assert_eq!(
            doc["histograms"]["of"]["ipc.pipe.latency/other"]["first"],
            79
        );
    }
}
