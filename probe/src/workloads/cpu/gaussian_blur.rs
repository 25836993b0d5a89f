//! cpu.gaussian_blur: a separable Gaussian blur (sigma 3) of a synthetic photo in f32,
//! rows then columns, with mirrored edges, in bands of 128 rows per colour plane: the
//! parts of the shared-task mode.
//!
//! Written by hand: the image crates' blurs work on 8-bit buffers with their own
//! rounding, and this workload's point is the floating-point filter itself. Each band
//! checks 8 pixels against a direct two-dimensional convolution computed independently.

use super::image::photo;
use super::Task;

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
    const VERSION: u32 = 2;
    const ITERATIONS: u64 = 8;
    const WORK_UNIT: &'static str = "pixels";
    const PARTS: usize = 3 * BANDS;

    fn prepare(&self, seed: u64) -> Input {
        let image = photo(seed, WIDTH, HEIGHT);
        let planes = (0..3)
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
        Input {
            planes,
            kernel: kernel(SIGMA),
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

    fn part(&self, input: &Input, scratch: &mut Scratch, index: usize) -> Result<u64, String> {
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

/// Part `index`'s blurred band `out` must match the direct convolution at CHECKS pixels;
/// returns a checksum of the band.
fn check(input: &Input, index: usize, out: &[f32]) -> Result<u64, String> {
    let (c, band) = (index / BANDS, index % BANDS);
    let plane = &input.planes[c];
    let y0 = band * BAND;
    for i in 0..CHECKS {
        let (x, y) = ((i * 131 + index * 17) % WIDTH, (i * 97 + index * 29) % BAND);
        let (got, want) = (out[y * WIDTH + x], direct(plane, &input.kernel, x, y0 + y));
        if (got - want).abs() > 1e-4 {
            return Err(format!(
                "blurred pixel ({x}, {}) is off by {}",
                y0 + y,
                got - want
            ));
        }
    }
    let sum: f64 = out.iter().map(|v| *v as f64).sum();
    Ok((sum * 1e3).round() as u64)
}

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
    }
}
