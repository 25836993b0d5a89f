//! cpu.speech_recognition: Geekbench 5's Speech Recognition workload, which turns an
//! utterance into text. Each round recognises 8 generated utterances of 20 words each
//! (spoken digits and commands: "zero".."nine", "go", "stop", "left", "right", "up",
//! "down", "yes", "no", "on", "off"), 6 to 9 s of 16 kHz audio apiece, about 60 s in all;
//! each utterance is a part of the shared-task mode.
//!
//! The recogniser is the classic pipeline. Front end: pre-emphasis, 25 ms Hamming frames
//! every 10 ms, a 512-point real FFT (the `realfft` crate over `rustfft`), 26 mel bands with
//! an energy floor, log, DCT to 13 cepstra (C0..C12). Decoder: Viterbi over a word-loop
//! HMM: each word is its phones in a row, each phone three left-to-right states with a
//! diagonal-Gaussian emission over the cepstra, words reached from a loop node that
//! charges a word-insertion penalty, with optional silence between them; token passing
//! keeps one word-end record per frame, from which the best path's words are read back.
//!
//! The audio is synthesised from the seed: each of 26 phones is a sum of harmonics of a
//! gliding pitch shaped by three formants (resonances) moving from its start to its end
//! frequencies, with per-utterance pitch, loudness and speaking rate, per-phone durations,
//! pauses between some words, and white noise (30 to 54 dB below the vowels, 17.5 dB below
//! the weakest consonants at worst). The acoustic model is trained in `prepare`, before any
//! sentence is drawn, from clean examples of each phone alone (a grid of pitches, lengths
//! and loudnesses; each example's frames split evenly into its three states, the standard
//! flat start; variances floored), so the decoder knows the words and how they sound but
//! not what was said. The front end's energy floor sits 9.5 dB above the loudest noise, so
//! the clean training matches the noisy utterances. Each utterance checks the decoded words
//! against the spoken sentence (word error rate 0: no error in 16,160 words over 101 seeds,
//! nor in 4,800 with three times the noise) and each word's end against where the generator
//! ended it (within 60 ms; where a word runs into one that starts with its last phone,
//! anywhere in those two phones).
//!
//! Written by hand: the MFCC steps around the FFT (filterbank, log, DCT) are a few lines
//! each, and the decoder is a Viterbi recursion over a sparse lattice of states. The Rust
//! speech crates bind C/C++ engines (Vosk, Whisper, PocketSphinx) with models to download,
//! and the Gaussian-HMM crates (hmmlearn ports) decode one dense HMM over a full transition
//! matrix, with no shared emissions, grammar, insertion penalty or word-level backtrace.

use super::Task;
use crate::workload::{failed, Digest, WorkloadError};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};
use std::f64::consts::TAU;
use std::sync::Arc;

pub struct SpeechRecognition;

const RATE: f32 = 16_000.0;
const FRAME: usize = 400; // 25 ms
const HOP: usize = 160; // 10 ms
const NFFT: usize = 512;
const BINS: usize = NFFT / 2 + 1;
const BANDS: usize = 26;
const CEPS: usize = 13;
const STATES: usize = 3; // per phone
const UTTERANCES: usize = 8;
const WORDS: usize = 20;
const PREEMPHASIS: f32 = 0.97;
/// The loudest background noise an utterance gets (standard deviation, full scale 1).
const NOISE_MAX: f32 = 0.02;
/// The front end's energy floor: what white noise of this deviation puts in each band, so
/// that the utterances' background vanishes below it as the training examples' silence does.
const FLOOR_SIGMA: f32 = 3.0 * NOISE_MAX;
/// Variances are floored at this fraction of the training data's overall variance.
const VARIANCE_FLOOR: f64 = 0.02;
const LOG_STAY: f32 = -0.356_674_94; // ln 0.7
const LOG_NEXT: f32 = -1.203_972_8; // ln 0.3
const WORD_PENALTY: f32 = -20.0;
/// How far (in frames) a decoded word's end may lie from where the generator ended it.
const END_TOLERANCE: usize = 6;

/// A phone of the synthetic voice: three formants gliding from `from` to `to` (Hz), its
/// loudness and its typical length.
struct Phone {
    name: &'static str,
    from: [f32; 3],
    to: [f32; 3],
    gain: f32,
    ms: f32,
}

const fn phone(name: &'static str, from: [f32; 3], to: [f32; 3], gain: f32, ms: f32) -> Phone {
    Phone {
        name,
        from,
        to,
        gain,
        ms,
    }
}

