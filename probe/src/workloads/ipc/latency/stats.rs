//! One half's numbers (SCHED_OTHER or SCHED_FIFO calls) over one or more pairs,
//! from the exact samples.

use crate::timing::percentile;

pub struct Half {
    pub sorted: Vec<u64>,
    pub same_cpu: u64,
    deadline_ns: u64,
}

impl Half {
    pub fn new(samples: impl Iterator<Item = u64>, same_cpu: u64, deadline_ns: u64) -> Half {
        let mut sorted: Vec<u64> = samples.collect();
        sorted.sort_unstable();
        Half {
            sorted,
            same_cpu,
            deadline_ns,
        }
    }
    pub fn n(&self) -> u64 {
        self.sorted.len() as u64
    }
    pub fn misses(&self) -> u64 {
        self.n() - self.sorted.partition_point(|&ns| ns <= self.deadline_ns) as u64
    }
    pub fn mean(&self) -> f64 {
        self.sorted.iter().sum::<u64>() as f64 / self.n().max(1) as f64
    }
    pub fn meet_ratio(&self) -> f64 {
        1.0 - self.misses() as f64 / self.n().max(1) as f64
    }
    pub fn best(&self) -> u64 {
        *self.sorted.first().unwrap_or(&0)
    }
    pub fn worst(&self) -> u64 {
        *self.sorted.last().unwrap_or(&0)
    }
    pub fn quantiles(&self) -> [(&'static str, f64); 4] {
        [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)]
            .map(|(k, q)| (k, percentile(&self.sorted, q)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misses_count_samples_over_the_deadline() {
        let half = Half::new([100, 2500, 2501, 9000].into_iter(), 4, 2500);
        assert_eq!(half.misses(), 2);
        assert_eq!(half.meet_ratio(), 0.5);
        assert_eq!((half.best(), half.worst()), (100, 9000));
    }
}
