//! The two output shapes of a run: Google Benchmark entries (one per half over
//! all pairs) and the Android test's JSON (`cfg`, `P<i>` per pair, `ALL`,
//! `inheritance`).

use super::config::Config;
use super::pairs::Outcome;
use super::stats::Half;
use super::wire::PairResult;
use crate::histogram::Histogram;
use crate::protocol::Said;
use crate::report::{Counter, Direction, Entry};
use crate::workload::Digest;
use serde_json::{json, Map, Value};

impl Outcome {
    fn halves(&self, config: &Config, pairs: &[&PairResult]) -> (Half, Option<Half>) {
        let other = Half::new(
            pairs.iter().flat_map(|p| p.other.iter().copied()),
            pairs.iter().map(|p| p.same_cpu_other).sum(),
            config.deadline_ns,
        );
        let fifo = self.fifo_skipped.is_none().then(|| {
            Half::new(
                pairs.iter().flat_map(|p| p.fifo.iter().copied()),
                pairs.iter().map(|p| p.same_cpu_fifo).sum(),
                config.deadline_ns,
            )
        });
        (other, fifo)
    }

    /// Google Benchmark entries `<name>/other` and, where it ran, `<name>/fifo`, each with
    /// the histogram of its samples in `said` under the entry's name.
    pub fn entries(&self, name: &str, config: &Config, said: &mut Said) -> Vec<Entry> {
        let all: Vec<&PairResult> = self.pairs.iter().collect();
        let (other, fifo) = self.halves(config, &all);
        let transactions = other.n() + fifo.as_ref().map_or(0, Half::n);
        let per = |total: Option<u64>| total.map(|t| t as f64 / transactions.max(1) as f64);
        // each half's own CPU time per transaction of it; migrations are counted over both halves
        let on_cpu = |half: &Half, ns: fn(&PairResult) -> u64| {
            Some(all.iter().map(|p| ns(p)).sum::<u64>() as f64 / half.n().max(1) as f64)
        };
        let migrations = per(all.iter().map(|p| p.migrations).sum());
        let mut entries = vec![entry(
            &other,
            format!("{name}/other"),
            on_cpu(&other, |p| p.cpu_other_ns),
            migrations,
            vec![],
        )];
        keep_histogram(said, &entries[0].name, &other);
        if let Some(fifo) = fifo {
            let inheritance: Vec<Counter> = match &said.inheritance {
                Some(i) if i.verdict != "SKIPPED" => {
                    vec![Counter::new(
                        "priority_inheritance",
                        i.holder_priority.is_some() as u64 as f64,
                        "bool",
                        Direction::None,
                    )]
                }
                _ => vec![],
            };
            entries.push(entry(
                &fifo,
                format!("{name}/fifo"),
                on_cpu(&fifo, |p| p.cpu_fifo_ns),
                migrations,
                inheritance,
            ));
            keep_histogram(said, &entries[1].name, &fifo);
        }
        entries
    }

    /// The Android test's document.
    pub fn android(&self, mechanism: &str, config: &Config, said: &Said) -> Value {
        let mut doc = Map::new();
        doc.insert(
            "cfg".into(),
            json!({
                "pair": config.pairs, "iterations": config.iterations, "deadline_us": config.deadline_ns / 1000,
                "mechanism": mechanism, "payload": config.payload, "placement": config.placement,
                "spin_us": config.spin_us, "fifo_priority": config.fifo_priority,
            }),
        );
        for (i, pair) in self.pairs.iter().enumerate() {
            let (other, fifo) = self.halves(config, &[pair]);
            doc.insert(
                format!("P{i}"),
                android_group(&other, fifo.as_ref(), &self.fifo_skipped),
            );
        }
        let all: Vec<&PairResult> = self.pairs.iter().collect();
        let (other, fifo) = self.halves(config, &all);
        doc.insert(
            "ALL".into(),
            android_group(&other, fifo.as_ref(), &self.fifo_skipped),
        );
        doc.insert(
            "inheritance".into(),
            json!(said.inheritance.as_ref().map_or("OFF", |i| i.verdict)),
        );
        Value::Object(doc)
    }
}