#[rustfmt::skip]
static PHONES: [Phone; 26] = [
    // vowels and diphthongs
    phone("iy", [280.0, 2250.0, 3000.0], [280.0, 2250.0, 3000.0], 1.0, 110.0),
    phone("ih", [400.0, 1900.0, 2550.0], [400.0, 1900.0, 2550.0], 1.0, 100.0),
    phone("eh", [560.0, 1750.0, 2450.0], [560.0, 1750.0, 2450.0], 1.0, 110.0),
    phone("ah", [650.0, 1200.0, 2400.0], [650.0, 1200.0, 2400.0], 1.0, 100.0),
    phone("aa", [780.0, 1100.0, 2500.0], [780.0, 1100.0, 2500.0], 1.0, 120.0),
    phone("ao", [580.0, 850.0, 2400.0], [580.0, 850.0, 2400.0], 1.0, 120.0),
    phone("uw", [320.0, 850.0, 2250.0], [320.0, 850.0, 2250.0], 1.0, 120.0),
    phone("ow", [520.0, 950.0, 2400.0], [380.0, 750.0, 2300.0], 1.0, 140.0),
    phone("ay", [760.0, 1150.0, 2500.0], [420.0, 2050.0, 2700.0], 1.0, 160.0),
    phone("aw", [760.0, 1250.0, 2500.0], [450.0, 800.0, 2300.0], 1.0, 160.0),
    phone("ey", [500.0, 1850.0, 2500.0], [320.0, 2250.0, 2900.0], 1.0, 140.0),
    // glides, liquids, nasal
    phone("w", [300.0, 650.0, 2150.0], [350.0, 800.0, 2250.0], 0.6, 70.0),
    phone("r", [430.0, 1150.0, 1550.0], [450.0, 1250.0, 1700.0], 0.7, 70.0),
    phone("l", [380.0, 950.0, 2900.0], [380.0, 950.0, 2900.0], 0.6, 70.0),
    phone("y", [260.0, 2150.0, 3150.0], [300.0, 2000.0, 2900.0], 0.6, 70.0),
    phone("n", [260.0, 1350.0, 2650.0], [260.0, 1350.0, 2650.0], 0.45, 70.0),
    // stops
    phone("d", [300.0, 1700.0, 3300.0], [300.0, 1700.0, 3300.0], 0.35, 60.0),
    phone("g", [300.0, 2000.0, 2700.0], [300.0, 2000.0, 2700.0], 0.35, 60.0),
    phone("t", [400.0, 3800.0, 5200.0], [400.0, 3800.0, 5200.0], 0.3, 60.0),
    phone("k", [350.0, 2600.0, 3400.0], [350.0, 2600.0, 3400.0], 0.3, 60.0),
    phone("p", [300.0, 700.0, 1800.0], [300.0, 700.0, 1800.0], 0.3, 60.0),
    // fricatives
    phone("s", [4500.0, 5800.0, 7200.0], [4500.0, 5800.0, 7200.0], 0.4, 110.0),
    phone("z", [250.0, 4700.0, 6300.0], [250.0, 4700.0, 6300.0], 0.4, 100.0),
    phone("f", [1600.0, 4200.0, 6600.0], [1600.0, 4200.0, 6600.0], 0.25, 100.0),
    phone("th", [1200.0, 3200.0, 5000.0], [1200.0, 3200.0, 5000.0], 0.25, 100.0),
    phone("v", [250.0, 1500.0, 3900.0], [250.0, 1500.0, 3900.0], 0.35, 80.0),
];

static LEXICON: [(&str, &[&str]); 20] = [
    ("zero", &["z", "ih", "r", "ow"]),
    ("one", &["w", "ah", "n"]),
    ("two", &["t", "uw"]),
    ("three", &["th", "r", "iy"]),
    ("four", &["f", "ao", "r"]),
    ("five", &["f", "ay", "v"]),
    ("six", &["s", "ih", "k", "s"]),
    ("seven", &["s", "eh", "v", "ah", "n"]),
    ("eight", &["ey", "t"]),
    ("nine", &["n", "ay", "n"]),
    ("go", &["g", "ow"]),
    ("stop", &["s", "t", "aa", "p"]),
    ("left", &["l", "eh", "f", "t"]),
    ("right", &["r", "ay", "t"]),
    ("up", &["ah", "p"]),
    ("down", &["d", "aw", "n"]),
    ("yes", &["y", "eh", "s"]),
    ("no", &["n", "ow"]),
    ("on", &["aa", "n"]),
    ("off", &["ao", "f"]),
];

fn phone_index(name: &str) -> usize {
    PHONES
        .iter()
        .position(|p| p.name == name)
        .expect("the lexicon's phones are in the phone table")
}

/// A stretch of synthetic signal: a phone for some samples, or silence.
#[derive(Clone, Copy)]
struct Segment {
    phone: Option<usize>,
    samples: usize,
}

