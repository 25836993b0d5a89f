//! cpu.image_inpainting: removing unwanted objects from a photo, as Geekbench 5's Image
//! Inpainting workload does. The input is a generated 512x512 RGB photo: four surfaces
//! (each its own colour and a weave or stripes of period 7-15 px) parted by three straight,
//! nearly parallel, anti-aliased edges, over a smooth colour gradient, with sensor noise;
//! sixteen blobs of garbage pixels, one in each 128x128 cell, cover 5.7% of it. Each hole
//! is filled by exemplar-based inpainting after Wexler, Shechtman and Irani (2007) with
//! Barnes et al.'s PatchMatch (2009): over a three-level pyramid of the cell, coarse to
//! fine, a nearest-neighbour field maps every 7x7 patch that overlaps the hole to a patch
//! of known pixels (propagation plus random search), and every hole pixel becomes the
//! weighted vote of the source patches that cover it (a few such rounds per level).
//!
//! Written by hand: the one inpainting crate on crates.io, `inpaint` 0.1 (Telea's fast
//! marching over ndarray), is EUPL-1.2 (copyleft, in an MIT project), pulls two ndarray
//! versions and smears texture instead of continuing it; no crate does PatchMatch or patch
//! voting. Each hole is checked against the photo the generator drew: the fill's PSNR over
//! the hole must reach 18 dB and beat the naive fill (the mean colour of the hole's rim) by
//! 3 dB, and no pixel outside the hole may change. The holes are independent: a round
//! splits into one part per hole.

use super::image::psnr;
use super::{fold, Task};
use crate::workload::{failed, WorkloadError};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

pub struct ImageInpainting;

const WIDTH: usize = 512;
const HEIGHT: usize = 512;
/// Each hole lies in its own CELL x CELL cell, and its fill sees only that cell.
const CELL: usize = 128;
const HOLES: usize = (WIDTH / CELL) * (HEIGHT / CELL);
/// Patches are (2R+1) x (2R+1).
const R: usize = 3;
const SIDE: usize = 2 * R + 1;
/// Pyramid levels, the cell's full size first.
const LEVELS: usize = 3;
/// Vote rounds per level (coarsest last) and PatchMatch passes per vote round.
const VOTES: [usize; LEVELS] = [3, 4, 6];
const PASSES: usize = 2;
/// A vote counts CONFIDENCE times less per ring of the hole its patch reaches into
/// (Wexler et al.'s alpha): the rim, next to known pixels, is surest.
const CONFIDENCE: f32 = 3.0;
/// Neighbouring bands of the photo differ at least this much in colour (RGB distance).
const APART: f32 = 90.0;
/// The fill must reach this PSNR over the hole, and beat the naive fill by MARGIN.
const MIN_PSNR: f64 = 18.0;
const MARGIN: f64 = 3.0;

pub struct Hole {
    /// The cell's top-left corner in the photo.
    x0: usize,
    y0: usize,
    /// CELL x CELL, true where the pixel is to be filled.
    mask: Vec<bool>,
    /// The cell as the task receives it: RGB, garbage in the hole.
    damaged: Vec<u8>,
    /// The cell as the generator drew it.
    truth: Vec<u8>,
    /// PSNR over the hole of the naive fill: the mean colour of the hole's border.
    naive_psnr: f64,
    /// Seed of the fill's random search.
    seed: u64,
}

pub struct Input {
    holes: Vec<Hole>,
}

fn wave(t: f32) -> f32 {
    (t * std::f32::consts::TAU).sin()
}

/// The texture of one band of the photo: a weave or stripes.
struct Band {
    colour: [f32; 3],
    amplitude: f32,
    weave: bool,
    /// stripes: direction (cos, sin) and period; weave: the two periods
    pattern: (f32, f32, f32),
}

