//! A latency histogram of every sample of a run on one fixed grid, so that runs and
//! variants add up by adding counts: bucket k holds the samples in
//! [2^(k/8), 2^((k+1)/8)) ns, eight buckets an octave (each about 9% wide), 512 in all
//! up to 2^64. A sample of 0 ns (a clock that did not advance) counts in bucket 0;
//! below 11 ns some buckets hold no integer and stay empty.
//!
//! Written by hand rather than with a histogram crate (hdrhistogram) because its
//! buckets are linear inside an octave and its serialised form is a compressed blob
//! benchlab would have to decode in Python: this grid is log-spaced (even on a log axis)
//! and sent as the first bucket and the counts from there to the last non-empty one,
//! a few hundred bytes for a run. The bounds are exact integers: a bucket's lowest
//! sample is the least x with x^8 >= 2^k, tested on the exact power (`power_bits`),
//! never on a rounded logarithm.

use serde_json::{json, Value};
use std::sync::OnceLock;

/// Buckets per octave (a factor of two): the grid's one parameter, sent with every histogram.
pub const PER_OCTAVE: u32 = 8;
/// Buckets of the grid: every u64 falls in one.
pub const BUCKETS: usize = 64 * PER_OCTAVE as usize;

/// One run's (or one half's) samples counted per bucket: `counts[i]` is bucket `first + i`.
pub struct Histogram {
    pub first: usize,
    pub counts: Vec<u64>,
}

/// The number of bits of x^8, computed exactly on 64-bit limbs (x^8 has up to 512 bits).
fn power_bits(x: u64) -> u32 {
    let mut limbs: Vec<u64> = vec![1];
    for _ in 0..PER_OCTAVE {
        let mut carry: u128 = 0;
        for limb in limbs.iter_mut() {
            let product = *limb as u128 * x as u128 + carry;
            *limb = product as u64;
            carry = product >> 64;
        }
        if carry > 0 {
            limbs.push(carry as u64);
        }
    }
    while limbs.len() > 1 && limbs[limbs.len() - 1] == 0 {
        limbs.pop();
    }
    let top = limbs[limbs.len() - 1];
    64 * (limbs.len() as u32 - 1) + (64 - top.leading_zeros())
}

/// Each bucket's lowest sample: the least integer x with x >= 2^(k/8), i.e. x^8 >= 2^k,
/// i.e. x^8 has more than k bits. Found from the float estimate, then moved to the exact one.
fn lows() -> &'static [u64; BUCKETS] {
    static LOWS: OnceLock<[u64; BUCKETS]> = OnceLock::new();
    LOWS.get_or_init(|| {
        let mut lows = [0u64; BUCKETS];
        for (k, low) in lows.iter_mut().enumerate() {
            let at_least = |x: u64| power_bits(x) as usize > k;
            let mut x = (2f64.powf(k as f64 / PER_OCTAVE as f64).ceil() as u64).max(1);
            while !at_least(x) {
                x += 1;
            }
            while x > 1 && at_least(x - 1) {
                x -= 1;
            }
            *low = x;
        }
        lows
    })
}

/// The bucket a sample of `ns` falls in.
pub fn bucket(ns: u64) -> usize {
    lows().partition_point(|&low| low <= ns).saturating_sub(1)
}

impl Histogram {
    /// The histogram of `samples`, in any order; None for no samples.
    pub fn of(samples: &[u64]) -> Option<Histogram> {
        let mut all = [0u64; BUCKETS];
        for &ns in samples {
            all[bucket(ns)] += 1;
        }
        let first = all.iter().position(|&c| c > 0)?;
        let last = all.iter().rposition(|&c| c > 0)?;
        Some(Histogram {
            first,
            counts: all[first..=last].to_vec(),
        })
    }

    pub fn to_json(&self) -> Value {
        json!({"first": self.first, "counts": self.counts})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::percentile;

    impl Histogram {
        fn n(&self) -> u64 {
            self.counts.iter().sum()
        }

        /// The bucket holding the nearest-rank q-quantile (the rank `timing::percentile` takes).
        fn quantile_bucket(&self, q: f64) -> usize {
            let n = self.n();
            let rank = ((q * n as f64).ceil() as u64).clamp(1, n.max(1));
            let mut seen = 0;
            for (i, &c) in self.counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return self.first + i;
                }
            }
            self.first + self.counts.len() - 1
        }
    }

    #[test]
    fn powers_of_two_open_their_octave() {
        for e in 0..64u32 {
            assert_eq!(bucket(1u64 << e), (e * PER_OCTAVE) as usize, "2^{e}");
        }
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 0);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn bounds_are_exact_where_floats_are_not() {
        // 2^(1/8) = 1.0905..: 1 is below it, 2 above; 2^(10 + 3/8) = 1327.6..: 1327 and 1328 straddle it
        assert_eq!((bucket(1), bucket(2)), (0, 8));
        assert_eq!((bucket(1327), bucket(1328)), (82, 83));
        // every bound x: x^8 >= 2^k > (x - 1)^8, checked on exact powers; below 11 ns a bucket
        // may hold no integer (2^(1/8) .. 2^(2/8)), then it shares its bound with the next
        let lows = lows();
        for (k, &low) in lows.iter().enumerate() {
            assert!(power_bits(low) as usize > k, "bucket {k} starts at {low}");
            assert!(bucket(low) >= k);
            if low > 1 {
                assert!(
                    power_bits(low - 1) as usize <= k,
                    "bucket {k} could start below {low}"
                );
                assert!(bucket(low - 1) < k);
            }
            if lows.get(k + 1).is_none_or(|&next| next > low) {
                assert_eq!(bucket(low), k);
            }
        }
        assert_eq!(lows[1..=8], [2; 8]);
        assert!(lows.windows(2).skip(28).all(|w| w[1] > w[0]));
    }

    #[test]
    fn power_bits_counts_the_exact_power() {
        assert_eq!(power_bits(1), 1);
        assert_eq!(power_bits(2), 9); // 256
        assert_eq!(power_bits(3), 13); // 6561
        assert_eq!(power_bits(u64::MAX), 512);
    }

    #[test]
    fn counts_add_up_and_quantiles_land_in_their_bucket() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut samples: Vec<u64> = (0..20_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                2_000 + (state % 1_000) * (state % 97) + (state >> 44) % 3 * 1_000_000
            })
            .collect();
        let histogram = Histogram::of(&samples).unwrap();
        assert_eq!(histogram.n(), samples.len() as u64);
        assert!(histogram.counts[0] > 0 && *histogram.counts.last().unwrap() > 0);
        samples.sort_unstable();
        assert_eq!(histogram.first, bucket(samples[0]));
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let exact = percentile(&samples, q) as u64;
            assert_eq!(histogram.quantile_bucket(q), bucket(exact), "q = {q}");
        }
    }

    #[test]
    fn known_samples_land_in_known_buckets() {
        let histogram = Histogram::of(&[1000, 1000, 1100, 2000, 4096]).unwrap();
        // 1000 ns: 8 log2(1000) = 79.7; 1100: 80.8; 2000: 87.7; 4096: exactly 96
        assert_eq!(histogram.first, 79);
        let mut expected = vec![0u64; 96 - 79 + 1];
        expected[0] = 2;
        expected[80 - 79] = 1;
        expected[87 - 79] = 1;
        expected[96 - 79] = 1;
        assert_eq!(histogram.counts, expected);
        assert_eq!(
            histogram.to_json(),
            json!({"first": 79, "counts": expected})
        );
        assert!(Histogram::of(&[]).is_none());
    }
}