/// Who speaks an utterance, and in what room.
struct Voice {
    f0: f32,
    amplitude: f32,
    noise: f32,
}

fn samples(ms: f32) -> usize {
    (ms * RATE / 1000.0).round() as usize
}

/// Harmonic amplitudes of `phone` at fraction `x` of its length, for pitch `f0`, scaled so
/// that the sum of the harmonics has an RMS of 1.
fn harmonics(phone: &Phone, x: f32, f0: f32, amps: &mut Vec<f32>) {
    const WEIGHT: [f32; 3] = [1.0, 0.7, 0.5];
    let formants: [f32; 3] =
        std::array::from_fn(|i| phone.from[i] + (phone.to[i] - phone.from[i]) * x);
    amps.clear();
    let mut k = 1;
    while k as f32 * f0 < 7800.0 {
        let h = k as f32 * f0;
        let a: f32 = formants
            .iter()
            .zip(WEIGHT)
            .map(|(&f, w)| {
                let bandwidth = 50.0 + 0.07 * f;
                w / (1.0 + ((h - f) / bandwidth).powi(2))
            })
            .sum();
        amps.push(a);
        k += 1;
    }
    let rms = (amps.iter().map(|a| a * a).sum::<f32>() / 2.0).sqrt();
    amps.iter_mut().for_each(|a| *a /= rms);
    amps.resize(amps.len().next_multiple_of(8), 0.0); // whole lanes for `render`
}

/// The signal of `segments` in `voice`: harmonics of a pitch that falls over the utterance
/// and wavers, shaped per 2 ms block by the phone's formants, with a loudness that glides
/// (about 5 ms) to each phone's, then white noise if `rng` is given.
fn render(segments: &[Segment], voice: &Voice, rng: Option<&mut Pcg64>) -> Vec<f32> {
    const BLOCK: usize = 32;
    let total: usize = segments.iter().map(|s| s.samples).sum();
    let seconds = total as f64 / RATE as f64;
    let mut out = Vec::with_capacity(total);
    let mut amps = Vec::new();
    // per harmonic: its phasor now and its turn per sample, over a block
    let (mut re, mut im, mut turn_re, mut turn_im) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut theta, mut gain) = (0.0f64, 0.0f32);
    for segment in segments {
        let target = segment.phone.map_or(0.0, |p| PHONES[p].gain) * voice.amplitude;
        let mut n = 0;
        while n < segment.samples {
            let length = BLOCK.min(segment.samples - n);
            let t = out.len() as f64 / RATE as f64;
            let f0 = voice.f0 as f64
                * (1.08 - 0.16 * t / seconds)
                * (1.0 + 0.03 * (TAU * 3.0 * t).sin());
            let omega = TAU * f0 / RATE as f64;
            if let Some(p) = segment.phone {
                let x = (n + length / 2) as f32 / segment.samples as f32;
                harmonics(&PHONES[p], x, f0 as f32, &mut amps);
            } // a silence keeps the last phone's harmonics while its loudness fades
            re.clear();
            im.clear();
            turn_re.clear();
            turn_im.clear();
            let (step, turn) = ((theta.cos(), theta.sin()), (omega.cos(), omega.sin()));
            let (mut phase, mut rotation) = (step, turn);
            for _ in 0..amps.len() {
                re.push(phase.0 as f32);
                im.push(phase.1 as f32);
                turn_re.push(rotation.0 as f32);
                turn_im.push(rotation.1 as f32);
                phase = (
                    phase.0 * step.0 - phase.1 * step.1,
                    phase.0 * step.1 + phase.1 * step.0,
                );
                rotation = (
                    rotation.0 * turn.0 - rotation.1 * turn.1,
                    rotation.0 * turn.1 + rotation.1 * turn.0,
                );
            }
            for _ in 0..length {
                gain += (target - gain) / 80.0;
                let mut lanes = [0.0f32; 8];
                for ((((a, r), i), tr), ti) in amps
                    .chunks_exact(8)
                    .zip(re.chunks_exact_mut(8))
                    .zip(im.chunks_exact_mut(8))
                    .zip(turn_re.chunks_exact(8))
                    .zip(turn_im.chunks_exact(8))
                {
                    for j in 0..8 {
                        lanes[j] += a[j] * i[j];
                        (r[j], i[j]) = (r[j] * tr[j] - i[j] * ti[j], r[j] * ti[j] + i[j] * tr[j]);
                    }
                }
                out.push(gain * lanes.iter().sum::<f32>());
            }
            theta = (theta + omega * length as f64) % TAU;
            n += length;
        }
    }
    if let Some(rng) = rng {
        // near-Gaussian: the sum of four uniform deviates, scaled to deviation 1
        let scale = voice.noise * 3f32.sqrt() / 32768.0;
        for x in out.iter_mut() {
            let bits = rng.random::<u64>();
            let sum: u32 = (0..4).map(|i| (bits >> (16 * i)) as u16 as u32).sum();
            *x += (sum as f32 - 131_070.0) * scale;
        }
    }
    out
}