impl Band {
    fn new(rng: &mut Pcg64) -> Band {
        let theta = rng.random_range(0.0..std::f32::consts::PI);
        let weave = rng.random_bool(0.5);
        Band {
            colour: std::array::from_fn(|_| rng.random_range(-80.0..80.0)),
            amplitude: rng.random_range(15.0..25.0),
            weave,
            pattern: if weave {
                (
                    rng.random_range(9.0..15.0),
                    rng.random_range(9.0..15.0),
                    0.0,
                )
            } else {
                (theta.cos(), theta.sin(), rng.random_range(7.0..13.0))
            },
        }
    }

    fn texture(&self, x: f32, y: f32) -> f32 {
        let (a, b, c) = self.pattern;
        self.amplitude
            * if self.weave {
                wave(x / a) * wave(y / b)
            } else {
                wave((x * a + y * b) / c)
            }
    }
}

/// The photo: four textured bands (a wall, a floor...) parted by three straight, nearly
/// parallel edges that never meet inside the frame, over a smooth colour gradient, with a
/// little sensor noise. Edges are anti-aliased over a pixel.
fn photo(rng: &mut Pcg64) -> (Vec<u8>, Vec<Edge>) {
    let base: [f32; 3] = std::array::from_fn(|_| rng.random_range(80.0..170.0));
    let slope: [(f32, f32); 3] =
        std::array::from_fn(|_| (rng.random_range(-60.0..60.0), rng.random_range(-60.0..60.0)));
    let angle = rng.random_range(0.0..std::f32::consts::PI);
    // each edge: its unit normal and its distance from the centre along it
    let edges: Vec<Edge> = (0..3)
        .map(|k| {
            let a = angle + rng.random_range(-4.0f32..4.0).to_radians();
            let offset = 150.0 * (k as f32 - 1.0) + rng.random_range(-20.0..20.0);
            (a.cos(), a.sin(), offset)
        })
        .collect();
    // neighbouring bands stand apart in colour, as different surfaces do
    let mut bands: Vec<Band> = vec![Band::new(rng)];
    while bands.len() <= edges.len() {
        let band = Band::new(rng);
        let last = &bands[bands.len() - 1].colour;
        let apart = (0..3)
            .map(|c| (band.colour[c] - last[c]).powi(2))
            .sum::<f32>();
        if apart >= APART * APART {
            bands.push(band);
        }
    }
    let mut out = Vec::with_capacity(WIDTH * HEIGHT * 3);
    for y in 0..HEIGHT {
        for x in 0..WIDTH {
            let (fx, fy) = (x as f32, y as f32);
            let (u, v) = (fx / WIDTH as f32, fy / HEIGHT as f32);
            // the band's colour and texture, blended over the edge's pixel
            let mut mix = [0.0f32; 3];
            let mut below = 1.0f32; // share of the pixel past every edge so far
            for (k, band) in bands.iter().enumerate() {
                let past = edges
                    .get(k)
                    .map_or(0.0, |e| (beyond(e, fx, fy) + 0.5).clamp(0.0, 1.0));
                let share = below - below.min(past);
                let t = band.texture(fx, fy);
                for (m, colour) in mix.iter_mut().zip(band.colour) {
                    *m += share * (colour + t);
                }
                below = below.min(past);
            }
            for c in 0..3 {
                let value = base[c] + slope[c].0 * u + slope[c].1 * v + mix[c];
                let noise: f32 = rng.random_range(-1.5..1.5);
                out.push((value + noise).round().clamp(0.0, 255.0) as u8);
            }
        }
    }
    (out, edges)
}

/// An edge of the photo: its unit normal and its distance from the photo's centre.
type Edge = (f32, f32, f32);

/// Signed distance of a photo point from an edge.
fn beyond(&(c, s, o): &Edge, x: f32, y: f32) -> f32 {
    (x - WIDTH as f32 / 2.0) * c + (y - HEIGHT as f32 / 2.0) * s - o
}

