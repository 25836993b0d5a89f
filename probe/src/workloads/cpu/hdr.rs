//! cpu.hdr: tone mapping of a high-dynamic-range scene (a sky with a sun a thousand times
//! brighter than the shadows) to 8-bit: log-average luminance, Reinhard's global operator
//! with a white point, colour preserved through the luminance ratio, gamma 2.2.
//!
//! Written by hand: the operator is a few lines of float arithmetic over every pixel, which
//! is what this workload measures. Each round checks that the average lands within a normal
//! exposure, that the key is the scene's log-average (estimated over every 61st pixel, to
//! 0.5%) and
//! the white point its brightest pixel, that the written pixels keep the order of sampled
//! luminances, and that 4096 sampled written pixels are, to within one level, the operator
//! and gamma recomputed in f64 from their radiance.

use super::{fold, Task};
use crate::workload::{failed, WorkloadError};
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
    const VERSION: u32 = 2;
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

    fn round(&self, radiance: &Vec<f32>, out: &mut Vec<u8>) -> Result<u64, WorkloadError> {
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
    let (key, white) = exposure(radiance);
    write(radiance, out, key, white);
    (key, white)
}

/// The key (scaling the log-average luminance to middle grey) and the white point.
fn exposure(radiance: &[f32]) -> (f32, f32) {
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
    (key, white)
}

/// Writes the radiance mapped at `key` and `white` into `out`.
fn write(radiance: &[f32], out: &mut [u8], key: f32, white: f32) {
    for (p, o) in radiance.chunks_exact(3).zip(out.chunks_exact_mut(3)) {
        let ratio = map(p, key, white) / luminance(p).max(1e-9);
        for c in 0..3 {
            o[c] = (255.0 * (p[c] * ratio).clamp(0.0, 1.0).powf(1.0 / 2.2)).round() as u8;
        }
    }
}

/// Pixels whose written values are recomputed from their radiance.
const SAMPLES: usize = 4096;
/// The subsample of the check's log-average and search for the brightest pixel: every
/// KEY_STEP-th pixel.
const KEY_STEP: usize = 61;
/// The half-width of the window around the subsample's brightest pixel searched fully.
const WINDOW: isize = 48;

/// The linear luminance of a written 8-bit pixel.
fn written_luminance(o: &[u8]) -> f64 {
    let lin = |v: u8| (v as f64 / 255.0).powf(2.2);
    0.2126 * lin(o[0]) + 0.7152 * lin(o[1]) + 0.0722 * lin(o[2])
}

