//! cpu.camera: a raw-photo pipeline: bilinear demosaicing of an RGGB Bayer mosaic, white
//! balance, and an unsharp mask, on a 1024x768 sensor image made from a synthetic photo.
//!
//! Written by hand, as camera pipelines are: each stage is a small stencil over the whole
//! frame. Each round checks the demosaiced image against the scene it was sampled from
//! (above 28 dB PSNR before sharpening). Filed under Integer, where Geekbench 5 counts its
//! Camera workload (suite version 2 on; it was Floating Point before).

use super::image::{aligned, photo, psnr, Rgb};
use super::{fold, Task};
use crate::workload::{failed, WorkloadError};

pub struct Camera;

const WIDTH: usize = 1024;
const HEIGHT: usize = 768;
const GAINS: [f32; 3] = [1.9, 1.0, 1.6]; // the sensor's white balance

pub struct Input {
    scene: Rgb,
    mosaic: Vec<u16>,
}

fn channel_at(x: usize, y: usize) -> usize {
    match (y % 2, x % 2) {
        (0, 0) => 0,
        (1, 1) => 2,
        _ => 1,
    }
}

fn demosaic(mosaic: &[u16], out: &mut [f32]) {
    let at = |x: isize, y: isize| -> f32 {
        let (x, y) = (
            x.clamp(0, WIDTH as isize - 1) as usize,
            y.clamp(0, HEIGHT as isize - 1) as usize,
        );
        mosaic[y * WIDTH + x] as f32
    };
    for y in 0..HEIGHT as isize {
        for x in 0..WIDTH as isize {
            let own = channel_at(x as usize, y as usize);
            let cross = (at(x - 1, y) + at(x + 1, y) + at(x, y - 1) + at(x, y + 1)) / 4.0;
            let diagonal =
                (at(x - 1, y - 1) + at(x + 1, y - 1) + at(x - 1, y + 1) + at(x + 1, y + 1)) / 4.0;
            let across = (at(x - 1, y) + at(x + 1, y)) / 2.0;
            let down = (at(x, y - 1) + at(x, y + 1)) / 2.0;
            let rgb = match own {
                0 => [at(x, y), cross, diagonal],
                2 => [diagonal, cross, at(x, y)],
                _ if y % 2 == 0 => [across, at(x, y), down], // green on a red row
                _ => [down, at(x, y), across],               // green on a blue row
            };
            let i = (y as usize * WIDTH + x as usize) * 3;
            out[i..i + 3].copy_from_slice(&rgb);
        }
    }
}

impl Task for Camera {
    type Input = Input;
    type Scratch = (Vec<f32>, Vec<u8>, Vec<u8>);
    const NAME: &'static str = "cpu.camera";
    const SECTION: &'static str = "integer";
    const DESCRIPTION: &'static str = "raw pipeline: Bayer demosaic, white balance, unsharp mask on a 1024x768 frame (work: pixels)";
    const VERSION: u32 = 2;
    const ITERATIONS: u64 = 6;
    const WORK_UNIT: &'static str = "pixels";

    fn prepare(&self, seed: u64) -> Input {
        let scene = photo(seed, WIDTH, HEIGHT);
        let mosaic = (0..WIDTH * HEIGHT)
            .map(|i| {
                let c = channel_at(i % WIDTH, i / WIDTH);
                (scene.pixels[i * 3 + c] as f32 / GAINS[c] * 16.0).round() as u16
                // 12-bit-ish sensor counts
            })
            .collect();
        Input { scene, mosaic }
    }

    fn scratch(&self, _input: &Input) -> Self::Scratch {
        (
            vec![0.0; WIDTH * HEIGHT * 3],
            vec![0; WIDTH * HEIGHT * 3],
            vec![0; WIDTH * HEIGHT * 3],
        )
    }

    fn work(&self, _input: &Input) -> f64 {
        (WIDTH * HEIGHT) as f64
    }

    fn round(
        &self,
        input: &Input,
        (linear, balanced, sharp): &mut Self::Scratch,
    ) -> Result<u64, WorkloadError> {
        develop(&input.mosaic, linear, balanced);
        check(&input.scene, balanced)?;
        sharpen(balanced, sharp);
        check_sharp(balanced, sharp)?;
        Ok(fold(sharp))
    }
}