/// A stroke of three overlapping discs, well inside the CELL x CELL cell at (x0, y0).
/// An edge of the photo may run clear of it or through it, but not graze its rim: a hole
/// that only just takes in a sliver of the next band is one whose naive fill is nearly
/// right by luck, and whose sliver no fill can place from the little rim it touches.
fn blob(rng: &mut Pcg64, x0: usize, y0: usize, edges: &[Edge]) -> Vec<bool> {
    let mut discs = Vec::new();
    for _ in 0..100 {
        let (cx, cy) = (
            rng.random_range(40.0..88.0f32),
            rng.random_range(40.0..88.0f32),
        );
        let theta = rng.random_range(0.0..std::f32::consts::TAU);
        discs = (-1..=1)
            .map(|k| {
                let step = k as f32 * rng.random_range(6.0..9.0);
                (
                    cx + step * theta.cos(),
                    cy + step * theta.sin(),
                    rng.random_range(11.0..15.0f32),
                )
            })
            .collect();
        let grazes = edges.iter().any(|e| {
            let along = discs
                .iter()
                .map(|&(x, y, r)| (beyond(e, x0 as f32 + x, y0 as f32 + y), r));
            let lo = along
                .clone()
                .map(|(d, r)| d - r)
                .fold(f32::INFINITY, f32::min);
            let hi = along.map(|(d, r)| d + r).fold(f32::NEG_INFINITY, f32::max);
            (lo - 6.0..lo + 12.0).contains(&0.0) || (hi - 12.0..hi + 6.0).contains(&0.0)
        });
        if !grazes {
            break;
        }
    }
    (0..CELL * CELL)
        .map(|i| {
            let (x, y) = ((i % CELL) as f32, (i / CELL) as f32);
            discs
                .iter()
                .any(|&(dx, dy, r)| (x - dx).powi(2) + (y - dy).powi(2) < r * r)
        })
        .collect()
}

/// The naive fill's PSNR: every hole pixel the mean of the known pixels next to the hole.
fn naive_psnr(mask: &[bool], truth: &[u8]) -> f64 {
    let (mut sum, mut count) = ([0.0f64; 3], 0usize);
    for y in 1..CELL - 1 {
        for x in 1..CELL - 1 {
            let i = y * CELL + x;
            if !mask[i] && (mask[i - 1] || mask[i + 1] || mask[i - CELL] || mask[i + CELL]) {
                for c in 0..3 {
                    sum[c] += truth[3 * i + c] as f64;
                }
                count += 1;
            }
        }
    }
    let mean = sum.map(|s| s / count.max(1) as f64);
    let mut error = 0.0;
    let mut samples = 0;
    for (i, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
        for c in 0..3 {
            error += (truth[3 * i + c] as f64 - mean[c]).powi(2);
        }
        samples += 3;
    }
    psnr(error, samples)
}

/// One level of the pyramid: RGB floats and where the hole is.
struct Level {
    w: usize,
    h: usize,
    img: Vec<f32>,
    hole: Vec<bool>,
}

impl Level {
    /// Half the size: a pixel is in the hole if any of its four is; else their mean.
    fn down(&self) -> Level {
        let (w, h) = (self.w / 2, self.h / 2);
        let mut img = vec![0.0; w * h * 3];
        let mut hole = vec![false; w * h];
        for y in 0..h {
            for x in 0..w {
                let four = [
                    (2 * y) * self.w + 2 * x,
                    (2 * y) * self.w + 2 * x + 1,
                    (2 * y + 1) * self.w + 2 * x,
                    (2 * y + 1) * self.w + 2 * x + 1,
                ];
                let i = y * w + x;
                hole[i] = four.iter().any(|&j| self.hole[j]);
                if !hole[i] {
                    for c in 0..3 {
                        img[3 * i + c] =
                            four.iter().map(|&j| self.img[3 * j + c]).sum::<f32>() / 4.0;
                    }
                }
            }
        }
        Level { w, h, img, hole }
    }

    /// Whether the patch centred at pixel `i` lies inside the level.
    fn fits(&self, i: usize) -> bool {
        let (x, y) = (i % self.w, i / self.w);
        x >= R && y >= R && x + R < self.w && y + R < self.h
    }