/// Pre-emphasis, framing, Hamming window, FFT, mel filterbank with its floor, log, DCT.
pub struct FrontEnd {
    fft: Arc<dyn RealToComplex<f32>>,
    window: Vec<f32>,
    bands: Vec<(usize, Vec<f32>)>, // first FFT bin and the triangle's weights from there
    floor: Vec<f32>,
    dct: Vec<f32>, // CEPS x BANDS
}

/// The front end's working buffers.
pub struct Buffers {
    frame: Vec<f32>,
    spectrum: Vec<Complex<f32>>,
    fft_scratch: Vec<Complex<f32>>,
    power: Vec<f32>,
}

fn mel(hz: f32) -> f32 {
    2595.0 * (1.0 + hz / 700.0).log10()
}

fn hz(mel: f32) -> f32 {
    700.0 * (10f32.powf(mel / 2595.0) - 1.0)
}

impl FrontEnd {
    fn new() -> FrontEnd {
        let fft = RealFftPlanner::<f32>::new().plan_fft_forward(NFFT);
        let window: Vec<f32> = (0..FRAME)
            .map(|n| 0.54 - 0.46 * (std::f32::consts::TAU * n as f32 / (FRAME - 1) as f32).cos())
            .collect();
        let (low, high) = (mel(64.0), mel(RATE / 2.0));
        let edges: Vec<f32> = (0..BANDS + 2)
            .map(|i| hz(low + (high - low) * i as f32 / (BANDS + 1) as f32) * NFFT as f32 / RATE)
            .collect();
        let bands: Vec<(usize, Vec<f32>)> = (0..BANDS)
            .map(|b| {
                let (left, centre, right) = (edges[b], edges[b + 1], edges[b + 2]);
                let first = left.ceil() as usize;
                let weights = (first..=(right.floor() as usize).min(BINS - 1))
                    .map(|k| {
                        let k = k as f32;
                        if k <= centre {
                            (k - left) / (centre - left)
                        } else {
                            (right - k) / (right - centre)
                        }
                    })
                    .collect();
                (first, weights)
            })
            .collect();
        // white noise of deviation s puts s^2 * sum(window^2) * |pre-emphasis|^2 in each bin
        let window_energy: f32 = window.iter().map(|w| w * w).sum();
        let floor = bands
            .iter()
            .map(|(first, weights)| {
                let response: f32 = weights
                    .iter()
                    .enumerate()
                    .map(|(i, w)| {
                        let omega = std::f32::consts::TAU * (first + i) as f32 / NFFT as f32;
                        w * (1.0 + PREEMPHASIS * PREEMPHASIS - 2.0 * PREEMPHASIS * omega.cos())
                    })
                    .sum();
                FLOOR_SIGMA * FLOOR_SIGMA * window_energy * response
            })
            .collect();
        let dct = (0..CEPS * BANDS)
            .map(|i| {
                let (j, b) = (i / BANDS, i % BANDS);
                (2.0 / BANDS as f32).sqrt()
                    * (std::f32::consts::PI * j as f32 * (b as f32 + 0.5) / BANDS as f32).cos()
            })
            .collect();
        FrontEnd {
            fft,
            window,
            bands,
            floor,
            dct,
        }
    }

    fn buffers(&self) -> Buffers {
        Buffers {
            frame: self.fft.make_input_vec(),
            spectrum: self.fft.make_output_vec(),
            fft_scratch: self.fft.make_scratch_vec(),
            power: vec![0.0; BINS],
        }
    }

    /// The cepstra of `audio`, CEPS per frame, into `features`; returns the frame count.
    fn features(&self, audio: &[f32], buffers: &mut Buffers, features: &mut Vec<f32>) -> usize {
        let frames = if audio.len() < FRAME {
            0
        } else {
            1 + (audio.len() - FRAME) / HOP
        };
        features.clear();
        let mut log_mel = [0.0f32; BANDS];
        for t in 0..frames {
            let start = t * HOP;
            let mut before = if start > 0 {
                audio[start - 1]
            } else {
                audio[0]
            };
            for (n, (x, w)) in audio[start..start + FRAME]
                .iter()
                .zip(&self.window)
                .enumerate()
            {
                buffers.frame[n] = (x - PREEMPHASIS * before) * w;
                before = *x;
            }
            buffers.frame[FRAME..].fill(0.0);
            self.fft
                .process_with_scratch(
                    &mut buffers.frame,
                    &mut buffers.spectrum,
                    &mut buffers.fft_scratch,
                )
                .expect("buffers of the planned lengths");
            for (p, c) in buffers.power.iter_mut().zip(&buffers.spectrum) {
                *p = c.norm_sqr();
            }
            for ((l, (first, weights)), floor) in
                log_mel.iter_mut().zip(&self.bands).zip(&self.floor)
            {
                let energy: f32 = weights
                    .iter()
                    .zip(&buffers.power[*first..])
                    .map(|(w, p)| w * p)
                    .sum();
                *l = energy.max(*floor).ln();
            }
            for row in self.dct.chunks_exact(BANDS) {
                features.push(row.iter().zip(&log_mel).map(|(d, l)| d * l).sum());
            }
        }
        frames
    }
}