/// Demosaics the mosaic into `linear` and white-balances it into 8-bit `balanced`.
fn develop(mosaic: &[u16], linear: &mut [f32], balanced: &mut [u8]) {
    demosaic(mosaic, linear);
    for (i, (v, o)) in linear.iter().zip(balanced.iter_mut()).enumerate() {
        *o = (v * GAINS[i % 3] / 16.0).round().clamp(0.0, 255.0) as u8;
    }
}

/// The lowest PSNR the developed image may have against the scene: as a whole and in its
/// worst 32x32 tile. Honest runs, seeds 1..20, reach at least 32.9 and 19.1 dB: a tile on
/// a hard coloured edge is far off after bilinear demosaicing, so the tile bound only
/// catches gross damage (a patch painted over); the row test catches a wrong row (whose
/// 8-row stripe, at 14-18 dB, is no worse than an honest stripe along an edge, 20 dB) and
/// the alignment test a shift.
const MIN_GLOBAL: f64 = 31.9;
const MIN_TILE: f64 = 15.0;
const TILE: usize = 32;

/// PSNR of two RGB frames as a whole and in their worst TILE x TILE tile, and the squared
/// error of each row.
fn quality(a: &[u8], b: &[u8]) -> (f64, f64, Vec<u64>) {
    let row = WIDTH * 3;
    let mut tiles = vec![0u64; WIDTH / TILE];
    let mut rows = vec![0u64; HEIGHT];
    let (mut worst, mut total) = (0u64, 0u64);
    for y in 0..HEIGHT {
        let (ra, rb) = (&a[y * row..(y + 1) * row], &b[y * row..(y + 1) * row]);
        for (tile, (ca, cb)) in tiles
            .iter_mut()
            .zip(ra.chunks(TILE * 3).zip(rb.chunks(TILE * 3)))
        {
            let sse = ca
                .iter()
                .zip(cb)
                .map(|(p, q)| (*p as i32 - *q as i32).pow(2) as u64)
                .sum::<u64>();
            *tile += sse;
            rows[y] += sse;
        }
        total += rows[y];
        if y % TILE == TILE - 1 {
            for tile in &mut tiles {
                worst = worst.max(*tile);
                *tile = 0;
            }
        }
    }
    (
        psnr(total as f64, a.len()),
        psnr(worst as f64, TILE * TILE * 3),
        rows,
    )
}

/// The developed image must be close to the scene the mosaic was sampled from, as a whole,
/// in every 32x32 tile and every row (none far worse than its neighbours), and aligned
/// with it (so that a patch painted over, a wrong row or a frame shifted by a pixel shows).
fn check(scene: &Rgb, balanced: &[u8]) -> Result<(), WorkloadError> {
    let (global, tile, rows) = quality(&scene.pixels, balanced);
    if global < MIN_GLOBAL {
        return Err(failed!(
            "the demosaiced image is too far from the scene ({global:.1} dB)"
        ));
    }
    if tile < MIN_TILE {
        return Err(failed!(
            "a 32x32 tile of the demosaiced image is too far from the scene ({tile:.1} dB)"
        ));
    }
    // an honest row's error is about its neighbours' (edges run over many rows); a row
    // gone wrong has many times theirs, beyond a floor of a mean squared error of 64
    // (the first and last rows are left out: clamped at the frame's edge, their honest
    // error is many times their neighbour's)
    for y in 1..HEIGHT - 1 {
        let near = rows[y - 1].max(rows[y + 1]);
        if rows[y] > 8 * near + 64 * (WIDTH * 3) as u64 {
            return Err(failed!(
                "row {y} of the demosaiced image is far worse than its neighbours"
            ));
        }
    }
    aligned(&scene.pixels, balanced, WIDTH, HEIGHT)
}

/// Every SHARP_STRIDE-th byte of the sharpened frame (a prime stride, so the samples fall
/// on every column and channel) is recomputed directly from the balanced frame: the
/// unsharp mask inside, the balanced value unchanged on the one-pixel border.
const SHARP_STRIDE: usize = 101;

