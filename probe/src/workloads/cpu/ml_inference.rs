//! cpu.ml_inference: the forward pass of a small convolutional image classifier on a batch
//! of synthetic images: three 3x3 convolutions (im2col + single-precision GEMM from the
//! `matrixmultiply` crate, the kernel behind ndarray), ReLU, max pooling, global average
//! pooling, a dense layer and softmax, with seeded He-initialised weights. Each round checks
//! every layer: sampled outputs of each convolution (up to three per output channel and round,
//! where the value before the ReLU is positive, and zeros where it is not) against a direct
//! convolution of that layer's input, every max-pooled value of the checked channels, and the
//! pooling, dense layer and softmax recomputed in f64; and every image's class probabilities against those a
//! direct (f64, no im2col/GEMM) forward pass computed when the input was prepared.

use super::image::photo;
use super::Task;
use crate::workload::{failed, WorkloadError};
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
    /// Per image, the class probabilities of a direct f64 forward pass (untimed, in prepare).
    want: Vec<Vec<f64>>,
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

/// Output `o` at (`y`, `xx`) of a 3x3 convolution before the ReLU, summed directly in f64,
/// and the sum of its terms' magnitudes (the scale of its rounding error in f32).
fn direct_conv(
    x: &[f32],
    weights: &[f32],
    c_in: usize,
    side: usize,
    o: usize,
    y: usize,
    xx: usize,
) -> (f64, f64) {
    let (mut acc, mut scale) = (0.0f64, 0.0f64);
    let plane = side * side;
    for ky in 0..3 {
        let sy = y as isize + ky as isize - 1;
        if sy < 0 || sy >= side as isize {
            continue;
        }
        for kx in 0..3 {
            let sx = xx as isize + kx as isize - 1;
            if sx < 0 || sx >= side as isize {
                continue;
            }
            let (w, at) = (
                &weights[o * c_in * 9 + ky * 3 + kx..],
                sy as usize * side + sx as usize,
            );
            for ch in 0..c_in {
                let t = w[ch * 9] as f64 * x[ch * plane + at] as f64;
                acc += t;
                scale += t.abs();
            }
        }
    }
    (acc, scale)
}

/// The whole network on one image, directly in f64 (for the reference probabilities).
fn direct_forward(image: &[f32], convs: &[Vec<f32>], dense: &[f32]) -> Vec<f64> {
    let mut x: Vec<f32> = image.to_vec();
    let mut side = SIDE;
    let mut features = Vec::new();
    for layer in 0..3 {
        let (c_in, c_out) = (CHANNELS[layer], CHANNELS[layer + 1]);
        let mut y = vec![0.0f64; c_out * side * side];
        for o in 0..c_out {
            for py in 0..side {
                for px in 0..side {
                    let (v, _) = direct_conv(&x, &convs[layer], c_in, side, o, py, px);
                    y[o * side * side + py * side + px] = v.max(0.0);
                }
            }
        }
        if layer < 2 {
            let half = side / 2;
            let mut pooled = vec![0.0f32; c_out * half * half];
            for o in 0..c_out {
                for py in 0..half {
                    for px in 0..half {
                        let at = |dy: usize, dx: usize| {
                            y[o * side * side + (2 * py + dy) * side + 2 * px + dx]
                        };
                        pooled[o * half * half + py * half + px] =
                            at(0, 0).max(at(0, 1)).max(at(1, 0)).max(at(1, 1)) as f32;
                    }
                }
            }
            x = pooled;
            side = half;
        } else {
            features = y
                .chunks(side * side)
                .map(|c| c.iter().sum::<f64>() / (side * side) as f64)
                .collect();
        }
    }
    softmax64(dense, &features)
}

/// The dense layer and softmax in f64.
fn softmax64(dense: &[f32], features: &[f64]) -> Vec<f64> {
    let logits: Vec<f64> = dense
        .chunks(CHANNELS[3])
        .map(|w| w.iter().zip(features).map(|(a, b)| *a as f64 * b).sum())
        .collect();
    let top = logits.iter().cloned().fold(f64::MIN, f64::max);
    let exp: Vec<f64> = logits.iter().map(|l| (l - top).exp()).collect();
    let total: f64 = exp.iter().sum();
    exp.iter().map(|e| e / total).collect()
}

impl Task for MlInference {
    type Input = Input;
    type Scratch = Vec<f32>;
    const NAME: &'static str = "cpu.ml_inference";
    const SECTION: &'static str = "floating_point";
    const DESCRIPTION: &'static str =
        "CNN forward pass (3 conv layers via im2col + SGEMM) on 4 64x64 images (work: images)";
    const VERSION: u32 = 2;
    const ITERATIONS: u64 = 70;
    const WORK_UNIT: &'static str = "images";

