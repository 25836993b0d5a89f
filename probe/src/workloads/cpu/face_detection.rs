//! cpu.face_detection: Geekbench 5's Face Detection workload, finding the faces in a photo.
//! A generated 1024x768 grey photo of textured clutter (waves, blocks, discs, grain) holds
//! 6 to 10 synthetic faces at seeded places: an oval head under dark hair, brows, eyes
//! with dark irises in pale whites, a nose ridge brighter than its sides, nostrils, a
//! mouth; 56 to 112 px wide, of seeded skin brightness and tilted up to 8.6 degrees.
//!
//! The detector is the rustface crate (a Rust port of SeetaFace Detection: a funnel
//! cascade of LAB boosted classifiers on integral images, then SURF-feature MLP stages,
//! over a sliding window on an image pyramid, and non-maximum suppression), with the
//! SeetaFace frontal model that ships inside the crate's package: build.rs finds it there
//! and the binary embeds it, so nothing is downloaded or read at run time. Hand-written
//! here: only the photo and the check, which no library does; the detection is rustface's
//! own `detect`, timed whole.
//!
//! A round is four horizontal bands of 192 rows, each detected on its own with the 72
//! rows above and below that a window around a face of the band needs (1.56 times the
//! photo's rows in all), so the bands are parts a shared run hands out. A band owns
//! the faces whose true box centre lies in it and must find each once (IoU >= 0.5 with
//! the box SeetaFace puts around a face: brows to chin, 1.05 face widths square), and no
//! box centred in it may miss every face: found boxes equal the faces.

use super::{Digest, Task};
use crate::workload::{failed, WorkloadError};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use rustface::{Detector, ImageData};
use std::cell::RefCell;

pub struct FaceDetection;

const WIDTH: usize = 1024;
const HEIGHT: usize = 768;
const BANDS: usize = 4;
const BAND: usize = HEIGHT / BANDS;
/// Rows a band is widened by on each side: half the largest face box and some.
const MARGIN: usize = 72;
const SIZES: std::ops::Range<f32> = 56.0..112.0;
const MAX_TILT: f32 = 0.15; // radians
/// Detections scoring below this are dropped: over 500 seeds the faces scored 6.5 or more
/// and boxes on clutter under 3.7.
const THRESHOLD: f64 = 5.0;

static MODEL: &[u8] = include_bytes!(env!("SEETAFACE_MODEL"));

thread_local! {
    /// The detector keeps working buffers between calls but is not Send, so each thread
    /// that runs parts has its own, built from the embedded model (untimed, in `scratch`).
    static DETECTOR: RefCell<Option<Box<dyn Detector>>> = const { RefCell::new(None) };
}

fn with_detector<R>(work: impl FnOnce(&mut dyn Detector) -> R) -> R {
    DETECTOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let detector = slot.get_or_insert_with(|| {
            let model = rustface::read_model(MODEL).expect("the embedded SeetaFace model reads");
            let mut detector = rustface::create_detector_with_model(model);
            detector.set_max_face_size((SIZES.end * 1.3) as u32);
            detector.set_pyramid_scale_factor(0.8);
            detector.set_slide_window_step(4, 4);
            detector.set_score_thresh(THRESHOLD);
            detector
        });
        work(detector.as_mut())
    })
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Rect {
    x: f32,
    y: f32,
    w: f32,
    h: f32,
}

impl Rect {
    fn centre_y(&self) -> f32 {
        self.y + self.h / 2.0
    }

    fn iou(&self, other: &Rect) -> f32 {
        let across = (self.x + self.w).min(other.x + other.w) - self.x.max(other.x);
        let down = (self.y + self.h).min(other.y + other.h) - self.y.max(other.y);
        let both = across.max(0.0) * down.max(0.0);
        both / (self.w * self.h + other.w * other.h - both)
    }
}

/// A box the detector found, in photo coordinates.
#[derive(Clone, Copy, Debug)]
struct Found {
    rect: Rect,
    score: f64,
}

struct Face {
    cx: f32,
    cy: f32,
    size: f32, // head width
    tilt: f32,
    skin: f32,
}

impl Face {
    /// The box SeetaFace draws around such a face (measured on this generator).
    fn truth(&self) -> Rect {
        let side = 1.05 * self.size;
        Rect {
            x: self.cx - side / 2.0,
            y: self.cy + 0.04 * self.size - side / 2.0,
            w: side,
            h: side,
        }
    }
}

