//! cpu.gaussian_blur: a separable Gaussian blur (sigma 3) of a synthetic photo in f32,
//! rows then columns, with mirrored edges, in bands of 128 rows per colour plane: the
//! parts of the shared-task mode.
//!
//! Written by hand: the image crates' blurs work on 8-bit buffers with their own
//! rounding, and this workload's point is the floating-point filter itself. Each band
//! checks 8 pixels against a direct two-dimensional convolution, one full row and one full
//! column against a separable convolution in f64 done in the other order (columns then
//! rows), and every row's sum against the sum the blur must preserve (the source rows'
//! sums, weighted at the mirrored edges, computed in `prepare`), so a changed pixel or a
//! zeroed row fails.

use super::image::photo;
use super::Task;
use crate::workload::{failed, WorkloadError};

pub struct GaussianBlur;

const WIDTH: usize = 1024;
const HEIGHT: usize = 768;
const SIGMA: f32 = 3.0;
const BAND: usize = 128;
const BANDS: usize = HEIGHT / BAND;
const CHECKS: usize = 8;

pub struct Input {
    planes: Vec<Vec<f32>>, // one plane per colour channel
    kernel: Vec<f32>,
    /// Per plane and row, the row's sum as the row pass keeps it: the pixels within the
    /// kernel radius of an edge weighted by how much of the kernel mirrors onto them.
    row_sums: Vec<Vec<f64>>,
}

/// Per plane and row, what the row pass of the blur turns the row's sum into.
fn row_sums(planes: &[Vec<f32>], kernel: &[f32]) -> Vec<Vec<f64>> {
    let r = kernel.len() / 2;
    let mut weight = vec![0.0f64; WIDTH];
    for x in 0..WIDTH {
        for (k, w) in kernel.iter().enumerate() {
            weight[mirror(x as isize + k as isize - r as isize, WIDTH)] += *w as f64;
        }
    }
    planes
        .iter()
        .map(|plane| {
            plane
                .chunks_exact(WIDTH)
                .map(|row| row.iter().zip(&weight).map(|(v, w)| *v as f64 * w).sum())
                .collect()
        })
        .collect()
}

pub struct Scratch {
    across: Vec<f32>,
    out: Vec<f32>,
}

fn kernel(sigma: f32) -> Vec<f32> {
    let radius = (3.0 * sigma).ceil() as i32;
    let raw: Vec<f32> = (-radius..=radius)
        .map(|i| (-(i * i) as f32 / (2.0 * sigma * sigma)).exp())
        .collect();
    let total: f32 = raw.iter().sum();
    raw.iter().map(|v| v / total).collect()
}

fn mirror(i: isize, n: usize) -> usize {
    let n = n as isize;
    let m = if i < 0 {
        -i - 1
    } else if i >= n {
        2 * n - i - 1
    } else {
        i
    };
    m.clamp(0, n - 1) as usize
}

/// Blurs rows `y0..y0 + BAND` of one plane into `out`: the row pass over the band and the
/// kernel radius around it (a tile with its halo, as tiled image pipelines work), then the
/// column pass over the band.
fn blur_band(plane: &[f32], kernel: &[f32], y0: usize, across: &mut [f32], out: &mut [f32]) {
    let r = kernel.len() / 2;
    let mut padded = vec![0.0f32; WIDTH + 2 * r];
    for (i, target) in across.chunks_exact_mut(WIDTH).enumerate() {
        let y = mirror(y0 as isize + i as isize - r as isize, HEIGHT);
        let row = &plane[y * WIDTH..(y + 1) * WIDTH];
        for (k, p) in padded.iter_mut().enumerate() {
            *p = row[mirror(k as isize - r as isize, WIDTH)];
        }
        for (x, o) in target.iter_mut().enumerate() {
            *o = kernel
                .iter()
                .zip(&padded[x..x + kernel.len()])
                .map(|(w, v)| w * v)
                .sum();
        }
    }
    // columns: whole rows at a time, so the inner loop runs along memory and vectorises
    for (y, target) in out.chunks_exact_mut(WIDTH).enumerate() {
        target.fill(0.0);
        for (k, w) in kernel.iter().enumerate() {
            let source = &across[(y + k) * WIDTH..(y + k + 1) * WIDTH];
            for (o, v) in target.iter_mut().zip(source) {
                *o += w * v;
            }
        }
    }
}

