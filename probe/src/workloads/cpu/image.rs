//! Synthetic photographs for the image workloads: smooth lighting, textured surfaces,
//! hard-edged objects and sensor noise, so that codecs and filters meet the mix of flat
//! areas, edges and detail that real photos have.

use crate::workload::{failed, WorkloadError};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// An RGB image, 8 bits per channel, row-major.
pub struct Rgb {
    pub width: usize,
    pub height: usize,
    pub pixels: Vec<u8>,
}

pub fn photo(seed: u64, width: usize, height: usize) -> Rgb {
    let mut rng = Pcg64::seed_from_u64(seed);
    let blobs: Vec<(f32, f32, f32, [f32; 3])> = (0..24)
        .map(|_| {
            (
                rng.random_range(0.0..width as f32),
                rng.random_range(0.0..height as f32),
                rng.random_range(20.0..200.0f32),
                [
                    rng.random_range(0.0..255.0),
                    rng.random_range(0.0..255.0),
                    rng.random_range(0.0..255.0),
                ],
            )
        })
        .collect();
    let mut pixels = Vec::with_capacity(width * height * 3);
    for y in 0..height {
        for x in 0..width {
            let (fx, fy) = (x as f32, y as f32);
            let light = 0.6 + 0.4 * (fx / width as f32);
            let texture = 12.0 * ((fx * 0.11).sin() * (fy * 0.07).cos());
            let mut rgb = [90.0 + 0.1 * fy, 120.0, 160.0 - 0.1 * fy];
            for (bx, by, r, colour) in &blobs {
                if (fx - bx).powi(2) + (fy - by).powi(2) < r * r {
                    rgb = *colour;
                }
            }
            for c in rgb {
                let noise: f32 = rng.random_range(-6.0..6.0);
                pixels.push((c * light + texture + noise).clamp(0.0, 255.0) as u8);
            }
        }
    }
    Rgb {
        width,
        height,
        pixels,
    }
}

/// Peak signal-to-noise ratio in dB of a squared error summed over `samples` 8-bit values
/// (a perfect match gives ~168 dB rather than infinity, so that differences of PSNRs stay numbers).
pub fn psnr(squared_error: f64, samples: usize) -> f64 {
    let mse = squared_error / samples.max(1) as f64;
    10.0 * (255.0f64 * 255.0 / mse.max(1e-12)).log10()
}

/// Whether the picture `b` is aligned with the original `a`: on every 8th row, its squared
/// error against `a` must be well below that against `a` moved by one pixel in any of the
/// four directions (a picture shifted by one row or column fails this, while its PSNR may
/// still look fine on a noisy photo).
pub fn aligned(a: &[u8], b: &[u8], width: usize, height: usize) -> Result<(), WorkloadError> {
    let row = width * 3;
    let mut sse = [0u64; 5];
    for y in (8..height - 8).step_by(8) {
        for (k, (dx, dy)) in [(0isize, 0isize), (1, 0), (-1, 0), (0, 1), (0, -1)]
            .into_iter()
            .enumerate()
        {
            let ra = &a[(y as isize + dy) as usize * row..][..row];
            let rb = &b[y * row..(y + 1) * row];
            let (ra, rb) = (
                &ra[(3 + 3 * dx) as usize..(row as isize - 3 + 3 * dx) as usize],
                &rb[3..row - 3],
            );
            sse[k] += ra
                .iter()
                .zip(rb)
                .map(|(p, q)| (*p as i32 - *q as i32).pow(2) as u64)
                .sum::<u64>();
        }
    }
    if sse[1..].iter().any(|s| sse[0] * 5 / 4 > *s) {
        return Err(failed!(
            "the picture is shifted: its error against the original is {}, moved by a pixel {:?}",
            sse[0],
            &sse[1..]
        ));
    }
    Ok(())
}