pub struct Input {
    grey: Vec<u8>,
    truth: Vec<Rect>,
}

/// 1 well inside a shape, 0 well outside, a linear ramp `edge` wide across its border.
fn inside(edge: f32, distance: f32) -> f32 {
    (0.5 - distance / (2.0 * edge)).clamp(0.0, 1.0)
}

/// Roughly the distance (in face widths) of (u, v) outside the ellipse at (cu, cv).
fn ellipse(u: f32, v: f32, cu: f32, cv: f32, a: f32, b: f32) -> f32 {
    let r = (((u - cu) / a).powi(2) + ((v - cv) / b).powi(2)).sqrt();
    (r - 1.0) * a.min(b)
}

fn draw_face(photo: &mut [f32], face: &Face) {
    let reach = face.size * 0.9;
    let (cos, sin) = (face.tilt.cos(), face.tilt.sin());
    let edge = 1.2 / face.size; // a pixel and a bit, in face widths
    let b = face.skin;
    let (x0, x1) = ((face.cx - reach) as usize, (face.cx + reach) as usize);
    let (y0, y1) = ((face.cy - reach) as usize, (face.cy + reach) as usize);
    for y in y0..=y1.min(HEIGHT - 1) {
        for x in x0..=x1.min(WIDTH - 1) {
            let (dx, dy) = (x as f32 - face.cx, y as f32 - face.cy);
            let u = (cos * dx + sin * dy) / face.size;
            let v = (cos * dy - sin * dx) / face.size;
            let pixel = &mut photo[y * WIDTH + x];
            let hair = inside(edge, ellipse(u, v, 0.0, -0.12, 0.56, 0.66));
            let around = *pixel * (1.0 - hair) + 0.12 * b * hair;
            let head = inside(edge, ellipse(u, v, 0.0, 0.05, 0.46, 0.6));
            let mut skin = b * (1.0 - 0.35 * ((u / 0.46).powi(2) + ((v - 0.05) / 0.6).powi(2)));
            for side in [-1.0f32, 1.0] {
                let brow = inside(edge, ellipse(u, v, side * 0.19, -0.2, 0.12, 0.03));
                skin = skin * (1.0 - brow) + 0.2 * b * brow;
                let socket = inside(3.0 * edge, ellipse(u, v, side * 0.19, -0.1, 0.13, 0.07));
                skin *= 1.0 - 0.25 * socket;
                let white = inside(edge, ellipse(u, v, side * 0.19, -0.1, 0.09, 0.04));
                skin = skin * (1.0 - white) + 0.95 * b.max(0.6) * white;
                let iris = inside(edge, ellipse(u, v, side * 0.19, -0.1, 0.04, 0.04));
                skin = skin * (1.0 - iris) + 0.08 * iris;
                let nostril = inside(edge, ellipse(u, v, side * 0.05, 0.16, 0.03, 0.018));
                skin *= 1.0 - 0.6 * nostril;
                let flank = inside(2.0 * edge, ellipse(u, v, side * 0.06, 0.06, 0.02, 0.1));
                skin *= 1.0 - 0.12 * flank;
            }
            let ridge = inside(2.0 * edge, ellipse(u, v, 0.0, 0.03, 0.035, 0.14));
            skin *= 1.0 + 0.15 * ridge;
            let mouth = inside(edge, ellipse(u, v, 0.0, 0.32, 0.15, 0.035));
            skin = skin * (1.0 - mouth) + 0.25 * b * mouth;
            *pixel = around * (1.0 - head) + skin * head;
        }
    }
}