/// A half's histogram, under its entry's name, when it has samples.
fn keep_histogram(said: &mut Said, name: &str, half: &Half) {
    if let Some(histogram) = Histogram::of(&half.sorted) {
        said.histograms.push((name.to_string(), histogram));
    }
}

fn entry(
    half: &Half,
    name: String,
    on_cpu_per_transaction: Option<f64>,
    migrations: Option<f64>,
    extra: Vec<Counter>,
) -> Entry {
    let n = half.n();
    let mut counters: Vec<Counter> = half
        .quantiles()
        .iter()
        .map(|(k, v)| Counter::new(&k.replace('.', "_"), *v, "ns", Direction::Lower))
        .collect();
    counters.push(Counter::new(
        "worst",
        half.worst() as f64,
        "ns",
        Direction::Lower,
    ));
    counters.push(Counter::new(
        "best",
        half.best() as f64,
        "ns",
        Direction::Lower,
    ));
    counters.push(Counter::new(
        "misses",
        half.misses() as f64,
        "count",
        Direction::Lower,
    ));
    counters.push(Counter::new(
        "meet_ratio",
        half.meet_ratio(),
        "ratio",
        Direction::Higher,
    ));
    counters.push(Counter::new(
        "same_cpu_ratio",
        half.same_cpu as f64 / n.max(1) as f64,
        "ratio",
        Direction::None,
    ));
    if let Some(m) = migrations {
        counters.push(Counter::new("migrations", m, "count", Direction::None));
    }
    counters.extend(extra);
    let mut digest = Digest::new();
    digest.word(n);
    Entry {
        name,
        iterations: n,
        threads: 1,
        real_time_ns: half.mean(),
        cpu_time_ns: on_cpu_per_transaction.unwrap_or_default(),
        items_per_second: None,
        bytes_per_second: None,
        counters,
        checksum: digest.hex(),
    }
}

/// Android's `other_ms` / `fifo_ms` object (with the percentiles added).
fn android_times(half: &Half) -> Value {
    let ms = |ns: f64| (ns / 1e6 * 1e6).round() / 1e6; // ms to the nanosecond
    let mut m = Map::new();
    m.insert("avg".into(), json!(ms(half.mean())));
    m.insert("wst".into(), json!(ms(half.worst() as f64)));
    m.insert("bst".into(), json!(ms(half.best() as f64)));
    m.insert("miss".into(), json!(half.misses()));
    m.insert("meetR".into(), json!(half.meet_ratio()));
    for (k, v) in half.quantiles() {
        m.insert(k.into(), json!(ms(v)));
    }
    Value::Object(m)
}

/// Android's per-pair (or ALL) object: SYNC, S, I, R and the two halves.
fn android_group(other: &Half, fifo: Option<&Half>, fifo_skipped: &Option<String>) -> Value {
    let checked = other.n() + fifo.map_or(0, Half::n);
    let same = other.same_cpu + fifo.map_or(0, |f| f.same_cpu);
    let mut m = Map::new();
    m.insert(
        "SYNC".into(),
        json!(if same == checked { "GOOD" } else { "POOR" }),
    );
    m.insert("S".into(), json!(same));
    m.insert("I".into(), json!(checked));
    m.insert("R".into(), json!(same as f64 / checked.max(1) as f64));
    m.insert("other_ms".into(), android_times(other));
    m.insert(
        "fifo_ms".into(),
        match (fifo, fifo_skipped) {
            (Some(f), _) => android_times(f),
            (None, reason) => json!({ "skipped": reason.clone().unwrap_or_default() }),
        },
    );
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn android_times_are_in_milliseconds() {
        let half = Half::new([100, 2500, 2501, 9000].into_iter(), 4, 2500);
        let android = android_times(&half);
        assert_eq!(android["miss"], 2);
        assert_eq!(android["wst"], 0.009);
        assert_eq!(android["bst"], 0.0001);
    }
}