fn check_sharp(balanced: &[u8], sharp: &[u8]) -> Result<(), WorkloadError> {
    let row = WIDTH * 3;
    for i in (0..sharp.len()).step_by(SHARP_STRIDE) {
        let (y, x) = (i / row, i % row);
        let want = if y == 0 || y == HEIGHT - 1 || x < 3 || x >= row - 3 {
            balanced[i]
        } else {
            let mut sum = 0.0f32;
            for dy in [-1isize, 0, 1] {
                for dx in [-3isize, 0, 3] {
                    let j = (y as isize + dy) as usize * row + (x as isize + dx) as usize;
                    sum += balanced[j] as f32;
                }
            }
            let v = balanced[i] as f32;
            (v + 0.6 * (v - sum / 9.0)).round().clamp(0.0, 255.0) as u8
        };
        if sharp[i] != want {
            return Err(failed!(
                "the unsharp mask gave {} at pixel ({}, {}) channel {}, not {want}",
                sharp[i],
                x / 3,
                y,
                x % 3
            ));
        }
    }
    Ok(())
}

/// Unsharp mask: original + 0.6 * (original - 3x3 box blur).
fn sharpen(balanced: &[u8], sharp: &mut [u8]) {
    let row = WIDTH * 3;
    sharp.copy_from_slice(balanced);
    for y in 1..HEIGHT - 1 {
        for x in 3..row - 3 {
            let i = y * row + x;
            let blur = [
                i - row - 3,
                i - row,
                i - row + 3,
                i - 3,
                i,
                i + 3,
                i + row - 3,
                i + row,
                i + row + 3,
            ]
            .iter()
            .map(|j| balanced[*j] as f32)
            .sum::<f32>()
                / 9.0;
            let v = balanced[i] as f32;
            sharp[i] = (v + 0.6 * (v - blur)).round().clamp(0.0, 255.0) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_passes_and_a_wrongly_developed_image_is_caught() {
        let input = Camera.prepare(1);
        let mut scratch = Camera.scratch(&input);
        let sum = Camera.round(&input, &mut scratch).unwrap();
        assert_ne!(Camera.round(&Camera.prepare(2), &mut scratch), Ok(sum));
        let (linear, balanced, _) = &mut scratch;
        develop(&input.mosaic, linear, balanced);
        assert!(check(&input.scene, balanced).is_ok());
        // red and blue swapped (the mosaic read as BGGR)
        let mut swapped = balanced.clone();
        for p in swapped.chunks_exact_mut(3) {
            p.swap(0, 2);
        }
        assert!(check(&input.scene, &swapped)
            .unwrap_err()
            .to_string()
            .contains("too far"));
        // the white balance not applied
        let raw: Vec<u8> = linear
            .iter()
            .map(|v| (v / 16.0).round().clamp(0.0, 255.0) as u8)
            .collect();
        assert!(check(&input.scene, &raw)
            .unwrap_err()
            .to_string()
            .contains("too far"));
        // a 128x128 patch blown out to white
        let mut patch = balanced.clone();
        for y in 100..228 {
            patch[(y * WIDTH + 300) * 3..(y * WIDTH + 428) * 3].fill(255);
        }
        assert!(check(&input.scene, &patch).is_err());
        let row = WIDTH * 3;
        let tampered = |change: &dyn Fn(&mut Vec<u8>)| {
            let mut image = balanced.clone();
            change(&mut image);
            check(&input.scene, &image)
        };
        // the frame moved one row up, or one pixel left (the alignment test, or the
        // tightened global bound)
        assert!(tampered(&|p| p.copy_within(row.., 0)).is_err());
        assert!(tampered(&|p| p.copy_within(3.., 0)).is_err());
        // one row black, near the top, inside, near the bottom
        for y in [1, 400, HEIGHT - 2] {
            assert!(tampered(&|p| p[y * row..(y + 1) * row].fill(0))
                .unwrap_err()
                .to_string()
                .contains("row"));
        }
        // the unsharp mask: right, skipped, a row black, the frame one pixel left
        let mut sharp = vec![0u8; WIDTH * HEIGHT * 3];
        sharpen(balanced, &mut sharp);
        assert!(check_sharp(balanced, &sharp).is_ok());
        assert!(check_sharp(balanced, balanced)
            .unwrap_err()
            .to_string()
            .contains("unsharp"));
        let mut black = sharp.clone();
        black[300 * row..301 * row].fill(0);
        assert!(check_sharp(balanced, &black)
            .unwrap_err()
            .to_string()
            .contains("unsharp"));
        let mut left = sharp.clone();
        left.copy_within(3.., 0);
        assert!(check_sharp(balanced, &left)
            .unwrap_err()
            .to_string()
            .contains("unsharp"));
    }
}
