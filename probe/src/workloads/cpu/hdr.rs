//! cpu.hdr: tone mapping of a high-dynamic-range scene (a sky with a sun a thousand times
//! brighter than the shadows) to 8-bit: log-average luminance, Reinhard's global operator
//! with a white point, colour preserved through the luminance ratio, gamma 2.2.
//!
//! Written by hand: the operator is a few lines of float arithmetic over every pixel, which
//! is what this workload measures. Each round checks that the mapping keeps the order of
//! sampled luminances and lands the average within a normal exposure.

use super::{fold, Task};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

pub struct Hdr;

const WIDTH: usize = 1024;
const HEIGHT: usize = 768;

fn luminance(p: &[f32]) -> f32 {
    0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2]
}

impl Task for Hdr {
    type Input = Vec<f32>; // RGB radiance, row-major
    type Scratch = Vec<u8>;
    const NAME: &'static str = "cpu.hdr";
    const SECTION: &'static str = "floating_point";
    const DESCRIPTION: &'static str =
        "Reinhard tone mapping of a 1024x768 HDR scene with a 1000:1 sun (work: pixels)";
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 8;
    const WORK_UNIT: &'static str = "pixels";

    fn prepare(&self, seed: u64) -> Vec<f32> {
        let mut rng = Pcg64::seed_from_u64(seed);
        let (sx, sy) = (
            rng.random_range(100.0..900.0f32),
            rng.random_range(50.0..300.0f32),
        );
        let mut out = Vec::with_capacity(WIDTH * HEIGHT * 3);
        for y in 0..HEIGHT {
            for x in 0..WIDTH {
                let (fx, fy) = (x as f32, y as f32);
                let sun = 1000.0 * (-((fx - sx).powi(2) + (fy - sy).powi(2)) / 400.0).exp();
                let sky = if fy < 400.0 {
                    2.0 + fy / 200.0
                } else {
                    0.05 + 0.3 * ((fx * 0.05).sin() * (fy * 0.03).cos()).abs()
                };
                let grain: f32 = rng.random_range(0.95..1.05);
                out.extend([
                    (sky * 0.8 + sun) * grain,
                    (sky * 0.9 + sun * 0.9) * grain,
                    (sky * 1.2 + sun * 0.7) * grain,
                ]);
            }
        }
        out
    }

    fn scratch(&self, _input: &Vec<f32>) -> Vec<u8> {
        vec![0u8; WIDTH * HEIGHT * 3]
    }

    fn work(&self, _input: &Vec<f32>) -> f64 {
        (WIDTH * HEIGHT) as f64
    }

    fn round(&self, radiance: &Vec<f32>, out: &mut Vec<u8>) -> Result<u64, String> {
        let (key, white) = tone_map(radiance, out);
        check(radiance, out, key, white)
    }
}

/// Reinhard's operator with a white point: the mapped luminance of radiance `p`.
fn map(p: &[f32], key: f32, white: f32) -> f32 {
    let l = luminance(p) * key;
    l * (1.0 + l / (white * white)) / (1.0 + l)
}

/// Maps the radiance to 8-bit sRGB-like values in `out`; returns the key and white point.
fn tone_map(radiance: &[f32], out: &mut [u8]) -> (f32, f32) {
    let pixels = radiance.len() / 3;
    let log_sum: f64 = radiance
        .chunks_exact(3)
        .map(|p| (1e-4 + luminance(p) as f64).ln())
        .sum();
    let key = 0.18 / (log_sum / pixels as f64).exp() as f32;
    let white = radiance
        .chunks_exact(3)
        .map(luminance)
        .fold(0.0f32, f32::max)
        * key;
    for (p, o) in radiance.chunks_exact(3).zip(out.chunks_exact_mut(3)) {
        let ratio = map(p, key, white) / luminance(p).max(1e-9);
        for c in 0..3 {
            o[c] = (255.0 * (p[c] * ratio).clamp(0.0, 1.0).powf(1.0 / 2.2)).round() as u8;
        }
    }
    (key, white)
}

/// The mapped image must be normally exposed and the operator at this key and white point
/// must keep the order of sampled luminances; returns a checksum of the image.
fn check(radiance: &[f32], out: &[u8], key: f32, white: f32) -> Result<u64, String> {
    let pixels = radiance.len() / 3;
    let mean = out.iter().map(|v| *v as f64).sum::<f64>() / out.len() as f64;
    if !(40.0..=215.0).contains(&mean) {
        return Err(format!(
            "the mapped image is badly exposed (mean {mean:.0} of 255)"
        ));
    }
    for k in 0..256 {
        let (a, b) = ((k * 7919) % pixels, (k * 104_729 + 13) % pixels);
        let (pa, pb) = (&radiance[3 * a..3 * a + 3], &radiance[3 * b..3 * b + 3]);
        if luminance(pa) < luminance(pb) && map(pa, key, white) > map(pb, key, white) {
            return Err("tone mapping reversed the order of two luminances".into());
        }
    }
    Ok(fold(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_passes_and_a_badly_mapped_image_is_caught() {
        let radiance = Hdr.prepare(1);
        let mut out = Hdr.scratch(&radiance);
        let sum = Hdr.round(&radiance, &mut out).unwrap();
        assert_ne!(Hdr.round(&Hdr.prepare(2), &mut out), Ok(sum));
        let (key, white) = tone_map(&radiance, &mut out);
        assert_eq!(check(&radiance, &out, key, white), Ok(sum));
        // two stops under-exposed
        let dark: Vec<u8> = out.iter().map(|v| v / 4).collect();
        assert!(check(&radiance, &dark, key, white)
            .unwrap_err()
            .contains("badly exposed"));
        // the upper half of the image never written
        let mut half = out.clone();
        half[..out.len() / 2].fill(0);
        assert!(check(&radiance, &half, key, white).is_err());
        // a key of the wrong sign: the operator no longer keeps the order of luminances
        assert!(check(&radiance, &out, -key, white)
            .unwrap_err()
            .contains("reversed the order"));
    }
}