/// The photo (grey, row-major) and its faces; `faces`: how many to put in (at most).
fn photo(seed: u64, faces: usize) -> (Vec<u8>, Vec<Face>) {
    let mut rng = Pcg64::seed_from_u64(seed);
    let waves: Vec<[f32; 4]> = (0..6)
        .map(|_| {
            [
                rng.random_range(0.005..0.08),
                rng.random_range(0.005..0.08),
                rng.random_range(0.0..std::f32::consts::TAU),
                rng.random_range(0.02..0.08),
            ]
        })
        .collect();
    let mut light: Vec<f32> = (0..WIDTH * HEIGHT)
        .map(|i| {
            let (x, y) = ((i % WIDTH) as f32, (i / WIDTH) as f32);
            0.45 + waves
                .iter()
                .map(|[fx, fy, phase, a]| a * (x * fx + y * fy + phase).sin())
                .sum::<f32>()
        })
        .collect();
    for _ in 0..150 {
        let (bx, by) = (rng.random_range(0..WIDTH), rng.random_range(0..HEIGHT));
        let (bw, bh) = (rng.random_range(4..60), rng.random_range(4..60));
        let value = rng.random_range(0.1..0.9f32);
        let disc = rng.random_bool(0.5);
        for y in by..(by + bh).min(HEIGHT) {
            for x in bx..(bx + bw).min(WIDTH) {
                let (u, v) = (
                    (x - bx) as f32 / bw as f32 - 0.5,
                    (y - by) as f32 / bh as f32 - 0.5,
                );
                if !disc || u * u + v * v <= 0.25 {
                    light[y * WIDTH + x] = value;
                }
            }
        }
    }
    let mut placed: Vec<Face> = Vec::new();
    for _ in 0..10_000 {
        if placed.len() == faces {
            break;
        }
        let size = rng.random_range(SIZES);
        let cx = rng.random_range(size..WIDTH as f32 - size);
        let cy = rng.random_range(size..HEIGHT as f32 - size);
        let apart = |f: &Face| {
            (f.cx - cx).abs() >= f.size + size || (f.cy - cy).abs() >= 1.2 * (f.size + size)
        };
        if placed.iter().all(apart) {
            placed.push(Face {
                cx,
                cy,
                size,
                tilt: rng.random_range(-MAX_TILT..MAX_TILT),
                skin: rng.random_range(0.55..0.9),
            });
        }
    }
    for face in &placed {
        draw_face(&mut light, face);
    }
    let grainy: Vec<u8> = light
        .iter()
        .map(|v| ((v + rng.random_range(-0.02..0.02)) * 255.0).clamp(0.0, 255.0) as u8)
        .collect();
    // a 3x3 box blur, as a lens softens the edges
    let mut grey = grainy.clone();
    for y in 1..HEIGHT - 1 {
        for x in 1..WIDTH - 1 {
            let sum: u32 = (y - 1..=y + 1)
                .flat_map(|r| grainy[r * WIDTH + x - 1..=r * WIDTH + x + 1].iter())
                .map(|&p| p as u32)
                .sum();
            grey[y * WIDTH + x] = (sum / 9) as u8;
        }
    }
    (grey, placed)
}

/// Rows of the photo band `band` owns (its core).
fn core(band: usize) -> (f32, f32) {
    ((band * BAND) as f32, ((band + 1) * BAND) as f32)
}

/// The timed work of a part: detection on the band widened by the margin.
fn detect_band(grey: &[u8], band: usize) -> Vec<Found> {
    let top = (band * BAND).saturating_sub(MARGIN);
    let bottom = ((band + 1) * BAND + MARGIN).min(HEIGHT);
    let image = ImageData::new(
        &grey[top * WIDTH..bottom * WIDTH],
        WIDTH as u32,
        (bottom - top) as u32,
    );
    with_detector(|detector| detector.detect(&image))
        .iter()
        .map(|face| {
            let b = face.bbox();
            Found {
                rect: Rect {
                    x: b.x() as f32,
                    y: (b.y() + top as i32) as f32,
                    w: b.width() as f32,
                    h: b.height() as f32,
                },
                score: face.score(),
            }
        })
        .collect()
}

