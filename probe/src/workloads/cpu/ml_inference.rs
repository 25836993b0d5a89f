//! cpu.ml_inference: the forward pass of a small convolutional image classifier on a batch
//! of synthetic images: three 3x3 convolutions (im2col + single-precision GEMM from the
//! `matrixmultiply` crate, the kernel behind ndarray), ReLU, max pooling, global average
//! pooling, a dense layer and softmax, with seeded He-initialised weights. Each round checks
//! sampled outputs of the first convolution against a direct convolution and that every
//! softmax row sums to one.

use super::image::photo;
use super::Task;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

pub struct MlInference;

const BATCH: usize = 4;
const SIDE: usize = 64;
const CHANNELS: [usize; 4] = [3, 16, 32, 64];
const CLASSES: usize = 10;

pub struct Input {
    images: Vec<Vec<f32>>, // BATCH x (3 x SIDE x SIDE), channel-major
    convs: Vec<Vec<f32>>,  // per layer: out x (in x 3 x 3)
    dense: Vec<f32>,       // CLASSES x 64
}

/// Unfolds 3x3 neighbourhoods (zero padding) into columns: (c*9) x (h*w).
fn im2col(x: &[f32], c: usize, h: usize, w: usize, cols: &mut Vec<f32>) {
    cols.clear();
    cols.resize(c * 9 * h * w, 0.0);
    for ch in 0..c {
        for ky in 0..3 {
            for kx in 0..3 {
                let row = (ch * 9 + ky * 3 + kx) * h * w;
                for y in 0..h {
                    let sy = y as isize + ky as isize - 1;
                    if sy < 0 || sy >= h as isize {
                        continue;
                    }
                    for xx in 0..w {
                        let sx = xx as isize + kx as isize - 1;
                        if sx >= 0 && sx < w as isize {
                            cols[row + y * w + xx] = x[ch * h * w + sy as usize * w + sx as usize];
                        }
                    }
                }
            }
        }
    }
}

fn conv_relu(
    x: &[f32],
    weights: &[f32],
    c_in: usize,
    c_out: usize,
    side: usize,
    cols: &mut Vec<f32>,
) -> Vec<f32> {
    im2col(x, c_in, side, side, cols);
    let (m, k, n) = (c_out, c_in * 9, side * side);
    let mut out = vec![0.0f32; m * n];
    // SAFETY: the slices hold m*k, k*n and m*n elements in row-major order, as the strides say.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            weights.as_ptr(),
            k as isize,
            1,
            cols.as_ptr(),
            n as isize,
            1,
            0.0,
            out.as_mut_ptr(),
            n as isize,
            1,
        );
    }
    out.iter_mut().for_each(|v| *v = v.max(0.0));
    out
}

fn max_pool(x: &[f32], c: usize, side: usize) -> Vec<f32> {
    let half = side / 2;
    let mut out = vec![0.0; c * half * half];
    for ch in 0..c {
        for y in 0..half {
            for xx in 0..half {
                let at =
                    |dy: usize, dx: usize| x[ch * side * side + (2 * y + dy) * side + 2 * xx + dx];
                out[ch * half * half + y * half + xx] =
                    at(0, 0).max(at(0, 1)).max(at(1, 0)).max(at(1, 1));
            }
        }
    }
    out
}

fn direct_conv(
    x: &[f32],
    weights: &[f32],
    c_in: usize,
    side: usize,
    o: usize,
    y: usize,
    xx: usize,
) -> f32 {
    let mut acc = 0.0f64;
    for ch in 0..c_in {
        for ky in 0..3 {
            for kx in 0..3 {
                let (sy, sx) = (y as isize + ky as isize - 1, xx as isize + kx as isize - 1);
                if sy >= 0 && sy < side as isize && sx >= 0 && sx < side as isize {
                    acc += weights[o * c_in * 9 + ch * 9 + ky * 3 + kx] as f64
                        * x[ch * side * side + sy as usize * side + sx as usize] as f64;
                }
            }
        }
    }
    (acc as f32).max(0.0)
}

impl Task for MlInference {
    type Input = Input;
    type Scratch = Vec<f32>;
    const NAME: &'static str = "cpu.ml_inference";
    const SECTION: &'static str = "floating_point";
    const DESCRIPTION: &'static str =
        "CNN forward pass (3 conv layers via im2col + SGEMM) on 4 64x64 images (work: images)";
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 70;
    const WORK_UNIT: &'static str = "images";

    fn prepare(&self, seed: u64) -> Input {
        let mut rng = Pcg64::seed_from_u64(seed);
        let images = (0..BATCH)
            .map(|b| {
                let p = photo(seed.wrapping_add(b as u64), SIDE, SIDE);
                (0..3)
                    .flat_map(|c| {
                        p.pixels
                            .iter()
                            .skip(c)
                            .step_by(3)
                            .map(|v| *v as f32 / 255.0 - 0.5)
                            .collect::<Vec<_>>()
                    })
                    .collect()
            })
            .collect();
        let mut he = |fan_in: usize, n: usize| -> Vec<f32> {
            let scale = (2.0 / fan_in as f32).sqrt();
            (0..n)
                .map(|_| rng.random_range(-1.0..1.0f32) * scale * 1.7)
                .collect()
        };
        let convs = (0..3)
            .map(|l| he(CHANNELS[l] * 9, CHANNELS[l + 1] * CHANNELS[l] * 9))
            .collect();
        let dense = he(CHANNELS[3], CLASSES * CHANNELS[3]);
        Input {
            images,
            convs,
            dense,
        }
    }

