//! cpu.horizon_detection: straightening a tilted photo. Sobel gradients find the edges of a
//! 1024x768 landscape whose horizon is tilted by a seeded angle, a Hough transform votes
//! for lines, and the strongest line must be the horizon: within half a degree and three
//! pixels of where the scene put it.
//!
//! Written by hand: Sobel and Hough are the classic stencil and voting loops this workload
//! measures, and the check needs the accumulator itself.

use super::Task;
use crate::workload::{failed, WorkloadError};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

pub struct HorizonDetection;

const WIDTH: usize = 1024;
const HEIGHT: usize = 768;
const ANGLES: usize = 720; // quarter-degree steps over 180 degrees

pub struct Input {
    grey: Vec<f32>,
    tilt: f64,   // radians, the horizon's angle to the x axis
    offset: f64, // the horizon's height at the image centre
    table: Vec<(f32, f32)>,
}

/// Angle (0..pi) and signed distance from the centre of the horizon's normal form.
fn normal_form(tilt: f64, offset: f64) -> (f64, f64) {
    let theta = tilt + std::f64::consts::FRAC_PI_2; // the normal is perpendicular to the line
    let cy = HEIGHT as f64 / 2.0;
    let rho = (offset - cy) * theta.sin(); // the line passes through the centre column at `offset`
    (theta, rho)
}

impl Task for HorizonDetection {
    type Input = Input;
    type Scratch = (Vec<f32>, Vec<u32>);
    const NAME: &'static str = "cpu.horizon_detection";
    const SECTION: &'static str = "floating_point";
    const DESCRIPTION: &'static str = "Sobel edges and a Hough transform find a tilted horizon in a 1024x768 photo (work: pixels)";
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 16;
    const WORK_UNIT: &'static str = "pixels";

    fn prepare(&self, seed: u64) -> Input {
        let mut rng = Pcg64::seed_from_u64(seed);
        let tilt = rng.random_range(-12.0..12.0f64).to_radians();
        let offset = rng.random_range(300.0..470.0);
        let grey = (0..WIDTH * HEIGHT)
            .map(|i| {
                let (x, y) = ((i % WIDTH) as f64, (i / WIDTH) as f64);
                let horizon = offset + (x - WIDTH as f64 / 2.0) * tilt.tan();
                let base = if y < horizon {
                    0.75 - 0.2 * y / HEIGHT as f64
                } else {
                    0.3 + 0.08 * ((x * 0.2).sin() * (y * 0.15).cos())
                };
                (base + rng.random_range(-0.03..0.03)) as f32
            })
            .collect();
        let table = (0..ANGLES)
            .map(|a| {
                let t = a as f64 * std::f64::consts::PI / ANGLES as f64;
                (t.cos() as f32, t.sin() as f32)
            })
            .collect();
        Input {
            grey,
            tilt,
            offset,
            table,
        }
    }

    fn scratch(&self, _input: &Input) -> Self::Scratch {
        let diagonal = ((WIDTH * WIDTH + HEIGHT * HEIGHT) as f64).sqrt() as usize + 2;
        (vec![0.0; WIDTH * HEIGHT], vec![0; ANGLES * diagonal])
    }

    fn work(&self, _input: &Input) -> f64 {
        (WIDTH * HEIGHT) as f64
    }

    fn round(
        &self,
        input: &Input,
        (magnitude, votes): &mut Self::Scratch,
    ) -> Result<u64, WorkloadError> {
        let best = detect(input, magnitude, votes);
        check(input, votes, best)
    }
}

/// Sobel edges into `magnitude`, Hough votes of the strong edges into `votes`: the cell
/// (angle, distance) of the strongest line.
fn detect(input: &Input, magnitude: &mut [f32], votes: &mut [u32]) -> usize {
    let g = &input.grey;
    let mut strongest = 0.0f32;
    for y in 1..HEIGHT - 1 {
        for x in 1..WIDTH - 1 {
            let p = |dx: isize, dy: isize| {
                g[(y as isize + dy) as usize * WIDTH + (x as isize + dx) as usize]
            };
            let gx = p(1, -1) + 2.0 * p(1, 0) + p(1, 1) - p(-1, -1) - 2.0 * p(-1, 0) - p(-1, 1);
            let gy = p(-1, 1) + 2.0 * p(0, 1) + p(1, 1) - p(-1, -1) - 2.0 * p(0, -1) - p(1, -1);
            let m = (gx * gx + gy * gy).sqrt();
            magnitude[y * WIDTH + x] = m;
            strongest = strongest.max(m);
        }
    }
    votes.fill(0);
    let half = votes.len() / ANGLES / 2;
    let (cx, cy) = (WIDTH as f32 / 2.0, HEIGHT as f32 / 2.0);
    for y in 1..HEIGHT - 1 {
        for x in 1..WIDTH - 1 {
            if magnitude[y * WIDTH + x] < 0.5 * strongest {
                continue;
            }
            let (dx, dy) = (x as f32 - cx, y as f32 - cy);
            for (a, (c, s)) in input.table.iter().enumerate() {
                let rho = (dx * c + dy * s).round() as isize + half as isize;
                votes[a * 2 * half + rho as usize] += 1;
            }
        }
    }
    votes
        .iter()
        .enumerate()
        .max_by_key(|(_, v)| **v)
        .map(|(i, _)| i)
        .unwrap_or(0)
}

/// The line in cell `best` of the accumulator must be the horizon the scene put there:
/// within half a degree and three pixels. Returns a checksum of the cell and its votes.
fn check(input: &Input, votes: &[u32], best: usize) -> Result<u64, WorkloadError> {
    let half = votes.len() / ANGLES / 2;
    let (angle, rho) = (
        (best / (2 * half)) as f64 * std::f64::consts::PI / ANGLES as f64,
        (best % (2 * half)) as f64 - half as f64,
    );
    let (want_angle, want_rho) = normal_form(input.tilt, input.offset);
    let angle_error = (angle - want_angle).abs().to_degrees();
    if angle_error > 0.5 || (rho - want_rho).abs() > 3.0 {
        return Err(failed!(
            "found a line at {:.2} deg, {rho:.0} px; the horizon is at {:.2} deg, {want_rho:.0} px",
            angle.to_degrees(),
            want_angle.to_degrees()
        ));
    }
    Ok(best as u64 ^ (votes[best] as u64) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_passes_and_a_wrong_line_is_caught() {
        let input = HorizonDetection.prepare(1);
        let mut scratch = HorizonDetection.scratch(&input);
        let sum = HorizonDetection.round(&input, &mut scratch).unwrap();
        assert_ne!(
            HorizonDetection.round(&HorizonDetection.prepare(2), &mut scratch),
            Ok(sum)
        );
        let (magnitude, votes) = &mut scratch;
        let best = detect(&input, magnitude, votes);
        assert_eq!(check(&input, votes, best), Ok(sum));
        let cells = votes.len() / ANGLES; // distances per angle
                                          // a line tilted one degree more (four angle steps)
        assert!(check(&input, votes, best + 4 * cells)
            .unwrap_err()
            .to_string()
            .contains("the horizon is at"));
        // a line five pixels lower
        assert!(check(&input, votes, best + 5).is_err());
        // the weakest cell taken for the strongest
        let weakest = votes
            .iter()
            .enumerate()
            .min_by_key(|(_, v)| **v)
            .map(|(i, _)| i)
            .unwrap();
        assert!(check(&input, votes, weakest).is_err());
    }
}