/// Diagonal Gaussians over the cepstra: one per phone state, then silence's.
pub struct Model {
    means: Vec<f32>,
    inverse_variances: Vec<f32>,
    constants: Vec<f32>, // -0.5 * sum ln(2 pi variance)
}

const SILENCE: usize = PHONES.len() * STATES; // the silence pdf's index
const PDFS: usize = SILENCE + 1;

impl Model {
    /// Flat-start training on clean examples of each phone alone: for a grid of pitches,
    /// lengths and loudnesses, the frames wholly inside the phone are split evenly into its
    /// states; silence is a silent recording through the same front end.
    fn train(front: &FrontEnd, buffers: &mut Buffers) -> Model {
        let mut sums = vec![0.0f64; PDFS * CEPS];
        let mut squares = vec![0.0f64; PDFS * CEPS];
        let mut counts = vec![0usize; PDFS];
        let mut features = Vec::new();
        let mut add = |pdf: usize, frame: &[f32], counts: &mut Vec<usize>| {
            counts[pdf] += 1;
            for (d, &x) in frame.iter().enumerate() {
                sums[pdf * CEPS + d] += x as f64;
                squares[pdf * CEPS + d] += (x as f64).powi(2);
            }
        };
        let pad = samples(50.0);
        for (p, phone) in PHONES.iter().enumerate() {
            for f0 in [90.0, 115.0, 140.0, 165.0, 190.0] {
                for stretch in [0.8, 1.25] {
                    let length = samples(phone.ms * stretch);
                    let segments = [
                        Segment {
                            phone: None,
                            samples: pad,
                        },
                        Segment {
                            phone: Some(p),
                            samples: length,
                        },
                        Segment {
                            phone: None,
                            samples: pad,
                        },
                    ];
                    let voice = Voice {
                        f0,
                        amplitude: 1.0,
                        noise: 0.0,
                    };
                    let loud = render(&segments, &voice, None);
                    for amplitude in [0.6, 1.0] {
                        // the voice is linear in its amplitude
                        let audio: Vec<f32> = loud.iter().map(|x| x * amplitude).collect();
                        let frames = front.features(&audio, buffers, &mut features);
                        let inside: Vec<usize> = (0..frames)
                            .filter(|t| t * HOP >= pad && t * HOP + FRAME <= pad + length)
                            .collect();
                        for (i, &t) in inside.iter().enumerate() {
                            let state = i * STATES / inside.len();
                            add(
                                p * STATES + state,
                                &features[t * CEPS..(t + 1) * CEPS],
                                &mut counts,
                            );
                        }
                    }
                }
            }
        }
        let silent = render(
            &[Segment {
                phone: None,
                samples: samples(300.0),
            }],
            &Voice {
                f0: 100.0,
                amplitude: 1.0,
                noise: 0.0,
            },
            None,
        );
        let frames = front.features(&silent, buffers, &mut features);
        for t in 0..frames {
            add(SILENCE, &features[t * CEPS..(t + 1) * CEPS], &mut counts);
        }
        let n: usize = counts.iter().sum();
        let global: Vec<f64> = (0..CEPS)
            .map(|d| {
                let s: f64 = (0..PDFS).map(|p| sums[p * CEPS + d]).sum();
                let q: f64 = (0..PDFS).map(|p| squares[p * CEPS + d]).sum();
                q / n as f64 - (s / n as f64).powi(2)
            })
            .collect();
        let mut model = Model {
            means: vec![0.0; PDFS * CEPS],
            inverse_variances: vec![0.0; PDFS * CEPS],
            constants: vec![0.0; PDFS],
        };
        for p in 0..PDFS {
            assert!(counts[p] > 0, "every state has training frames");
            let mut constant = 0.0f64;
            for d in 0..CEPS {
                let mean = sums[p * CEPS + d] / counts[p] as f64;
                let variance = (squares[p * CEPS + d] / counts[p] as f64 - mean * mean)
                    .max(VARIANCE_FLOOR * global[d]);
                model.means[p * CEPS + d] = mean as f32;
                model.inverse_variances[p * CEPS + d] = (1.0 / variance) as f32;
                constant -= 0.5 * (TAU * variance).ln();
            }
            model.constants[p] = constant as f32;
        }
        model
    }
}