    fn scratch(&self, _input: &Input) -> Vec<f32> {
        Vec::new()
    }

    fn work(&self, _input: &Input) -> f64 {
        BATCH as f64
    }

    fn round(&self, input: &Input, cols: &mut Vec<f32>) -> Result<u64, String> {
        let mut checksum = 0u64;
        for (b, image) in input.images.iter().enumerate() {
            let first = conv_relu(image, &input.convs[0], CHANNELS[0], CHANNELS[1], SIDE, cols);
            check_conv(input, b, &first)?;
            let probs = classify(input, first, cols);
            checksum = checksum.rotate_left(11) ^ check_softmax(&probs)?;
        }
        Ok(checksum)
    }
}

/// Sampled outputs of image `b`'s first convolution must match a direct convolution.
fn check_conv(input: &Input, b: usize, y: &[f32]) -> Result<(), String> {
    let side = SIDE;
    for i in 0..16 {
        let (o, py, px) = ((i * 5 + b) % CHANNELS[1], (i * 13) % side, (i * 29) % side);
        let want = direct_conv(
            &input.images[b],
            &input.convs[0],
            CHANNELS[0],
            side,
            o,
            py,
            px,
        );
        if (y[o * side * side + py * side + px] - want).abs() > 1e-4 * (1.0 + want.abs()) {
            return Err("a convolution output differs from the direct convolution".into());
        }
    }
    Ok(())
}

/// The rest of the network from the first convolution's output `y`: the class
/// probabilities.
fn classify(input: &Input, y: Vec<f32>, cols: &mut Vec<f32>) -> Vec<f32> {
    let mut x = max_pool(&y, CHANNELS[1], SIDE);
    let mut side = SIDE / 2;
    for layer in 1..3 {
        let y = conv_relu(
            &x,
            &input.convs[layer],
            CHANNELS[layer],
            CHANNELS[layer + 1],
            side,
            cols,
        );
        if layer < 2 {
            x = max_pool(&y, CHANNELS[layer + 1], side);
            side /= 2;
        } else {
            x = y;
        }
    }
    let features: Vec<f32> = x
        .chunks(side * side)
        .map(|c| c.iter().sum::<f32>() / (side * side) as f32)
        .collect();
    let logits: Vec<f32> = input
        .dense
        .chunks(CHANNELS[3])
        .map(|w| w.iter().zip(&features).map(|(a, b)| a * b).sum())
        .collect();
    let top = logits.iter().cloned().fold(f32::MIN, f32::max);
    let exp: Vec<f32> = logits.iter().map(|l| (l - top).exp()).collect();
    let total: f32 = exp.iter().sum();
    exp.iter().map(|e| e / total).collect()
}

/// The probabilities must sum to one; returns a checksum of the top class and its
/// probability.
fn check_softmax(probs: &[f32]) -> Result<u64, String> {
    if (probs.iter().sum::<f32>() - 1.0).abs() > 1e-5 {
        return Err("softmax does not sum to one".into());
    }
    let class = probs
        .iter()
        .enumerate()
        .fold(0, |best, (i, p)| if *p > probs[best] { i } else { best });
    Ok((class as u64) ^ ((probs[class] * 1e6) as u64) << 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_passes_and_wrong_outputs_are_caught() {
        let input = MlInference.prepare(1);
        let mut cols = Vec::new();
        let sum = MlInference.round(&input, &mut cols).unwrap();
        assert_ne!(
            MlInference.round(&MlInference.prepare(2), &mut cols),
            Ok(sum)
        );
        let b = 1;
        let image = &input.images[b];
        let first = conv_relu(image, &input.convs[0], 3, 16, SIDE, &mut cols);
        assert!(check_conv(&input, b, &first).is_ok());
        // every output channel holding the next one's (the weight matrix's rows off by one)
        let plane = SIDE * SIDE;
        let mut swapped = first.clone();
        swapped.rotate_left(plane);
        assert!(check_conv(&input, b, &swapped)
            .unwrap_err()
            .contains("direct convolution"));
        // the ReLU skipped: negative outputs let through
        let unclamped = {
            im2col(image, 3, SIDE, SIDE, &mut cols);
            let mut out = vec![0.0f32; 16 * plane];
            for o in 0..16 {
                for p in 0..plane {
                    out[o * plane + p] = (0..27)
                        .map(|k| input.convs[0][o * 27 + k] * cols[k * plane + p])
                        .sum();
                }
            }
            out
        };
        assert!(check_conv(&input, b, &unclamped).is_err());
        let mut probs = classify(&input, first, &mut cols);
        assert!(check_softmax(&probs).is_ok());
        // one class probability off by 1%
        probs[3] += 0.01;
        assert!(check_softmax(&probs).unwrap_err().contains("sum to one"));
        // the probabilities not normalised
        probs[3] -= 0.01;
        let raw: Vec<f32> = probs.iter().map(|p| p * 2.0).collect();
        assert!(check_softmax(&raw).is_err());
    }
}