/// The mapped image must be normally exposed; the key must be the scene's log-average
/// (estimated over a subsample) and the white point its brightest pixel; the written pixels
/// must keep the order of sampled luminances; and sampled written pixels must be the
/// operator recomputed in f64 from their radiance, to within one level. Returns a checksum
/// of the image.
fn check(radiance: &[f32], out: &[u8], key: f32, white: f32) -> Result<u64, WorkloadError> {
    let pixels = radiance.len() / 3;
    let mean = out.iter().map(|v| *v as u64).sum::<u64>() as f64 / out.len() as f64;
    if !(40.0..=215.0).contains(&mean) {
        return Err(failed!(
            "the mapped image is badly exposed (mean {mean:.0} of 255)"
        ));
    }
    let lum = |i: usize| {
        let p = &radiance[3 * i..3 * i + 3];
        0.2126 * p[0] as f64 + 0.7152 * p[1] as f64 + 0.0722 * p[2] as f64
    };
    let (mut log_sum, mut n) = (0.0f64, 0usize);
    for i in (0..pixels).step_by(KEY_STEP) {
        log_sum += (1e-4 + lum(i)).ln();
        n += 1;
    }
    let estimate = 0.18 / (log_sum / n as f64).exp();
    if !(key as f64 / estimate - 1.0).abs().lt(&0.005) {
        return Err(failed!(
            "the key is {key}, the scene's log-average gives {estimate:.4}"
        ));
    }
    // the brightest pixel is the sun's peak, a thousand times the sky: found near the
    // brightest of the subsample, then exactly in the window around it
    let peak = (0..pixels)
        .step_by(KEY_STEP)
        .max_by(|a, b| lum(*a).total_cmp(&lum(*b)))
        .unwrap_or(0);
    let (px, py) = ((peak % WIDTH) as isize, (peak / WIDTH) as isize);
    let mut brightest = 0.0f32;
    for y in (py - WINDOW).max(0)..(py + WINDOW + 1).min(HEIGHT as isize) {
        for x in (px - WINDOW).max(0)..(px + WINDOW + 1).min(WIDTH as isize) {
            let i = 3 * (y as usize * WIDTH + x as usize);
            brightest = brightest.max(luminance(&radiance[i..i + 3]));
        }
    }
    let brightest = brightest as f64;
    if !(white as f64 / (brightest * key as f64) - 1.0)
        .abs()
        .lt(&1e-5)
    {
        return Err(failed!(
            "the white point is {white}, the brightest pixel maps to {}",
            brightest * key as f64
        ));
    }
    for k in 0..256 {
        let (a, b) = ((k * 7919) % pixels, (k * 104_729 + 13) % pixels);
        let (ya, yb) = (
            written_luminance(&out[3 * a..3 * a + 3]),
            written_luminance(&out[3 * b..3 * b + 3]),
        );
        if lum(a) < lum(b) && ya > yb + 0.002 {
            return Err(failed!(
                "tone mapping reversed the order of two luminances (pixels {a} and {b})"
            ));
        }
    }
    let (key, white) = (key as f64, white as f64);
    for k in 0..SAMPLES {
        let i = (k * 191 + 7) % pixels;
        let l = lum(i) * key;
        let mapped = l * (1.0 + l / (white * white)) / (1.0 + l);
        let ratio = mapped / lum(i).max(1e-9);
        for c in 0..3 {
            let v = (radiance[3 * i + c] as f64 * ratio).clamp(0.0, 1.0);
            let want = 255.0 * v.powf(1.0 / 2.2);
            let got = out[3 * i + c] as f64;
            if (got - want).abs() > 0.75 {
                return Err(failed!(
                    "written pixel {i} channel {c} is {got}, the operator gives {want:.1}"
                ));
            }
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
            .to_string()
            .contains("badly exposed"));
        // the upper half of the image never written
        let mut half = out.clone();
        half[..out.len() / 2].fill(0);
        assert!(check(&radiance, &half, key, white).is_err());
        // a key of the wrong sign
        assert!(check(&radiance, &out, -key, white).is_err());
    }

    #[test]
    fn wrong_pixels_a_wrong_key_and_a_forgotten_gamma_are_caught() {
        let radiance = Hdr.prepare(1);
        let mut out = Hdr.scratch(&radiance);
        let (key, white) = tone_map(&radiance, &mut out);
        assert!(check(&radiance, &out, key, white).is_ok());
        // an inverted image: its mean stays a normal exposure
        let inverted: Vec<u8> = out.iter().map(|v| 255 - v).collect();
        assert!(check(&radiance, &inverted, key, white)
            .unwrap_err()
            .to_string()
            .contains("reversed the order"));
        // the key ten times too high, reported as such or as the right one
        let mut bright = out.clone();
        write(&radiance, &mut bright, 10.0 * key, 10.0 * white);
        assert!(check(&radiance, &bright, 10.0 * key, 10.0 * white)
            .unwrap_err()
            .to_string()
            .contains("the key"));
        assert!(check(&radiance, &bright, key, white).is_err());
        // the white point of another pixel than the brightest
        let mut flat = out.clone();
        write(&radiance, &mut flat, key, white / 2.0);
        assert!(check(&radiance, &flat, key, white / 2.0)
            .unwrap_err()
            .to_string()
            .contains("white point"));
        // the gamma forgotten: linear values written
        let mut linear = out.clone();
        for (p, o) in radiance.chunks_exact(3).zip(linear.chunks_exact_mut(3)) {
            let ratio = map(p, key, white) / luminance(p).max(1e-9);
            for c in 0..3 {
                o[c] = (255.0 * (p[c] * ratio).clamp(0.0, 1.0)).round() as u8;
            }
        }
        assert!(check(&radiance, &linear, key, white)
            .unwrap_err()
            .to_string()
            .contains("written pixel"));
        // a block of pixels two levels too bright
        let mut block = out.clone();
        for v in &mut block[3 * 1000 * WIDTH / 2..3 * 1100 * WIDTH / 2] {
            *v = v.saturating_add(2);
        }
        assert!(check(&radiance, &block, key, white)
            .unwrap_err()
            .to_string()
            .contains("written pixel"));
    }
}