    /// Per patch centre (patches that fit only): whether the patch holds a hole pixel.
    fn patch_touches_hole(&self) -> Vec<bool> {
        let (w, h) = (self.w, self.h);
        // integral image of hole counts, (w+1) x (h+1)
        let mut sum = vec![0u32; (w + 1) * (h + 1)];
        for y in 0..h {
            for x in 0..w {
                sum[(y + 1) * (w + 1) + x + 1] = self.hole[y * w + x] as u32
                    + sum[y * (w + 1) + x + 1]
                    + sum[(y + 1) * (w + 1) + x]
                    - sum[y * (w + 1) + x];
            }
        }
        (0..w * h)
            .map(|i| {
                if !self.fits(i) {
                    return false;
                }
                let (x, y) = (i % w - R, i / w - R);
                let (x1, y1) = (x + SIDE, y + SIDE);
                sum[y1 * (w + 1) + x1] + sum[y * (w + 1) + x]
                    > sum[y * (w + 1) + x1] + sum[y1 * (w + 1) + x]
            })
            .collect()
    }

    /// Sum of squared differences between the patches centred at `t` and `s`; stops
    /// early once past `limit`.
    fn distance(&self, t: usize, s: usize, limit: f32) -> f32 {
        let row = 3 * SIDE;
        let (mut a, mut b) = (3 * (t - R * self.w - R), 3 * (s - R * self.w - R));
        let mut d = 0.0f32;
        for _ in 0..SIDE {
            let (pa, pb) = (&self.img[a..a + row], &self.img[b..b + row]);
            d += pa
                .iter()
                .zip(pb)
                .map(|(p, q)| (p - q) * (p - q))
                .sum::<f32>();
            if d >= limit {
                return d;
            }
            a += 3 * self.w;
            b += 3 * self.w;
        }
        d
    }
}

/// The nearest-neighbour field of one level: for each target patch (one that overlaps
/// the hole), the best source patch (all known pixels) found so far.
struct Field {
    targets: Vec<usize>,
    is_target: Vec<bool>,
    is_source: Vec<bool>,
    sources: Vec<usize>,
    best: Vec<usize>, // per pixel, meaningful at targets
    dist: Vec<f32>,
    /// per target: how far its patch reaches into the hole, as a vote weight
    confidence: Vec<f32>,
}

/// Per pixel: 0 outside the hole, else its ring's number counting from the rim (8-neighbours).
fn depth(level: &Level) -> Vec<u32> {
    let (w, h) = (level.w, level.h);
    let mut depth: Vec<u32> = level
        .hole
        .iter()
        .map(|&m| if m { u32::MAX } else { 0 })
        .collect();
    let mut ring = 0;
    loop {
        let mut next = Vec::new();
        for y in 0..h {
            for x in 0..w {
                if depth[y * w + x] != u32::MAX {
                    continue;
                }
                let near = (y.saturating_sub(1)..(y + 2).min(h)).any(|yy| {
                    (x.saturating_sub(1)..(x + 2).min(w)).any(|xx| depth[yy * w + xx] == ring)
                });
                if near {
                    next.push(y * w + x);
                }
            }
        }
        if next.is_empty() {
            return depth;
        }
        ring += 1;
        for i in next {
            depth[i] = ring;
        }
    }
}

impl Field {
    fn new(level: &Level) -> Field {
        let touches = level.patch_touches_hole();
        let is_source: Vec<bool> = (0..level.w * level.h)
            .map(|i| level.fits(i) && !touches[i])
            .collect();
        let depth = depth(level);
        let mut power = vec![1.0f32];
        let conf: Vec<f32> = depth
            .iter()
            .map(|&d| {
                while power.len() <= d as usize {
                    let last = *power.last().expect("one");
                    power.push(last / CONFIDENCE);
                }
                power[d as usize]
            })
            .collect();
        let w = level.w;
        let confidence = (0..touches.len())
            .map(|t| {
                if !touches[t] {
                    return 0.0;
                }
                let mut sum = 0.0;
                for dy in 0..SIDE {
                    for dx in 0..SIDE {
                        sum += conf[t + dy * w + dx - R * w - R];
                    }
                }
                sum / (SIDE * SIDE) as f32
            })
            .collect();
        Field {
            confidence,
            targets: (0..touches.len()).filter(|&i| touches[i]).collect(),
            sources: (0..is_source.len()).filter(|&i| is_source[i]).collect(),
            is_target: touches,
            is_source,
            best: vec![0; level.w * level.h],
            dist: vec![f32::INFINITY; level.w * level.h],
        }
    }