    fn prepare(&self, seed: u64) -> Input {
        let mut rng = Pcg64::seed_from_u64(seed);
        let images: Vec<Vec<f32>> = (0..BATCH)
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
        let convs: Vec<Vec<f32>> = (0..3)
            .map(|l| he(CHANNELS[l] * 9, CHANNELS[l + 1] * CHANNELS[l] * 9))
            .collect();
        let dense = he(CHANNELS[3], CLASSES * CHANNELS[3]);
        let want = images
            .iter()
            .map(|image| direct_forward(image, &convs, &dense))
            .collect();
        Input {
            images,
            convs,
            dense,
            want,
        }
    }

    fn scratch(&self, _input: &Input) -> Vec<f32> {
        Vec::new()
    }

    fn work(&self, _input: &Input) -> f64 {
        BATCH as f64
    }

    fn round(&self, input: &Input, cols: &mut Vec<f32>) -> Result<u64, WorkloadError> {
        let mut checksum = 0u64;
        for b in 0..BATCH {
            let trace = forward(input, b, cols);
            checksum = checksum.rotate_left(11) ^ check(input, b, &trace)?;
        }
        Ok(checksum)
    }
}

/// Every layer's output on one image.
struct Trace {
    /// The three convolutions' outputs (after the ReLU).
    conv: Vec<Vec<f32>>,
    /// The two max-pooled maps (the inputs of convolutions 2 and 3).
    pooled: Vec<Vec<f32>>,
    probs: Vec<f32>,
}

/// The network on image `b`, every layer's output kept.
fn forward(input: &Input, b: usize, cols: &mut Vec<f32>) -> Trace {
    let mut conv = Vec::with_capacity(3);
    let mut pooled = Vec::with_capacity(2);
    let mut side = SIDE;
    for layer in 0..3 {
        let x = if layer == 0 {
            &input.images[b]
        } else {
            &pooled[layer - 1]
        };
        let y = conv_relu(
            x,
            &input.convs[layer],
            CHANNELS[layer],
            CHANNELS[layer + 1],
            side,
            cols,
        );
        if layer < 2 {
            pooled.push(max_pool(&y, CHANNELS[layer + 1], side));
            side /= 2;
        }
        conv.push(y);
    }
    let x = &conv[2];
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
    let probs = exp.iter().map(|e| e / total).collect();
    Trace {
        conv,
        pooled,
        probs,
    }
}

/// Positive samples wanted per output channel of each convolution, and candidates tried.
const SAMPLES: usize = 3;
const CANDIDATES: usize = 8;