/// The word-loop decoding network: every word's states in a row, then silence's one state.
struct Network {
    pdf: Vec<usize>,
    first: Vec<usize>, // per word
    last: Vec<usize>,
}

impl Network {
    fn new() -> Network {
        let (mut pdf, mut first, mut last) = (Vec::new(), Vec::new(), Vec::new());
        for (_, phones) in LEXICON.iter() {
            first.push(pdf.len());
            for name in phones.iter() {
                let p = phone_index(name);
                pdf.extend((0..STATES).map(|s| p * STATES + s));
            }
            last.push(pdf.len() - 1);
        }
        pdf.push(SILENCE);
        Network { pdf, first, last }
    }
    fn silence(&self) -> usize {
        self.pdf.len() - 1
    }
}

pub struct Utterance {
    audio: Vec<f32>,
    words: Vec<usize>,
    /// Per word, the samples its end may be heard between: where it ends, give or take
    /// END_TOLERANCE frames; where the next word follows without a pause and starts with
    /// the phone this one ends with, anywhere in the two phones that run together.
    ends: Vec<(usize, usize)>,
}

fn utterance(rng: &mut Pcg64) -> Utterance {
    let voice = Voice {
        f0: rng.random_range(95.0..170.0),
        amplitude: rng.random_range(0.6..1.0),
        noise: rng.random_range(0.002..NOISE_MAX),
    };
    let rate: f32 = rng.random_range(0.85..1.2);
    let mut segments = vec![Segment {
        phone: None,
        samples: samples(rng.random_range(200.0..300.0)),
    }];
    let mut at = segments[0].samples;
    // per word: the word, whether a pause came before it, where its first phone ends, where
    // its last phone starts, where it ends
    let mut spoken: Vec<(usize, bool, usize, usize, usize)> = Vec::new();
    for i in 0..WORDS {
        let paused = i > 0 && rng.random_bool(0.5);
        if paused {
            let pause = samples(rng.random_range(30.0..200.0));
            segments.push(Segment {
                phone: None,
                samples: pause,
            });
            at += pause;
        }
        let word = rng.random_range(0..LEXICON.len());
        let (mut first_end, mut last_start) = (0, 0);
        for (k, name) in LEXICON[word].1.iter().enumerate() {
            let p = phone_index(name);
            let length = samples(PHONES[p].ms * rate * rng.random_range(0.8..1.25));
            segments.push(Segment {
                phone: Some(p),
                samples: length,
            });
            last_start = at;
            at += length;
            if k == 0 {
                first_end = at;
            }
        }
        spoken.push((word, paused, first_end, last_start, at));
    }
    segments.push(Segment {
        phone: None,
        samples: samples(rng.random_range(200.0..300.0)),
    });
    let tolerance = END_TOLERANCE * HOP;
    let ends = (0..WORDS)
        .map(|i| {
            let (word, _, _, last_start, end) = spoken[i];
            match spoken.get(i + 1) {
                Some(&(next, false, next_first_end, _, _))
                    if LEXICON[next].1[0] == *LEXICON[word].1.last().expect("a phone") =>
                {
                    (last_start - tolerance, next_first_end + tolerance)
                }
                _ => (end - tolerance, end + tolerance),
            }
        })
        .collect();
    let audio = render(&segments, &voice, Some(rng));
    Utterance {
        audio,
        words: spoken.iter().map(|s| s.0).collect(),
        ends,
    }
}

pub struct Input {
    front: FrontEnd,
    model: Model,
    network: Network,
    utterances: Vec<Utterance>,
}

pub struct Scratch {
    buffers: Buffers,
    features: Vec<f32>,
    emissions: Vec<f32>,
    score: Vec<f32>,
    link: Vec<u32>,
    next_score: Vec<f32>,
    next_link: Vec<u32>,
    records: Vec<(usize, usize, u32)>, // (word, last frame, previous record)
}

const NO_LINK: u32 = u32::MAX;

/// A decoded word: which, and the frame it ends on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Word {
    word: usize,
    end: usize,
}