    /// Every target gets a random source, or the coarser field's match scaled up.
    fn seed_from(&mut self, coarse: Option<(&Field, usize)>, rng: &mut Pcg64, w: usize) {
        for k in 0..self.targets.len() {
            let t = self.targets[k];
            let mut s = usize::MAX;
            if let Some((c, cw)) = coarse {
                let (x, y) = (t % w, t / w);
                let ct = (y / 2) * cw + x / 2;
                if (x / 2) < cw && c.is_target.get(ct) == Some(&true) {
                    let (sx, sy) = (c.best[ct] % cw, c.best[ct] / cw);
                    let (fx, fy) = (2 * sx + x % 2, 2 * sy + y % 2);
                    let fine = fy * w + fx;
                    if fx < w && self.is_source.get(fine) == Some(&true) {
                        s = fine;
                    }
                }
            }
            if s == usize::MAX {
                s = self.sources[rng.random_range(0..self.sources.len())];
            }
            self.best[t] = s;
        }
    }

    /// PatchMatch: alternating scan order, propagation from the two previous neighbours,
    /// then random search in windows halving around the best match.
    fn improve(&mut self, level: &Level, rng: &mut Pcg64) {
        let w = level.w;
        for &t in &self.targets {
            self.dist[t] = level.distance(t, self.best[t], f32::INFINITY);
        }
        for pass in 0..PASSES {
            let forward = pass % 2 == 0;
            for k in 0..self.targets.len() {
                let t = if forward {
                    self.targets[k]
                } else {
                    self.targets[self.targets.len() - 1 - k]
                };
                let (mut best, mut dist) = (self.best[t], self.dist[t]);
                let consider = |s: usize, best: &mut usize, dist: &mut f32| {
                    if self.is_source[s] && s != *best {
                        let d = level.distance(t, s, *dist);
                        if d < *dist {
                            (*best, *dist) = (s, d);
                        }
                    }
                };
                // propagation: the neighbour's match, shifted back by one
                for step in [1, w] {
                    let n = if forward {
                        t.checked_sub(step)
                    } else {
                        Some(t + step).filter(|&n| n < self.is_target.len())
                    };
                    if let Some(n) = n.filter(|&n| self.is_target[n]) {
                        let s = if forward {
                            self.best[n] + step
                        } else {
                            self.best[n].wrapping_sub(step)
                        };
                        if s < self.is_source.len() {
                            consider(s, &mut best, &mut dist);
                        }
                    }
                }
                // random search
                let mut radius = level.w.max(level.h) as i32;
                while radius >= 1 {
                    let (bx, by) = ((best % w) as i32, (best / w) as i32);
                    let x = (bx + rng.random_range(-radius..=radius)).clamp(0, w as i32 - 1);
                    let y = (by + rng.random_range(-radius..=radius)).clamp(0, level.h as i32 - 1);
                    consider(y as usize * w + x as usize, &mut best, &mut dist);
                    radius /= 2;
                }
                (self.best[t], self.dist[t]) = (best, dist);
            }
        }
    }

