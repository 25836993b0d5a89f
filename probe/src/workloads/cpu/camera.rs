//! cpu.camera: a raw-photo pipeline: bilinear demosaicing of an RGGB Bayer mosaic, white
//! balance, and an unsharp mask, on a 1024x768 sensor image made from a synthetic photo.
//!
//! Written by hand, as camera pipelines are: each stage is a small stencil over the whole
//! frame. Each round checks the demosaiced image against the scene it was sampled from
//! (above 28 dB PSNR before sharpening). Filed under Integer, where Geekbench 5 counts its
//! Camera workload (suite version 2 on; it was Floating Point before).

use super::image::{photo, psnr, Rgb};
use super::{fold, Task};

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
    const VERSION: u32 = 1;
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
    ) -> Result<u64, String> {
        develop(&input.mosaic, linear, balanced);
        check(&input.scene, balanced)?;
        sharpen(balanced, sharp);
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

/// The developed image must be close to the scene the mosaic was sampled from.
fn check(scene: &Rgb, balanced: &[u8]) -> Result<(), String> {
    let quality = psnr(&scene.pixels, balanced);
    if quality < 28.0 {
        return Err(format!(
            "the demosaiced image is too far from the scene ({quality:.1} dB)"
        ));
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
            .contains("too far"));
        // the white balance not applied
        let raw: Vec<u8> = linear
            .iter()
            .map(|v| (v / 16.0).round().clamp(0.0, 255.0) as u8)
            .collect();
        assert!(check(&input.scene, &raw).unwrap_err().contains("too far"));
        // a 128x128 patch blown out to white
        let mut patch = balanced.clone();
        for y in 100..228 {
            patch[(y * WIDTH + 300) * 3..(y * WIDTH + 428) * 3].fill(255);
        }
        assert!(check(&input.scene, &patch).is_err());
    }
}