/// Recognises `audio`: cepstra, emission log-likelihoods, Viterbi over the word loop.
fn decode(input: &Input, audio: &[f32], s: &mut Scratch) -> Vec<Word> {
    let frames = input.front.features(audio, &mut s.buffers, &mut s.features);
    let model = &input.model;
    s.emissions.clear();
    for x in s.features.chunks_exact(CEPS) {
        for p in 0..PDFS {
            let (mean, inverse) = (
                &model.means[p * CEPS..(p + 1) * CEPS],
                &model.inverse_variances[p * CEPS..(p + 1) * CEPS],
            );
            let distance: f32 = x
                .iter()
                .zip(mean)
                .zip(inverse)
                .map(|((x, m), i)| (x - m) * (x - m) * i)
                .sum();
            s.emissions.push(model.constants[p] - 0.5 * distance);
        }
    }
    let net = &input.network;
    let states = net.pdf.len();
    s.score.clear();
    s.score.resize(states, f32::NEG_INFINITY);
    s.link.clear();
    s.link.resize(states, NO_LINK);
    s.next_score.resize(states, f32::NEG_INFINITY);
    s.next_link.resize(states, NO_LINK);
    s.records.clear();
    // the loop node: the best path that has just finished a word (or silence), and its words
    let (mut loop_score, mut loop_link) = (0.0f32, NO_LINK);
    for t in 0..frames {
        let e = &s.emissions[t * PDFS..(t + 1) * PDFS];
        for w in 0..LEXICON.len() {
            let (first, last) = (net.first[w], net.last[w]);
            let (stay, enter) = (s.score[first] + LOG_STAY, loop_score + WORD_PENALTY);
            (s.next_score[first], s.next_link[first]) = if stay >= enter {
                (stay, s.link[first])
            } else {
                (enter, loop_link)
            };
            s.next_score[first] += e[net.pdf[first]];
            for i in first + 1..=last {
                let (stay, advance) = (s.score[i] + LOG_STAY, s.score[i - 1] + LOG_NEXT);
                (s.next_score[i], s.next_link[i]) = if stay >= advance {
                    (stay, s.link[i])
                } else {
                    (advance, s.link[i - 1])
                };
                s.next_score[i] += e[net.pdf[i]];
            }
        }
        let silence = net.silence();
        let stay = s.score[silence] + LOG_STAY;
        (s.next_score[silence], s.next_link[silence]) = if stay >= loop_score {
            (stay, s.link[silence])
        } else {
            (loop_score, loop_link)
        };
        s.next_score[silence] += e[SILENCE];
        std::mem::swap(&mut s.score, &mut s.next_score);
        std::mem::swap(&mut s.link, &mut s.next_link);
        // leaving silence keeps the words so far; leaving a word adds a record
        (loop_score, loop_link) = (s.score[silence] + LOG_NEXT, s.link[silence]);
        let mut best_word = None;
        for w in 0..LEXICON.len() {
            let leave = s.score[net.last[w]] + LOG_NEXT;
            if leave > loop_score {
                (loop_score, best_word) = (leave, Some(w));
            }
        }
        if let Some(w) = best_word {
            s.records.push((w, t, s.link[net.last[w]]));
            loop_link = (s.records.len() - 1) as u32;
        }
    }
    let mut words = Vec::new();
    while loop_link != NO_LINK {
        let (word, end, previous) = s.records[loop_link as usize];
        words.push(Word { word, end });
        loop_link = previous;
    }
    words.reverse();
    words
}

fn sentence(words: impl Iterator<Item = usize>) -> String {
    words.map(|w| LEXICON[w].0).collect::<Vec<_>>().join(" ")
}

/// Word-level edit distance between what was said and what was decoded.
fn errors(said: &[usize], decoded: &[usize]) -> usize {
    let mut row: Vec<usize> = (0..=decoded.len()).collect();
    for (i, a) in said.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, b) in decoded.iter().enumerate() {
            let substitute = diagonal + (a != b) as usize;
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[decoded.len()]
}

/// The decoded words must be the spoken ones (word error rate 0), each ending within
/// END_TOLERANCE frames of where it was spoken to end.
fn check(utterance: &Utterance, decoded: &[Word]) -> Result<(), WorkloadError> {
    let said = &utterance.words;
    let heard: Vec<usize> = decoded.iter().map(|w| w.word).collect();
    if heard != *said {
        return Err(failed!(
            "heard \"{}\" for \"{}\" (word error rate {:.0}%)",
            sentence(heard.iter().copied()),
            sentence(said.iter().copied()),
            100.0 * errors(said, &heard) as f64 / said.len() as f64
        ));
    }
    for (w, &(early, late)) in decoded.iter().zip(&utterance.ends) {
        let centre = w.end * HOP + FRAME / 2;
        if centre < early || centre > late {
            return Err(failed!(
                "\"{}\" decoded as ending at {:.2} s, spoken to end between {:.2} and {:.2} s",
                LEXICON[w.word].0,
                centre as f32 / RATE,
                early as f32 / RATE,
                late as f32 / RATE
            ));
        }
    }
    Ok(())
}