    /// Every hole pixel becomes the weighted mean of what the source patches covering it
    /// say it is; a patch's weight falls with its distance.
    fn vote(&self, level: &mut Level, acc: &mut Vec<[f32; 4]>) {
        let w = level.w;
        acc.clear();
        acc.resize(level.w * level.h, [0.0; 4]);
        let mean = self.targets.iter().map(|&t| self.dist[t]).sum::<f32>()
            / self.targets.len().max(1) as f32
            + 1e-3;
        for &t in &self.targets {
            let similarity = 1.0 / (1.0 + self.dist[t] / mean);
            let weight = similarity * similarity * self.confidence[t];
            let s = self.best[t];
            for dy in 0..SIDE {
                for dx in 0..SIDE {
                    let p = t + dy * w + dx - R * w - R;
                    if level.hole[p] {
                        let q = s + dy * w + dx - R * w - R;
                        let a = &mut acc[p];
                        for (sum, v) in a.iter_mut().zip(&level.img[3 * q..3 * q + 3]) {
                            *sum += weight * v;
                        }
                        a[3] += weight;
                    }
                }
            }
        }
        for (p, a) in acc.iter().enumerate() {
            if level.hole[p] && a[3] > 0.0 {
                for c in 0..3 {
                    level.img[3 * p + c] = a[c] / a[3];
                }
            }
        }
    }
}

/// A first guess for the coarsest level: the hole filled from its rim inwards, each pixel
/// the mean of its known neighbours.
fn onion_fill(level: &mut Level) {
    let (w, h) = (level.w, level.h);
    let mut known: Vec<bool> = level.hole.iter().map(|h| !h).collect();
    loop {
        let mut ring = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let i = y * w + x;
                if known[i] {
                    continue;
                }
                let (mut sum, mut n) = ([0.0f32; 3], 0);
                for (dx, dy) in [
                    (-1, 0),
                    (1, 0),
                    (0, -1),
                    (0, 1),
                    (-1, -1),
                    (1, 1),
                    (-1, 1),
                    (1, -1),
                ] {
                    let (nx, ny) = (x as isize + dx, y as isize + dy);
                    if nx >= 0 && ny >= 0 && (nx as usize) < w && (ny as usize) < h {
                        let j = ny as usize * w + nx as usize;
                        if known[j] {
                            for (sum, v) in sum.iter_mut().zip(&level.img[3 * j..3 * j + 3]) {
                                *sum += v;
                            }
                            n += 1;
                        }
                    }
                }
                if n > 0 {
                    ring.push((i, sum.map(|s| s / n as f32)));
                }
            }
        }
        if ring.is_empty() {
            return;
        }
        for (i, rgb) in ring {
            level.img[3 * i..3 * i + 3].copy_from_slice(&rgb);
            known[i] = true;
        }
    }
}

/// Fills the hole of one cell into `out` (RGB bytes, CELL x CELL): the known pixels as
/// given, the hole's by coarse-to-fine PatchMatch and voting.
fn fill(hole: &Hole, out: &mut [u8]) {
    let mut pyramid = vec![Level {
        w: CELL,
        h: CELL,
        img: hole
            .damaged
            .iter()
            .zip(hole.mask.iter().flat_map(|m| [*m; 3]))
            .map(|(v, m)| if m { 0.0 } else { *v as f32 })
            .collect(),
        hole: hole.mask.clone(),
    }];
    for _ in 1..LEVELS {
        let next = pyramid.last().expect("a level").down();
        pyramid.push(next);
    }
    onion_fill(&mut pyramid[LEVELS - 1]);
    let mut rng = Pcg64::seed_from_u64(hole.seed);
    let mut acc = Vec::new();
    let mut coarser: Option<Field> = None;
    for l in (0..LEVELS).rev() {
        if l + 1 < LEVELS {
            // the hole starts from the coarser level's fill, bilinearly scaled up
            let (fine, rest) = pyramid.split_at_mut(l + 1);
            let (level, coarse) = (&mut fine[l], &rest[0]);
            for y in 0..level.h {
                for x in 0..level.w {
                    let i = y * level.w + x;
                    if !level.hole[i] {
                        continue;
                    }
                    let u = ((x as f32 + 0.5) / 2.0 - 0.5).clamp(0.0, (coarse.w - 1) as f32);
                    let v = ((y as f32 + 0.5) / 2.0 - 0.5).clamp(0.0, (coarse.h - 1) as f32);
                    let (x0, y0) = (u as usize, v as usize);
                    let (x1, y1) = ((x0 + 1).min(coarse.w - 1), (y0 + 1).min(coarse.h - 1));
                    let (fu, fv) = (u - x0 as f32, v - y0 as f32);
                    for c in 0..3 {
                        let at = |xx: usize, yy: usize| coarse.img[3 * (yy * coarse.w + xx) + c];
                        level.img[3 * i + c] = (1.0 - fv)
                            * ((1.0 - fu) * at(x0, y0) + fu * at(x1, y0))
                            + fv * ((1.0 - fu) * at(x0, y1) + fu * at(x1, y1));
                    }
                }
            }
        }
        let level = &mut pyramid[l];
        let mut field = Field::new(level);
        field.seed_from(
            coarser.as_ref().map(|c| (c, level.w / 2)),
            &mut rng,
            level.w,
        );
        for _ in 0..VOTES[l] {
            field.improve(level, &mut rng);
            field.vote(level, &mut acc);
        }
        coarser = Some(field);
    }
    out.copy_from_slice(&hole.damaged);
    let level = &pyramid[0];
    for (i, _) in hole.mask.iter().enumerate().filter(|(_, m)| **m) {
        for c in 0..3 {
            out[3 * i + c] = level.img[3 * i + c].round().clamp(0.0, 255.0) as u8;
        }
    }
}

