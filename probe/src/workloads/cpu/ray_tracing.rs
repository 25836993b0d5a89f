//! cpu.ray_tracing: a Whitted-style render of a few thousand spheres (primary rays,
//! Lambert shading, shadow rays) through a bounding-volume hierarchy.
//!
//! The BVH is written here because traversing it is the work being measured, and keeping
//! it small lets each part verify it: sample pixels of each band, shaded again with a
//! brute-force test of every sphere for both the primary and the shadow ray, must be exactly
//! the rendered pixels. It is built with the scene, untimed; a round renders the image in
//! bands of rows, the parts of the shared-task mode.

use super::{fold, Task};
use crate::workload::{failed, WorkloadError};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

pub struct RayTracing;

const SPHERES: usize = 3000;
const WIDTH: usize = 320;
const HEIGHT: usize = 240;
const BAND: usize = 5; // rows per part
const CHECKS: usize = 6; // pixels per part shaded again by brute force

type V = [f64; 3];

fn sub(a: V, b: V) -> V {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn dot(a: V, b: V) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn unit(a: V) -> V {
    let n = dot(a, a).sqrt();
    [a[0] / n, a[1] / n, a[2] / n]
}

#[derive(Clone, Copy)]
pub struct Sphere {
    centre: V,
    radius: f64,
    albedo: f64,
}

impl Sphere {
    fn hit(&self, origin: V, dir: V) -> Option<f64> {
        let oc = sub(origin, self.centre);
        let b = dot(oc, dir);
        let disc = b * b - (dot(oc, oc) - self.radius * self.radius);
        if disc < 0.0 {
            return None;
        }
        let t = -b - disc.sqrt();
        (t > 1e-6).then_some(t)
    }
}

struct Node {
    lo: V,
    hi: V,
    start: usize,
    count: usize, // > 0: leaf over order[start..start + count]; 0: children at start, start + 1
}

pub struct Bvh {
    nodes: Vec<Node>,
    order: Vec<usize>,
}

impl Bvh {
    fn build(spheres: &[Sphere]) -> Bvh {
        let mut bvh = Bvh {
            nodes: Vec::with_capacity(2 * spheres.len()),
            order: (0..spheres.len()).collect(),
        };
        bvh.nodes.push(Node {
            lo: [0.0; 3],
            hi: [0.0; 3],
            start: 0,
            count: 0,
        });
        bvh.split(0, 0, spheres.len(), spheres);
        bvh
    }

    fn split(&mut self, node: usize, start: usize, end: usize, spheres: &[Sphere]) {
        let (mut lo, mut hi) = ([f64::MAX; 3], [f64::MIN; 3]);
        for &i in &self.order[start..end] {
            let s = spheres[i];
            for k in 0..3 {
                lo[k] = lo[k].min(s.centre[k] - s.radius);
                hi[k] = hi[k].max(s.centre[k] + s.radius);
            }
        }
        self.nodes[node].lo = lo;
        self.nodes[node].hi = hi;
        if end - start <= 4 {
            self.nodes[node].start = start;
            self.nodes[node].count = end - start;
            return;
        }
        let axis = (0..3)
            .max_by(|a, b| (hi[*a] - lo[*a]).total_cmp(&(hi[*b] - lo[*b])))
            .unwrap_or(0);
        let mid = (start + end) / 2;
        self.order[start..end].select_nth_unstable_by(mid - start, |a, b| {
            spheres[*a].centre[axis].total_cmp(&spheres[*b].centre[axis])
        });
        let left = self.nodes.len();
        self.nodes.push(Node {
            lo,
            hi,
            start: 0,
            count: 0,
        });
        self.nodes.push(Node {
            lo,
            hi,
            start: 0,
            count: 0,
        });
        self.nodes[node].start = left;
        self.nodes[node].count = 0;
        self.split(left, start, mid, spheres);
        self.split(left + 1, mid, end, spheres);
    }

    fn slab(&self, n: usize, origin: V, inv: V, best: f64) -> bool {
        let (mut t0, mut t1) = (0.0f64, best);
        for k in 0..3 {
            let (a, b) = (
                (self.nodes[n].lo[k] - origin[k]) * inv[k],
                (self.nodes[n].hi[k] - origin[k]) * inv[k],
            );
            t0 = t0.max(a.min(b));
            t1 = t1.min(a.max(b));
        }
        t0 <= t1
    }

    fn closest(
        &self,
        spheres: &[Sphere],
        origin: V,
        dir: V,
        stack: &mut Vec<usize>,
    ) -> Option<(usize, f64)> {
        let inv = dir.map(|d| 1.0 / d);
        let mut best: Option<(usize, f64)> = None;
        stack.clear();
        stack.push(0);
        while let Some(n) = stack.pop() {
            if !self.slab(n, origin, inv, best.map_or(f64::MAX, |b| b.1)) {
                continue;
            }
            let node = &self.nodes[n];
            if node.count > 0 {
                for &i in &self.order[node.start..node.start + node.count] {
                    if let Some(t) = spheres[i].hit(origin, dir) {
                        if best.is_none_or(|b| t < b.1) {
                            best = Some((i, t));
                        }
                    }
                }
            } else {
                stack.push(node.start);
                stack.push(node.start + 1);
            }
        }
        best
    }
}

fn brute(spheres: &[Sphere], origin: V, dir: V) -> Option<(usize, f64)> {
    spheres
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.hit(origin, dir).map(|t| (i, t)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Whether anything lies along the ray (brute force, for shadow rays).
fn brute_blocked(spheres: &[Sphere], origin: V, dir: V) -> bool {
    spheres.iter().any(|s| s.hit(origin, dir).is_some())
}

fn camera_ray(x: usize, y: usize) -> (V, V) {
    let u = (x as f64 + 0.5) / WIDTH as f64 * 2.0 - 1.0;
    let v = 1.0 - (y as f64 + 0.5) / HEIGHT as f64 * 2.0;
    ([0.0, 2.0, -12.0], unit([u * 1.333, v, 1.6]))
}

pub struct Scene {
    spheres: Vec<Sphere>,
    bvh: Bvh,
}

impl Task for RayTracing {
    type Input = Scene;
    type Scratch = (Vec<u8>, Vec<usize>);
    const NAME: &'static str = "cpu.ray_tracing";
    const SECTION: &'static str = "floating_point";
    const DESCRIPTION: &'static str = "BVH ray tracing of 3,000 spheres at 320x240 with shadows, sample pixels re-shaded by brute force (work: pixels)";
    const VERSION: u32 = 3;
    const ITERATIONS: u64 = 4;
    const WORK_UNIT: &'static str = "pixels";
    const PARTS: usize = HEIGHT / BAND;

    fn prepare(&self, seed: u64) -> Scene {
        let mut rng = Pcg64::seed_from_u64(seed);
        let mut spheres: Vec<Sphere> = (0..SPHERES)
            .map(|_| Sphere {
                centre: [
                    rng.random_range(-10.0..10.0),
                    rng.random_range(0.0..6.0),
                    rng.random_range(-2.0..20.0),
                ],
                radius: rng.random_range(0.05..0.4),
                albedo: rng.random_range(0.2..1.0),
            })
            .collect();
        spheres.push(Sphere {
            centre: [0.0, -1000.0, 0.0],
            radius: 1000.0,
            albedo: 0.5,
        }); // the ground
        let bvh = Bvh::build(&spheres);
        Scene { spheres, bvh }
    }

    fn scratch(&self, _input: &Scene) -> Self::Scratch {
        (vec![0u8; WIDTH * BAND], Vec::with_capacity(64))
    }

    fn work(&self, _input: &Scene) -> f64 {
        (WIDTH * HEIGHT) as f64
    }

    fn part(
        &self,
        scene: &Scene,
        (band, stack): &mut Self::Scratch,
        index: usize,
    ) -> Result<u64, WorkloadError> {
        render(scene, band, stack, index);
        check(scene, index, band)
    }
}

/// The shade of pixel (`x`, `y`), given `trace(origin, direction, shadow)`: the nearest hit
/// along a ray (for a shadow ray, any hit).
fn shade(
    spheres: &[Sphere],
    x: usize,
    y: usize,
    mut trace: impl FnMut(V, V, bool) -> Option<(usize, f64)>,
) -> u8 {
    let light = unit([0.5, 1.0, -0.4]);
    let (origin, dir) = camera_ray(x, y);
    let mut shade = 0.1;
    if let Some((i, t)) = trace(origin, dir, false) {
        let s = spheres[i];
        let p = [
            origin[0] + t * dir[0],
            origin[1] + t * dir[1],
            origin[2] + t * dir[2],
        ];
        let normal = unit(sub(p, s.centre));
        let lambert = dot(normal, light).max(0.0);
        let lit = lambert > 0.0
            && trace(
                [
                    p[0] + normal[0] * 1e-4,
                    p[1] + normal[1] * 1e-4,
                    p[2] + normal[2] * 1e-4,
                ],
                light,
                true,
            )
            .is_none();
        shade = 0.1 + if lit { 0.9 * s.albedo * lambert } else { 0.0 };
    }
    (shade * 255.0) as u8
}

/// Renders band `index` into `band` through the BVH.
fn render(scene: &Scene, band: &mut [u8], stack: &mut Vec<usize>, index: usize) {
    let (spheres, bvh) = (&scene.spheres, &scene.bvh);
    for row in 0..BAND {
        for x in 0..WIDTH {
            band[row * WIDTH + x] = shade(spheres, x, index * BAND + row, |o, d, _| {
                bvh.closest(spheres, o, d, stack)
            });
        }
    }
}

/// The sample pixels of part `index`: CHECKS (column, row in the band) spread over the band.
fn sample(index: usize, k: usize) -> (usize, usize) {
    ((index * 97 + k * 53 + 11) % WIDTH, (index + k) % BAND)
}

/// The sample pixels of the band, shaded again with brute-force primary and shadow rays,
/// must be exactly the rendered ones; returns a checksum of the band.
fn check(scene: &Scene, index: usize, band: &[u8]) -> Result<u64, WorkloadError> {
    let spheres = &scene.spheres;
    for k in 0..CHECKS {
        let (x, row) = sample(index, k);
        let y = index * BAND + row;
        let want = shade(spheres, x, y, |o, d, shadow| {
            if shadow {
                brute_blocked(spheres, o, d).then_some((0, 0.0))
            } else {
                brute(spheres, o, d)
            }
        });
        let got = band[row * WIDTH + x];
        if got != want {
            return Err(failed!(
                "pixel ({x}, {y}) is {got}, shaded by brute force it is {want}"
            ));
        }
    }
    Ok(fold(band))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_passes_and_wrong_pixels_are_caught() {
        let scene = RayTracing.prepare(1);
        let mut scratch = RayTracing.scratch(&scene);
        let sum = RayTracing.round(&scene, &mut scratch).unwrap();
        assert_ne!(
            RayTracing.round(&RayTracing.prepare(2), &mut scratch),
            Ok(sum)
        );
        let index = 20;
        let part = RayTracing.part(&scene, &mut scratch, index).unwrap();
        let (band, stack) = &mut scratch;
        render(&scene, band, stack, index);
        assert_eq!(check(&scene, index, band), Ok(part));
        // one sampled pixel a level off
        let (x, row) = sample(index, 3);
        band[row * WIDTH + x] ^= 1;
        assert!(check(&scene, index, band)
            .unwrap_err()
            .to_string()
            .contains("brute force"));
        // a blank band (the background everywhere)
        band.fill(25);
        assert!(check(&scene, index, band).is_err());
    }

    /// Renders every band with `trace` in place of the BVH; how many parts' checks fail.
    fn failing_parts(
        scene: &Scene,
        trace: impl Fn(V, V, bool) -> Option<(usize, f64)> + Copy,
    ) -> usize {
        let mut band = vec![0u8; WIDTH * BAND];
        (0..RayTracing::PARTS)
            .filter(|&index| {
                for row in 0..BAND {
                    for x in 0..WIDTH {
                        band[row * WIDTH + x] = shade(&scene.spheres, x, index * BAND + row, trace);
                    }
                }
                check(scene, index, &band).is_err()
            })
            .count()
    }

    #[test]
    fn missing_shadows_and_wrong_hits_are_caught() {
        let scene = RayTracing.prepare(1);
        let spheres = &scene.spheres;
        let bvh = &scene.bvh;
        let closest = |o, d, _| bvh.closest(spheres, o, d, &mut Vec::new());
        assert_eq!(failing_parts(&scene, closest), 0);
        // no shadows: every shadow ray unblocked
        let unshadowed = |o, d, shadow| if shadow { None } else { closest(o, d, shadow) };
        assert!(failing_parts(&scene, unshadowed) > 0);
        // a BVH that loses a tenth of the spheres (boxes too small)
        let lossy = |o, d, shadow| closest(o, d, shadow).filter(|(i, _)| i % 10 != 3);
        assert!(failing_parts(&scene, lossy) > 0);
        // another sphere than the nearest (an index mixed up in the leaf order)
        let wrong = |o, d, shadow| closest(o, d, shadow).map(|(i, t)| ((i + 1) % SPHERES, t));
        assert!(failing_parts(&scene, wrong) > 0);
    }
}