impl Task for SpeechRecognition {
    type Input = Input;
    type Scratch = Scratch;
    const NAME: &'static str = "cpu.speech_recognition";
    const SECTION: &'static str = "floating_point";
    const DESCRIPTION: &'static str = "MFCC features and Viterbi decoding over a word-loop HMM recognise 8 generated 20-word utterances (work: words)";
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 17;
    const WORK_UNIT: &'static str = "words";
    const PARTS: usize = UTTERANCES;

    fn prepare(&self, seed: u64) -> Input {
        let front = FrontEnd::new();
        let model = Model::train(&front, &mut front.buffers());
        let mut rng = Pcg64::seed_from_u64(seed);
        let utterances = (0..UTTERANCES).map(|_| utterance(&mut rng)).collect();
        Input {
            front,
            model,
            network: Network::new(),
            utterances,
        }
    }

    fn scratch(&self, input: &Input) -> Scratch {
        Scratch {
            buffers: input.front.buffers(),
            features: Vec::new(),
            emissions: Vec::new(),
            score: Vec::new(),
            link: Vec::new(),
            next_score: Vec::new(),
            next_link: Vec::new(),
            records: Vec::new(),
        }
    }

    fn work(&self, _input: &Input) -> f64 {
        (UTTERANCES * WORDS) as f64
    }

    fn part(
        &self,
        input: &Input,
        scratch: &mut Scratch,
        index: usize,
    ) -> Result<u64, WorkloadError> {
        let utterance = &input.utterances[index];
        let decoded = decode(input, &utterance.audio, scratch);
        check(utterance, &decoded).map_err(|e| failed!("utterance {index}: {e}"))?;
        let mut digest = Digest::new();
        for w in &decoded {
            digest.word((w.word as u64) << 32 | w.end as u64);
        }
        Ok(digest.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_recognises_every_word_and_its_checksum_follows_the_seed() {
        let input = SpeechRecognition.prepare(1);
        let mut scratch = SpeechRecognition.scratch(&input);
        let first = SpeechRecognition.round(&input, &mut scratch).unwrap();
        assert_eq!(
            first,
            SpeechRecognition.round(&input, &mut scratch).unwrap()
        );
        let again = SpeechRecognition.prepare(1);
        assert_eq!(
            first,
            SpeechRecognition.round(&again, &mut scratch).unwrap()
        );
        let other = SpeechRecognition.prepare(2);
        assert_ne!(
            first,
            SpeechRecognition.round(&other, &mut scratch).unwrap()
        );
    }

    #[test]
    fn every_word_alone_is_recognised_and_noise_alone_is_no_word() {
        let input = SpeechRecognition.prepare(1);
        let mut scratch = SpeechRecognition.scratch(&input);
        let mut rng = Pcg64::seed_from_u64(7);
        let voice = Voice {
            f0: 120.0,
            amplitude: 0.8,
            noise: NOISE_MAX,
        };
        let pause = Segment {
            phone: None,
            samples: samples(250.0),
        };
        for (w, (_, phones)) in LEXICON.iter().enumerate() {
            let mut segments = vec![pause];
            for name in phones.iter() {
                let p = phone_index(name);
                segments.push(Segment {
                    phone: Some(p),
                    samples: samples(PHONES[p].ms),
                });
            }
            segments.push(pause);
            let audio = render(&segments, &voice, Some(&mut rng));
            let heard: Vec<usize> = decode(&input, &audio, &mut scratch)
                .iter()
                .map(|w| w.word)
                .collect();
            assert_eq!(heard, [w], "{}", LEXICON[w].0);
        }
        let noise = render(&[pause, pause, pause, pause], &voice, Some(&mut rng));
        assert!(decode(&input, &noise, &mut scratch).is_empty());
    }

    #[test]
    fn a_substituted_dropped_added_or_misplaced_word_is_caught() {
        let input = SpeechRecognition.prepare(3);
        let mut scratch = SpeechRecognition.scratch(&input);
        let utterance = &input.utterances[0];
        let decoded = decode(&input, &utterance.audio, &mut scratch);
        assert!(check(utterance, &decoded).is_ok());

        let mut substituted = decoded.clone();
        substituted[5].word = (substituted[5].word + 1) % LEXICON.len();
        assert!(check(utterance, &substituted)
            .unwrap_err()
            .to_string()
            .contains("word error rate 5%"));

        let mut dropped = decoded.clone();
        dropped.remove(WORDS - 1);
        assert!(check(utterance, &dropped).is_err());

        let mut added = decoded.clone();
        added.insert(9, decoded[9]);
        assert!(check(utterance, &added).is_err());

        let mut misplaced = decoded.clone();
        misplaced[3].end += 2 * END_TOLERANCE;
        assert!(check(utterance, &misplaced)
            .unwrap_err()
            .to_string()
            .contains("ending at"));
    }
}