/// The fill must leave every pixel outside the hole as it was, and its PSNR over the hole
/// against the true photo must reach MIN_PSNR and beat the naive fill by MARGIN.
fn check(hole: &Hole, out: &[u8]) -> Result<f64, WorkloadError> {
    let (mut error, mut samples) = (0.0f64, 0usize);
    for (i, &m) in hole.mask.iter().enumerate() {
        let (got, was) = (&out[3 * i..3 * i + 3], &hole.damaged[3 * i..3 * i + 3]);
        if !m {
            if got != was {
                return Err(failed!(
                    "the fill changed pixel ({}, {}) outside the hole",
                    hole.x0 + i % CELL,
                    hole.y0 + i / CELL
                ));
            }
            continue;
        }
        for (g, t) in got.iter().zip(&hole.truth[3 * i..3 * i + 3]) {
            error += (*g as f64 - *t as f64).powi(2);
        }
        samples += 3;
    }
    let db = psnr(error, samples);
    if db < MIN_PSNR || db < hole.naive_psnr + MARGIN {
        return Err(failed!(
            "the hole at ({}, {}) is filled at {db:.1} dB PSNR; it needs {MIN_PSNR} dB and \
             {MARGIN} dB over the naive fill's {:.1} dB",
            hole.x0,
            hole.y0,
            hole.naive_psnr
        ));
    }
    Ok(db)
}

impl Task for ImageInpainting {
    type Input = Input;
    type Scratch = Vec<u8>;
    const NAME: &'static str = "cpu.image_inpainting";
    const SECTION: &'static str = "floating_point";
    const DESCRIPTION: &'static str = "PatchMatch inpainting fills 16 garbage blobs (5.7%) of a 512x512 photo, checked by PSNR against it (work: pixels)";
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 3;
    const WORK_UNIT: &'static str = "pixels";
    const PARTS: usize = HOLES;

    fn prepare(&self, seed: u64) -> Input {
        let mut rng = Pcg64::seed_from_u64(seed);
        let (truth, edges) = photo(&mut rng);
        let holes = (0..HOLES)
            .map(|k| {
                let (x0, y0) = ((k % (WIDTH / CELL)) * CELL, (k / (WIDTH / CELL)) * CELL);
                let mask = blob(&mut rng, x0, y0, &edges);
                let cell: Vec<u8> = (0..CELL)
                    .flat_map(|y| {
                        let row = 3 * ((y0 + y) * WIDTH + x0);
                        truth[row..row + 3 * CELL].iter().copied()
                    })
                    .collect();
                let damaged = cell
                    .iter()
                    .enumerate()
                    .map(|(j, v)| if mask[j / 3] { rng.random() } else { *v })
                    .collect();
                Hole {
                    x0,
                    y0,
                    naive_psnr: naive_psnr(&mask, &cell),
                    mask,
                    damaged,
                    truth: cell,
                    seed: rng.random(),
                }
            })
            .collect();
        Input { holes }
    }