/// Checks image `b`'s trace layer by layer: in every fourth output channel (image b's
/// quarter), sampled convolution outputs against a direct convolution of the layer's input
/// (positive ones to within rounding, the others zero) and every pooled value; then the pooling, dense layer and softmax recomputed in f64, and the
/// probabilities against the direct forward pass of prepare. Returns a checksum of the top
/// class and its probability.
fn check(input: &Input, b: usize, trace: &Trace) -> Result<u64, WorkloadError> {
    let mut side = SIDE;
    let mut rng = Pcg64::seed_from_u64(b as u64 * 0x9e37_79b9 + 17);
    for layer in 0..3 {
        let (c_in, c_out) = (CHANNELS[layer], CHANNELS[layer + 1]);
        let x = if layer == 0 {
            &input.images[b]
        } else {
            &trace.pooled[layer - 1]
        };
        let y = &trace.conv[layer];
        // each image checks a quarter of the channels, so every channel is checked once a
        // round
        for o in (b % BATCH..c_out).step_by(BATCH) {
            let mut positive = 0;
            for _ in 0..CANDIDATES {
                let (py, px) = (rng.random_range(0..side), rng.random_range(0..side));
                let (want, scale) = direct_conv(x, &input.convs[layer], c_in, side, o, py, px);
                let got = y[o * side * side + py * side + px] as f64;
                let tolerance = 1e-4 * (scale + 1e-3);
                if (got - want.max(0.0)).abs() > tolerance {
                    return Err(failed!(
                        "convolution {} output {o} at ({py}, {px}) is {got:.5}, the direct convolution gives {:.5}",
                        layer + 1,
                        want.max(0.0)
                    ));
                }
                positive += (want > tolerance) as usize;
                if positive == SAMPLES {
                    break;
                }
            }
        }
        if layer < 2 {
            let half = side / 2;
            for o in (b % BATCH..c_out).step_by(BATCH) {
                for py in 0..half {
                    for px in 0..half {
                        let at = |dy: usize, dx: usize| {
                            y[o * side * side + (2 * py + dy) * side + 2 * px + dx]
                        };
                        let want = at(0, 0).max(at(0, 1)).max(at(1, 0)).max(at(1, 1));
                        if trace.pooled[layer][o * half * half + py * half + px] != want {
                            return Err(failed!(
                                "max pooling {} output {o} at ({py}, {px}) is not its window's maximum",
                                layer + 1
                            ));
                        }
                    }
                }
            }
            side = half;
        }
    }
    let features: Vec<f64> = trace.conv[2]
        .chunks(side * side)
        .map(|c| c.iter().map(|v| *v as f64).sum::<f64>() / (side * side) as f64)
        .collect();
    let probs = &trace.probs;
    for (k, want) in softmax64(&input.dense, &features).iter().enumerate() {
        if (probs[k] as f64 - want).abs() > 1e-5 {
            return Err(failed!(
                "class {k}'s probability {:.6} differs from the dense layer and softmax recomputed ({want:.6})",
                probs[k]
            ));
        }
    }
    for (k, want) in input.want[b].iter().enumerate() {
        if (probs[k] as f64 - want).abs() > 1e-4 {
            return Err(failed!(
                "class {k}'s probability {:.6} differs from a direct forward pass ({want:.6})",
                probs[k]
            ));
        }
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
        let trace = forward(&input, b, &mut cols);
        assert!(check(&input, b, &trace).is_ok());
        let caught = |change: &dyn Fn(&mut Trace), what: &str| {
            let mut t = forward(&input, b, &mut Vec::new());
            change(&mut t);
            let err = check(&input, b, &t).unwrap_err();
            assert!(err.to_string().contains(what), "{err}");
        };
        // every output channel of convolution 1 holding the next one's
        let plane = SIDE * SIDE;
        caught(&|t| t.conv[0].rotate_left(plane), "convolution 1");
        // convolution 1's output channels 2 and 5 swapped
        caught(
            &|t| {
                let (a, rest) = t.conv[0].split_at_mut(5 * plane);
                a[2 * plane..3 * plane].swap_with_slice(&mut rest[..plane]);
            },
            "convolution 1",
        );
        // convolution 2's channels 9 and 10 swapped, convolution 3's 33 and 34 (image 1 checks
        // channels 1, 5, 9, ...)
        caught(
            &|t| {
                let p = plane / 4;
                let (a, rest) = t.conv[1].split_at_mut(10 * p);
                a[9 * p..].swap_with_slice(&mut rest[..p]);
            },
            "convolution 2",
        );
        caught(
            &|t| {
                let p = plane / 16;
                let (a, rest) = t.conv[2].split_at_mut(34 * p);
                a[33 * p..].swap_with_slice(&mut rest[..p]);
            },
            "convolution 3",
        );
        // convolution 3 without its ReLU is not checkable from its clamped output; one
        // scaled by 1% is
        caught(
            &|t| t.conv[2].iter_mut().for_each(|v| *v *= 1.01),
            "convolution 3",
        );
        // a pooled value taken from the window's corner instead of its maximum
        caught(
            &|t| {
                let (side, half) = (SIDE / 2, SIDE / 4);
                let y = &t.conv[1][5 * side * side..];
                let at = |i: usize, d: usize| y[(i / half) * 2 * side + (i % half) * 2 + d];
                let i = (0..half * half)
                    .find(|i| at(*i, 0) != at(*i, side + 1))
                    .unwrap();
                let corner = at(i, 0).min(at(i, side + 1));
                t.pooled[1][5 * half * half + i] = corner;
            },
            "max pooling 2",
        );
        // class probabilities shuffled (they still sum to one)
        caught(&|t| t.probs.swap(0, 7), "probability");
        caught(&|t| t.probs.rotate_left(1), "probability");
        // the probabilities not normalised
        caught(
            &|t| t.probs.iter_mut().for_each(|p| *p *= 1.5),
            "probability",
        );
        // a whole pass on the wrong image: every layer consistent, the answer not
        caught(
            &|t| *t = forward(&input, 2, &mut Vec::new()),
            "convolution 1",
        );
    }

    #[test]
    fn a_consistent_but_wrong_network_is_caught_by_the_direct_pass() {
        // a dense layer with two classes' rows swapped, applied consistently
        let input = MlInference.prepare(3);
        let mut wrong = MlInference.prepare(3);
        let n = CHANNELS[3];
        let (a, rest) = wrong.dense.split_at_mut(4 * n);
        a[..n].swap_with_slice(&mut rest[..n]);
        let t = forward(&wrong, 0, &mut Vec::new());
        // the dense layer recomputed from the same weights agrees; the direct pass does not
        let err = check(
            &Input {
                want: input.want.clone(),
                ..wrong
            },
            0,
            &t,
        )
        .unwrap_err();
        assert!(err.to_string().contains("direct forward pass"), "{err}");
    }

    /// The check's share of a round (run with --ignored --nocapture).
    #[test]
    #[ignore]
    fn check_cost() {
        let input = MlInference.prepare(1);
        let mut cols = Vec::new();
        let (mut work, mut checking) = (0.0, 0.0);
        for _ in 0..50 {
            for b in 0..BATCH {
                let t = std::time::Instant::now();
                let trace = forward(&input, b, &mut cols);
                work += t.elapsed().as_secs_f64();
                let t = std::time::Instant::now();
                check(&input, b, &trace).unwrap();
                checking += t.elapsed().as_secs_f64();
            }
        }
        println!("forward {work:.4} s, check {checking:.4} s");
    }
}