/// Checks what a band found against the faces it owns; returns a checksum of their boxes.
fn check_band(truth: &[Rect], band: usize, found: &[Found]) -> Result<u64, WorkloadError> {
    let (from, to) = core(band);
    let owns = |t: &Rect| (from..to).contains(&t.centre_y());
    let mut matched: Vec<Option<Rect>> = vec![None; truth.len()];
    for d in found {
        let face = truth
            .iter()
            .enumerate()
            .map(|(i, t)| (i, d.rect.iou(t)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .filter(|(_, iou)| *iou >= 0.5)
            .map(|(i, _)| i);
        if let Some(i) = face {
            // a neighbour's face seen in the margin is that band's to find
            if owns(&truth[i]) && matched[i].replace(d.rect).is_some() {
                return Err(failed!("band {band}: face {i} was found twice"));
            }
        } else if (from..to).contains(&d.rect.centre_y()) {
            // (a box on nothing centred in a neighbour's rows is that band's to judge)
            let r = d.rect;
            return Err(failed!(
                "band {band}: a {}x{} box at ({}, {}) (score {:.2}) is no face",
                r.w,
                r.h,
                r.x,
                r.y,
                d.score
            ));
        }
    }
    let mut digest = Digest::new();
    for (i, t) in truth.iter().enumerate().filter(|(_, t)| owns(t)) {
        let r = matched[i].ok_or_else(|| {
            failed!(
                "band {band}: the face at ({:.0}, {:.0}), {:.0} px wide, was not found",
                t.x,
                t.y,
                t.w
            )
        })?;
        digest.word(
            r.x as u16 as u64
                | (r.y as u16 as u64) << 16
                | (r.w as u16 as u64) << 32
                | (r.h as u16 as u64) << 48,
        );
    }
    Ok(digest.0)
}

impl Task for FaceDetection {
    type Input = Input;
    type Scratch = ();
    const NAME: &'static str = "cpu.face_detection";
    const SECTION: &'static str = "floating_point";
    const DESCRIPTION: &'static str = "SeetaFace cascade (rustface) finds 6-10 seeded faces in a cluttered 1024x768 photo (work: pixels)";
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 1;
    const WORK_UNIT: &'static str = "pixels";
    const PARTS: usize = BANDS;

    fn prepare(&self, seed: u64) -> Input {
        let count = Pcg64::seed_from_u64(seed ^ 0xface).random_range(6..=10);
        let (grey, faces) = photo(seed, count);
        Input {
            grey,
            truth: faces.iter().map(Face::truth).collect(),
        }
    }

    fn scratch(&self, _input: &Input) {
        with_detector(|_| ()); // this thread's detector, built before the clock starts
    }

    fn work(&self, _input: &Input) -> f64 {
        (WIDTH * HEIGHT) as f64
    }

    fn part(&self, input: &Input, _scratch: &mut (), index: usize) -> Result<u64, WorkloadError> {
        check_band(&input.truth, index, &detect_band(&input.grey, index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(input: &Input) -> Result<u64, WorkloadError> {
        FaceDetection.round(input, &mut ())
    }

    #[test]
    fn every_face_is_found_and_nothing_else_and_the_checksum_follows_the_seed() {
        let input = FaceDetection.prepare(1);
        assert!(input.truth.len() >= 6);
        let first = round(&input).unwrap();
        assert_eq!(round(&input).unwrap(), first);
        assert_ne!(round(&FaceDetection.prepare(2)).unwrap(), first);
    }

    #[test]
    fn a_photo_without_faces_has_none_found() {
        let (grey, faces) = photo(3, 0);
        assert!(faces.is_empty());
        for band in 0..BANDS {
            let found = detect_band(&grey, band);
            assert!(found.is_empty(), "band {band}: {found:?}");
            assert!(check_band(&[], band, &found).is_ok());
        }
    }

    #[test]
    fn a_missing_or_moved_face_or_an_extra_box_is_caught() {
        let input = FaceDetection.prepare(1);
        let band = (0..BANDS)
            .find(|&b| {
                input
                    .truth
                    .iter()
                    .any(|t| (core(b).0..core(b).1).contains(&t.centre_y()))
            })
            .unwrap();
        let found = detect_band(&input.grey, band);
        assert!(check_band(&input.truth, band, &found).is_ok());
        // the box of a face the band owns
        let (at, face) = found
            .iter()
            .enumerate()
            .find(|(_, d)| {
                input.truth.iter().any(|t| {
                    (core(band).0..core(band).1).contains(&t.centre_y()) && d.rect.iou(t) >= 0.5
                })
            })
            .map(|(i, d)| (i, *d))
            .unwrap();

        let mut missing = found.clone();
        missing.remove(at);
        assert!(check_band(&input.truth, band, &missing).is_err());

        let mut moved = found.clone();
        moved[at].rect.x += 0.4 * face.rect.w;
        assert!(check_band(&input.truth, band, &moved).is_err());

        let mut twice = found.clone();
        twice.push(Found {
            rect: Rect {
                x: face.rect.x + 2.0,
                ..face.rect
            },
            ..face
        });
        assert!(check_band(&input.truth, band, &twice).is_err());

        // a box on clutter in the band's rows, far from every face
        let clutter = (0..WIDTH - 80)
            .step_by(8)
            .map(|x| Rect {
                x: x as f32,
                y: core(band).0 + 50.0,
                w: 80.0,
                h: 80.0,
            })
            .find(|r| input.truth.iter().all(|t| r.iou(t) == 0.0))
            .unwrap();
        let mut extra = found.clone();
        extra.push(Found {
            rect: clutter,
            score: 9.0,
        });
        assert!(check_band(&input.truth, band, &extra).is_err());
    }
}