    fn scratch(&self, _input: &Input) -> Vec<u8> {
        vec![0; CELL * CELL * 3]
    }

    fn work(&self, _input: &Input) -> f64 {
        (WIDTH * HEIGHT) as f64
    }

    fn part(&self, input: &Input, out: &mut Vec<u8>, index: usize) -> Result<u64, WorkloadError> {
        let hole = &input.holes[index];
        fill(hole, out);
        check(hole, out)?;
        Ok(fold(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holes_are_filled_well_and_the_checksum_follows_the_seed() {
        let task = ImageInpainting;
        let input = task.prepare(1);
        let mut out = task.scratch(&input);
        let first = task.round(&input, &mut out).unwrap();
        assert_eq!(task.round(&input, &mut out).unwrap(), first);
        let other = task.prepare(2);
        assert_ne!(task.round(&other, &mut out).unwrap(), first);
        let hole_pixels: usize = input
            .holes
            .iter()
            .map(|h| h.mask.iter().filter(|m| **m).count())
            .sum();
        let share = hole_pixels as f64 / (WIDTH * HEIGHT) as f64;
        assert!((0.05..0.10).contains(&share), "holes cover {share:.3}");
    }

    #[test]
    fn a_garbage_block_a_naive_fill_or_a_touched_pixel_is_caught() {
        let input = ImageInpainting.prepare(3);
        let hole = &input.holes[5];
        let mut out = vec![0; CELL * CELL * 3];
        fill(hole, &mut out);
        let good = check(hole, &out).unwrap();
        assert!(good >= hole.naive_psnr + MARGIN);

        // a 16x16 block of the hole, around its centre, set to garbage
        let inside: Vec<usize> = (0..CELL * CELL).filter(|&i| hole.mask[i]).collect();
        let cx = inside.iter().map(|i| i % CELL).sum::<usize>() / inside.len();
        let cy = inside.iter().map(|i| i / CELL).sum::<usize>() / inside.len();
        let mut tampered = out.clone();
        let mut rng = Pcg64::seed_from_u64(9);
        let mut changed = 0;
        for y in cy - 8..cy + 8 {
            for x in cx - 8..cx + 8 {
                if hole.mask[y * CELL + x] {
                    for c in 0..3 {
                        tampered[3 * (y * CELL + x) + c] = rng.random();
                    }
                    changed += 1;
                }
            }
        }
        assert!(changed >= 150, "{changed}");
        assert!(check(hole, &tampered)
            .unwrap_err()
            .to_string()
            .contains("dB PSNR"));

        // the naive fill: every hole pixel the mean colour of the rim
        let mut naive = hole.damaged.clone();
        let (mut sum, mut count) = ([0u32; 3], 0);
        for y in 1..CELL - 1 {
            for x in 1..CELL - 1 {
                let i = y * CELL + x;
                let near = [i - 1, i + 1, i - CELL, i + CELL];
                if !hole.mask[i] && near.iter().any(|&j| hole.mask[j]) {
                    for (s, &t) in sum.iter_mut().zip(&hole.truth[3 * i..3 * i + 3]) {
                        *s += t as u32;
                    }
                    count += 1;
                }
            }
        }
        for (i, _) in hole.mask.iter().enumerate().filter(|(_, m)| **m) {
            for c in 0..3 {
                naive[3 * i + c] = ((sum[c] + count / 2) / count) as u8;
            }
        }
        assert!(check(hole, &naive).is_err());

        // one pixel outside the hole, one level off
        let outside = hole.mask.iter().position(|m| !m).unwrap();
        let mut touched = out.clone();
        touched[3 * outside + 1] ^= 1;
        assert!(check(hole, &touched)
            .unwrap_err()
            .to_string()
            .contains("outside the hole"));
    }
}