fn direct(plane: &[f32], kernel: &[f32], x: usize, y: usize) -> f32 {
    let r = (kernel.len() / 2) as isize;
    let mut acc = 0.0f64;
    for (j, wy) in kernel.iter().enumerate() {
        for (i, wx) in kernel.iter().enumerate() {
            let (sx, sy) = (
                mirror(x as isize + i as isize - r, WIDTH),
                mirror(y as isize + j as isize - r, HEIGHT),
            );
            acc += (*wx as f64) * (*wy as f64) * plane[sy * WIDTH + sx] as f64;
        }
    }
    acc as f32
}

impl Task for GaussianBlur {
    type Input = Input;
    type Scratch = Scratch;
    const NAME: &'static str = "cpu.gaussian_blur";
    const SECTION: &'static str = "floating_point";
    const DESCRIPTION: &'static str =
        "separable Gaussian blur (sigma 3) of a 1024x768 RGB photo in f32 (work: pixels)";
    const VERSION: u32 = 3;
    const ITERATIONS: u64 = 8;
    const WORK_UNIT: &'static str = "pixels";
    const PARTS: usize = 3 * BANDS;

    fn prepare(&self, seed: u64) -> Input {
        let image = photo(seed, WIDTH, HEIGHT);
        let planes: Vec<Vec<f32>> = (0..3)
            .map(|c| {
                image
                    .pixels
                    .iter()
                    .skip(c)
                    .step_by(3)
                    .map(|v| *v as f32 / 255.0)
                    .collect()
            })
            .collect();
        let kernel = kernel(SIGMA);
        Input {
            row_sums: row_sums(&planes, &kernel),
            planes,
            kernel,
        }
    }

    fn scratch(&self, input: &Input) -> Scratch {
        let radius = input.kernel.len() / 2;
        Scratch {
            across: vec![0.0; WIDTH * (BAND + 2 * radius)],
            out: vec![0.0; WIDTH * BAND],
        }
    }

    fn work(&self, _input: &Input) -> f64 {
        (WIDTH * HEIGHT) as f64
    }

    fn part(
        &self,
        input: &Input,
        scratch: &mut Scratch,
        index: usize,
    ) -> Result<u64, WorkloadError> {
        let (c, band) = (index / BANDS, index % BANDS);
        blur_band(
            &input.planes[c],
            &input.kernel,
            band * BAND,
            &mut scratch.across,
            &mut scratch.out,
        );
        check(input, index, &scratch.out)
    }
}

/// Part `index`'s blurred band `out` must match the direct convolution at CHECKS pixels,
/// a separable convolution done columns first along one full row and one full column, and
/// every row's sum the sum the blur must give it; returns a checksum of the band.
fn check(input: &Input, index: usize, out: &[f32]) -> Result<u64, WorkloadError> {
    let (c, band) = (index / BANDS, index % BANDS);
    let plane = &input.planes[c];
    let kernel = &input.kernel;
    let r = kernel.len() / 2;
    let y0 = band * BAND;
    let off = |x: usize, y: usize, want: f64| -> Result<(), WorkloadError> {
        let got = out[y * WIDTH + x];
        if (got as f64 - want).abs() > 1e-5 {
            return Err(failed!(
                "blurred pixel ({x}, {}) is off by {}",
                y0 + y,
                got as f64 - want
            ));
        }
        Ok(())
    };
    for i in 0..CHECKS {
        let (x, y) = ((i * 131 + index * 17) % WIDTH, (i * 97 + index * 29) % BAND);
        off(x, y, direct(plane, kernel, x, y0 + y) as f64)?;
    }
    // one full row: the column pass first, then the row pass, in f64
    let y = (index * 41 + 3) % BAND;
    let mut column = vec![0.0f64; WIDTH];
    for (j, w) in kernel.iter().enumerate() {
        let sy = mirror((y0 + y + j) as isize - r as isize, HEIGHT);
        for (v, p) in column.iter_mut().zip(&plane[sy * WIDTH..(sy + 1) * WIDTH]) {
            *v += *w as f64 * *p as f64;
        }
    }
    for x in 0..WIDTH {
        let want = kernel
            .iter()
            .enumerate()
            .map(|(i, w)| *w as f64 * column[mirror((x + i) as isize - r as isize, WIDTH)])
            .sum();
        off(x, y, want)?;
    }
    // one full column: the row pass over the band and its halo, then the column pass
    let x = (index * 131 + 77) % WIDTH;
    let across: Vec<f64> = (0..BAND + 2 * r)
        .map(|t| {
            let sy = mirror((y0 + t) as isize - r as isize, HEIGHT);
            kernel
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    *w as f64
                        * plane[sy * WIDTH + mirror((x + i) as isize - r as isize, WIDTH)] as f64
                })
                .sum()
        })
        .collect();
    for y in 0..BAND {
        let want = kernel
            .iter()
            .zip(&across[y..])
            .map(|(w, v)| *w as f64 * v)
            .sum();
        off(x, y, want)?;
    }
    // every row's sum, and the band's for the checksum
    let sums = &input.row_sums[c];
    let mut sum = 0.0f64;
    for (y, row) in out.chunks_exact(WIDTH).enumerate() {
        let mut lanes = [0.0f64; 8];
        for chunk in row.chunks_exact(8) {
            for (l, v) in lanes.iter_mut().zip(chunk) {
                *l += *v as f64;
            }
        }
        let got: f64 = lanes.iter().sum();
        sum += got;
        let want: f64 = kernel
            .iter()
            .enumerate()
            .map(|(j, w)| *w as f64 * sums[mirror((y0 + y + j) as isize - r as isize, HEIGHT)])
            .sum();
        if (got - want).abs() > ROW_SUM_TOLERANCE {
            return Err(failed!(
                "blurred row {} sums to {got}, the blur keeps its sum at {want}",
                y0 + y
            ));
        }
    }
    Ok((sum * 1e3).round() as u64)
}

/// How far a row's sum (of 1024 values in 0..1) may stray from the exact one: f32 rounding
/// leaves it within 1e-5 (seeds 1..20); a pixel's within 3e-7, against 1e-5 allowed.
const ROW_SUM_TOLERANCE: f64 = 1e-4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_passes_and_a_wrong_blur_is_caught() {
        let input = GaussianBlur.prepare(1);
        let mut scratch = GaussianBlur.scratch(&input);
        let sum = GaussianBlur.round(&input, &mut scratch).unwrap();
        assert_ne!(
            GaussianBlur.round(&GaussianBlur.prepare(2), &mut scratch),
            Ok(sum)
        );
        let index = 3 * BANDS / 2; // green, a middle band
        let part = GaussianBlur.part(&input, &mut scratch, index).unwrap();
        let out = scratch.out.clone();
        assert_eq!(check(&input, index, &out), Ok(part));
        // the band one row off (an off-by-one in the column pass)
        let mut shifted = out.clone();
        shifted.copy_within(WIDTH.., 0);
        assert!(check(&input, index, &shifted)
            .unwrap_err()
            .to_string()
            .contains("blurred pixel"));
        // the band blurred by the kernel of sigma 2.5 instead of 3
        let (c, band) = (index / BANDS, index % BANDS);
        let mut other = vec![0.0; out.len()];
        blur_band(
            &input.planes[c],
            &kernel(2.5),
            band * BAND,
            &mut vec![0.0; WIDTH * (BAND + 2 * (kernel(2.5).len() / 2))],
            &mut other,
        );
        assert!(check(&input, index, &other).is_err());
        // one pixel off the checked row and column changed by 2% of full scale
        let mut changed = out.clone();
        changed[77 * WIDTH + 500] += 0.02;
        assert!(check(&input, index, &changed)
            .unwrap_err()
            .to_string()
            .contains(&format!("row {}", band * BAND + 77)));
        // one row left zero (a row the column pass skipped)
        let mut zeroed = out.clone();
        zeroed[50 * WIDTH..51 * WIDTH].fill(0.0);
        assert!(check(&input, index, &zeroed).is_err());
        // a pixel of the checked row off by 5e-5, too little for its row's sum to show
        let y = (index * 41 + 3) % BAND;
        let mut row = out.clone();
        row[y * WIDTH + 600] += 5e-5;
        assert!(check(&input, index, &row)
            .unwrap_err()
            .to_string()
            .contains("blurred pixel"));
    }
}
