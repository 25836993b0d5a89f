//! cpu.structure_from_motion: Geekbench 5's Structure from Motion workload, recovering the
//! 3-D geometry of a scene and the poses of the cameras from 2-D images of it. The seed
//! generates 400 points in front of 3 calibrated pinhole cameras (1024x768, f = 800 px) at
//! known poses, a keypoint per point a camera sees (9 in 10, in the frame) with 0.5 px of
//! noise and a 64-float descriptor (the point's signature plus noise), and 15% clutter
//! per view: keypoints with no true match, half of them copies of another point's
//! signature (a repeated texture the ratio test lets through and geometry must reject).
//! Each view's keypoints are shuffled: about 1,250 keypoints in all.
//!
//! A round: brute-force nearest-neighbour matching of view 0 against views 1 and 2 with
//! Lowe's ratio test; for each pair the essential matrix by the normalised eight-point
//! algorithm inside RANSAC (256 seeded samples, Sampson distance), its decomposition into
//! R, t by the cheirality check, then the relative pose refined on the inliers (Sampson
//! error) and the inliers reclassified until they settle; linear (DLT) triangulation of
//! the view 0/1 matches, which fix the scale; view 2's baseline scaled on those points and
//! its pose refined on them (resection, trimmed of points that do not fit); every track
//! triangulated from all its views, observations more than 4 px off left out; then bundle
//! adjustment of both poses and all points, repeated while re-admitting matches against
//! the adjusted geometry changes the tracks. The check compares with the generator's
//! truth: rotations within 0.5 degrees, baseline directions within 2 degrees and their
//! length ratio within 3%, RANSAC's inliers 95% right and 80% of the possible matches
//! found, at most 5% of the points from wrong matches and every other point within 6% of
//! its depth (in the scale that fits them best), no observation more than 4 px off its
//! point, and the RMS reprojection error within 15% of what 0.5 px of noise leaves after a
//! least-squares fit. (Over seeds 1-1600 the worst were 0.2 degrees, 1.1 degrees, 1.4%,
//! 3.9% of the depth, 2.9 px and 8%.)
//!
//! nalgebra does the linear algebra (symmetric eigenproblems for the eight-point and DLT
//! null spaces, SVDs, Cholesky); the `levenberg-marquardt` crate (MINPACK's trust-region
//! LM on nalgebra) does the two dense refinements it fits: each relative pose (5
//! parameters, a residual per match) and view 2's resection (6 parameters). Written by
//! hand: the matcher (a brute-force scan is what SfM pipelines use on 64-D descriptors,
//! where kd-trees lose to the curse of dimensionality, and it is the loop being measured),
//! RANSAC and the pose decomposition (a few lines each on nalgebra; the rust-cv crates that
//! did calibrated two-view geometry are unmaintained, on nalgebra 0.2x), and the bundle
//! adjustment: its Jacobian is block-sparse (each residual touches one pose and one point),
//! and the standard solver (Levenberg-Marquardt on the Schur complement, as Ceres and g2o
//! do it) eliminates the points down to a 12x12 pose system, whereas the crate would
//! factor the dense ~1900x1060 Jacobian by QR, some 3.5 GFLOP a step against the whole
//! round's 9 ms.

use super::Task;
use crate::workload::{failed, Digest, WorkloadError};
use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt};
use nalgebra::storage::Owned;
use nalgebra::{
    Cholesky, Dyn, Matrix3, Matrix4, OMatrix, OVector, Rotation3, SMatrix, SVector, SymmetricEigen,
    Vector2, Vector3, Vector4, Vector5, Vector6, U5, U6,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

pub struct StructureFromMotion;

const POINTS: usize = 400;
const VIEWS: usize = 3;
const DIM: usize = 64; // descriptor length
const FOCAL: f64 = 800.0;
const CX: f64 = 512.0;
const CY: f64 = 384.0;
const WIDTH: f64 = 1024.0;
const HEIGHT: f64 = 768.0;
const NOISE_PX: f64 = 0.5;
const DESCRIPTOR_NOISE: f64 = 0.35;
const SEEN: f64 = 0.9; // chance that a view detects a point in its frame
const CLUTTER: f64 = 0.15; // keypoints with no true match, per detected point
const RATIO: f32 = 0.8; // Lowe's ratio test
const RANSAC_ROUNDS: usize = 256;
const EPIPOLAR_PX: f64 = 1.5; // Sampson distance of an inlier
const RANSAC_PX: f64 = 3.0; // looser for the eight-point samples' rough models
const REFITS: usize = 4;
const RESECTION_PX: f64 = 20.0; // view 2's first pose, scaled from a median, is rougher
const REPROJECTION_PX: f64 = 4.0; // observations further off are left out of the adjustment
const BA_STEPS: usize = 20;

// What the check allows.
const ROTATION_DEG: f64 = 0.5;
const DIRECTION_DEG: f64 = 2.0;
const BASELINE_RATIO: f64 = 0.03;
const POINT_DEPTH: f64 = 0.06;
const PRECISION: f64 = 0.95;
const RECALL: f64 = 0.8;
const RMS_SLACK: f64 = 0.15;

/// A camera's pose: a world point X is at r X + t in the camera's frame (x right, y down,
/// z forward).
#[derive(Clone, Copy, Debug)]
pub struct Pose {
    r: Matrix3<f64>,
    t: Vector3<f64>,
}

impl Pose {
    fn identity() -> Pose {
        Pose {
            r: Matrix3::identity(),
            t: Vector3::zeros(),
        }
    }
    fn camera(&self, x: &Vector3<f64>) -> Vector3<f64> {
        self.r * x + self.t
    }
}

pub struct View {
    pixels: Vec<Vector2<f64>>,
    descriptors: Vec<f32>, // DIM per keypoint
    /// The scene point each keypoint shows (None: clutter): the generator's answer, read
    /// only by the check.
    truth: Vec<Option<u32>>,
}

pub struct Input {
    views: Vec<View>,
    poses: [Pose; VIEWS],
    points: Vec<Vector3<f64>>,
    seed: u64,
}

/// One 3-D point and the keypoint that shows it in each view (view 0's always).
#[derive(Clone, Debug)]
pub struct Track {
    point: Vector3<f64>,
    keypoints: [Option<u32>; VIEWS],
}

/// What a round recovers; its scale puts view 1 at distance 1 from view 0.
#[derive(Clone, Debug)]
pub struct Reconstruction {
    poses: [Pose; VIEWS],
    /// Matches RANSAC kept: (keypoint in view 0, keypoint in view 1 or 2).
    inliers: [Vec<(u32, u32)>; VIEWS - 1],
    tracks: Vec<Track>,
}

fn gauss(rng: &mut Pcg64) -> f64 {
    let u: f64 = rng.random_range(f64::EPSILON..1.0);
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

fn project(pose: &Pose, x: &Vector3<f64>) -> Vector2<f64> {
    let c = pose.camera(x);
    Vector2::new(FOCAL * c.x / c.z + CX, FOCAL * c.y / c.z + CY)
}

/// A pixel as a ray in the camera's frame (z = 1).
fn ray(pixel: &Vector2<f64>) -> Vector3<f64> {
    Vector3::new((pixel.x - CX) / FOCAL, (pixel.y - CY) / FOCAL, 1.0)
}

/// A camera at `centre` looking at `target`, turned by `roll` about its axis.
fn look_at(centre: Vector3<f64>, target: Vector3<f64>, roll: f64) -> Pose {
    let z = (target - centre).normalize();
    let x = Vector3::y().cross(&z).normalize(); // y points down, as in view 0
    let y = z.cross(&x);
    let r = Rotation3::from_axis_angle(&Vector3::z_axis(), roll).into_inner()
        * Matrix3::from_rows(&[x.transpose(), y.transpose(), z.transpose()]);
    Pose { r, t: -r * centre }
}

fn generate(seed: u64) -> Input {
    let mut rng = Pcg64::seed_from_u64(seed);
    let points: Vec<Vector3<f64>> = (0..POINTS)
        .map(|_| {
            Vector3::new(
                rng.random_range(-2.5..2.5),
                rng.random_range(-1.8..1.8),
                rng.random_range(5.0..9.0),
            )
        })
        .collect();
    let signatures: Vec<f32> = (0..POINTS * DIM).map(|_| gauss(&mut rng) as f32).collect();
    let camera = |side: f64, rng: &mut Pcg64| {
        let centre = Vector3::new(
            side * rng.random_range(0.8..1.2),
            rng.random_range(-0.3..0.3),
            rng.random_range(-0.3..0.3),
        );
        let target = Vector3::new(
            rng.random_range(-0.5..0.5),
            rng.random_range(-0.5..0.5),
            rng.random_range(6.0..8.0),
        );
        look_at(centre, target, rng.random_range(-0.1..0.1))
    };
    let poses = [
        Pose::identity(),
        camera(1.0, &mut rng),
        camera(-1.0, &mut rng),
    ];
    let views = poses
        .iter()
        .map(|pose| {
            let mut keypoints: Vec<(Vector2<f64>, Vec<f32>, Option<u32>)> = Vec::new();
            let noisy = |rng: &mut Pcg64, of: usize| -> Vec<f32> {
                (0..DIM)
                    .map(|k| signatures[of * DIM + k] + (DESCRIPTOR_NOISE * gauss(rng)) as f32)
                    .collect()
            };
            for (p, x) in points.iter().enumerate() {
                let at = project(pose, x);
                let inside =
                    (8.0..WIDTH - 8.0).contains(&at.x) && (8.0..HEIGHT - 8.0).contains(&at.y);
                if !inside || rng.random::<f64>() >= SEEN {
                    continue;
                }
                let pixel = at + Vector2::new(gauss(&mut rng), gauss(&mut rng)) * NOISE_PX;
                keypoints.push((pixel, noisy(&mut rng, p), Some(p as u32)));
            }
            let clutter = (keypoints.len() as f64 * CLUTTER).round() as usize;
            for k in 0..clutter {
                let pixel =
                    Vector2::new(rng.random_range(0.0..WIDTH), rng.random_range(0.0..HEIGHT));
                let descriptor = if k % 2 == 0 {
                    let spread = (1.0 + DESCRIPTOR_NOISE * DESCRIPTOR_NOISE).sqrt();
                    (0..DIM)
                        .map(|_| (spread * gauss(&mut rng)) as f32)
                        .collect()
                } else {
                    let of = rng.random_range(0..POINTS);
                    noisy(&mut rng, of)
                };
                keypoints.push((pixel, descriptor, None));
            }
            for i in (1..keypoints.len()).rev() {
                let j = rng.random_range(0..=i);
                keypoints.swap(i, j);
            }
            View {
                pixels: keypoints.iter().map(|k| k.0).collect(),
                descriptors: keypoints.iter().flat_map(|k| k.1.iter().copied()).collect(),
                truth: keypoints.iter().map(|k| k.2).collect(),
            }
        })
        .collect();
    Input {
        views,
        poses,
        points,
        seed,
    }
}

fn distance2(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8]; // eight accumulators, so that the loop vectorises
    for (ca, cb) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        for k in 0..8 {
            let d = ca[k] - cb[k];
            lanes[k] += d * d;
        }
    }
    lanes.iter().sum()
}

/// Each keypoint of `a` to its nearest neighbour in `b`, kept when clearly nearer than the
/// second nearest (Lowe's ratio test).
fn match_views(a: &View, b: &View) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for (i, da) in a.descriptors.chunks_exact(DIM).enumerate() {
        let (mut best, mut second, mut at) = (f32::INFINITY, f32::INFINITY, 0);
        for (j, db) in b.descriptors.chunks_exact(DIM).enumerate() {
            let d = distance2(da, db);
            if d < best {
                (second, best, at) = (best, d, j);
            } else if d < second {
                second = d;
            }
        }
        if best < RATIO * RATIO * second {
            out.push((i as u32, at as u32));
        }
    }
    out
}

/// Hartley's conditioning of rays: the similarity that moves their centroid to the origin
/// and their mean distance from it to sqrt 2.
fn conditioner(rays: impl Iterator<Item = Vector3<f64>> + Clone) -> Matrix3<f64> {
    let n = rays.clone().count() as f64;
    let centre = rays.clone().sum::<Vector3<f64>>() / n;
    let spread = rays.map(|r| (r - centre).xy().norm()).sum::<f64>() / n;
    let k = std::f64::consts::SQRT_2 / spread.max(1e-12);
    Matrix3::new(k, 0.0, -k * centre.x, 0.0, k, -k * centre.y, 0.0, 0.0, 1.0)
}

/// The eight-point algorithm (on eight or more correspondences y^T E x = 0), with Hartley's
/// normalisation (centroid at the origin, mean distance sqrt 2): the null vector of the
/// stacked constraints, projected onto the essential matrices (singular values 1, 1, 0).
fn essential_from(pairs: &[(Vector3<f64>, Vector3<f64>)]) -> Matrix3<f64> {
    let (tx, ty) = (
        conditioner(pairs.iter().map(|p| p.0)),
        conditioner(pairs.iter().map(|p| p.1)),
    );
    let mut normal = SMatrix::<f64, 9, 9>::zeros();
    for (x, y) in pairs {
        let (x, y) = (tx * x, ty * y);
        let row = SVector::<f64, 9>::from([
            y.x * x.x,
            y.x * x.y,
            y.x,
            y.y * x.x,
            y.y * x.y,
            y.y,
            x.x,
            x.y,
            1.0,
        ]);
        normal.ger(1.0, &row, &row, 1.0);
    }
    let eigen = SymmetricEigen::new(normal);
    let e = eigen.eigenvectors.column(eigen.eigenvalues.imin());
    let e =
        ty.transpose() * Matrix3::new(e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7], e[8]) * tx;
    let svd = e.svd(true, true);
    let (u, v_t) = (svd.u.expect("u"), svd.v_t.expect("v_t"));
    u * Matrix3::from_diagonal(&Vector3::new(1.0, 1.0, 0.0)) * v_t
}

/// The squared Sampson distance of a correspondence to E's epipolar geometry, in rays.
fn sampson(e: &Matrix3<f64>, x: &Vector3<f64>, y: &Vector3<f64>) -> f64 {
    let ex = e * x;
    let ety = e.transpose() * y;
    let r = y.dot(&ex);
    r * r / (ex.x * ex.x + ex.y * ex.y + ety.x * ety.x + ety.y * ety.y)
}

fn inliers(e: &Matrix3<f64>, x: &[Vector3<f64>], y: &[Vector3<f64>], px: f64) -> Vec<bool> {
    let threshold = (px / FOCAL).powi(2);
    x.iter()
        .zip(y)
        .map(|(a, b)| sampson(e, a, b) < threshold)
        .collect()
}

/// RANSAC over eight-point samples: the E most correspondences agree with, and which
/// they are.
fn ransac(
    x: &[Vector3<f64>],
    y: &[Vector3<f64>],
    rng: &mut Pcg64,
) -> Result<(Matrix3<f64>, Vec<bool>), WorkloadError> {
    let n = x.len();
    if n < 16 {
        return Err(failed!("only {n} matches for the essential matrix"));
    }
    let threshold = (RANSAC_PX / FOCAL).powi(2);
    let (mut best, mut best_count) = (Matrix3::zeros(), 0);
    for _ in 0..RANSAC_ROUNDS {
        let mut sample = [0usize; 8];
        let mut k = 0;
        while k < 8 {
            let i = rng.random_range(0..n);
            if !sample[..k].contains(&i) {
                sample[k] = i;
                k += 1;
            }
        }
        let e = essential_from(&sample.map(|i| (x[i], y[i])));
        let count = x
            .iter()
            .zip(y)
            .filter(|(a, b)| sampson(&e, a, b) < threshold)
            .count();
        if count > best_count {
            (best, best_count) = (e, count);
        }
    }
    Ok((best, inliers(&best, x, y, RANSAC_PX)))
}

/// Linear (DLT) triangulation of one point from its rays in two or more views: the null
/// vector of the stacked cross-product constraints.
fn triangulate(views: &[(Pose, Vector3<f64>)]) -> Option<Vector3<f64>> {
    let mut normal = Matrix4::<f64>::zeros();
    for (pose, ray) in views {
        let mut p = pose.r.insert_column(3, 0.0);
        p.set_column(3, &pose.t);
        for (a, row) in [(ray.x, 0), (ray.y, 1)] {
            let c: Vector4<f64> = (p.row(2) * a - p.row(row)).transpose();
            normal.ger(1.0, &c, &c, 1.0);
        }
    }
    let eigen = SymmetricEigen::new(normal);
    let h = eigen.eigenvectors.column(eigen.eigenvalues.imin());
    if h[3].abs() < 1e-12 {
        return None;
    }
    let x = Vector3::new(h[0], h[1], h[2]) / h[3];
    views
        .iter()
        .all(|(pose, _)| pose.camera(&x).z > 0.0)
        .then_some(x)
}

/// The pose of the second view (t of length 1) from E: of the four decompositions, the one
/// that puts the inliers in front of both cameras (the cheirality check).
fn decompose(e: &Matrix3<f64>, x: &[Vector3<f64>], y: &[Vector3<f64>], mask: &[bool]) -> Pose {
    let svd = e.svd(true, true);
    let (mut u, mut v_t) = (svd.u.expect("u"), svd.v_t.expect("v_t"));
    if u.determinant() < 0.0 {
        u = -u;
    }
    if v_t.determinant() < 0.0 {
        v_t = -v_t;
    }
    let w = Matrix3::new(0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0);
    let t: Vector3<f64> = u.column(2).into();
    let mut best = (0, Pose::identity());
    for r in [u * w * v_t, u * w.transpose() * v_t] {
        for t in [t, -t] {
            let pose = Pose { r, t };
            let ahead = (0..x.len())
                .filter(|&i| mask[i])
                .filter(|&i| triangulate(&[(Pose::identity(), x[i]), (pose, y[i])]).is_some())
                .count();
            if ahead > best.0 {
                best = (ahead, pose);
            }
        }
    }
    best.1
}

/// d(exp(w) v)/dw at rotation `r` = exp(w) (Gallego and Yezzi's formula).
fn rotated_by(w: &Vector3<f64>, r: &Matrix3<f64>, v: &Vector3<f64>) -> Matrix3<f64> {
    let n2 = w.norm_squared();
    if n2 < 1e-18 {
        return -v.cross_matrix();
    }
    -r * v.cross_matrix()
        * (w * w.transpose() + (r.transpose() - Matrix3::identity()) * w.cross_matrix())
        / n2
}

/// d(pixel)/d(point in the camera's frame).
fn projection_jacobian(c: &Vector3<f64>) -> SMatrix<f64, 2, 3> {
    let iz = 1.0 / c.z;
    SMatrix::<f64, 2, 3>::new(
        FOCAL * iz,
        0.0,
        -FOCAL * c.x * iz * iz,
        0.0,
        FOCAL * iz,
        -FOCAL * c.y * iz * iz,
    )
}

/// Resection: a camera's pose refined on known 3-D points and their pixels, by the
/// `levenberg-marquardt` crate. Parameters: a rotation vector applied to `base`, and t.
struct Resection<'a> {
    points: &'a [Vector3<f64>],
    pixels: &'a [Vector2<f64>],
    base: Matrix3<f64>,
    x: Vector6<f64>,
}

impl Resection<'_> {
    fn pose(&self) -> Pose {
        let w = Vector3::new(self.x[0], self.x[1], self.x[2]);
        Pose {
            r: Rotation3::new(w).into_inner() * self.base,
            t: Vector3::new(self.x[3], self.x[4], self.x[5]),
        }
    }
}

impl LeastSquaresProblem<f64, Dyn, U6> for Resection<'_> {
    type ResidualStorage = Owned<f64, Dyn>;
    type JacobianStorage = Owned<f64, Dyn, U6>;
    type ParameterStorage = Owned<f64, U6>;

    fn set_params(&mut self, x: &Vector6<f64>) {
        self.x = *x;
    }
    fn params(&self) -> Vector6<f64> {
        self.x
    }
    fn residuals(&self) -> Option<OVector<f64, Dyn>> {
        let pose = self.pose();
        Some(OVector::<f64, Dyn>::from_iterator(
            2 * self.points.len(),
            self.points.iter().zip(self.pixels).flat_map(|(p, seen)| {
                let e = project(&pose, p) - seen;
                [e.x, e.y]
            }),
        ))
    }
    fn jacobian(&self) -> Option<OMatrix<f64, Dyn, U6>> {
        let w = Vector3::new(self.x[0], self.x[1], self.x[2]);
        let turn = Rotation3::new(w).into_inner();
        let t = Vector3::new(self.x[3], self.x[4], self.x[5]);
        let mut jacobian = OMatrix::<f64, Dyn, U6>::zeros(2 * self.points.len());
        for (k, p) in self.points.iter().enumerate() {
            let v = self.base * p;
            let c = turn * v + t;
            let d = projection_jacobian(&c);
            jacobian
                .fixed_view_mut::<2, 3>(2 * k, 0)
                .copy_from(&(d * rotated_by(&w, &turn, &v)));
            jacobian.fixed_view_mut::<2, 3>(2 * k, 3).copy_from(&d);
        }
        Some(jacobian)
    }
}

/// Two-view refinement: the relative pose that minimises the Sampson errors (in pixels) of
/// the inlier correspondences, by the `levenberg-marquardt` crate. Parameters: a rotation
/// vector applied to `base.r`, and two steps of t across its unit sphere.
struct RelativePose<'a> {
    x: &'a [Vector3<f64>],
    y: &'a [Vector3<f64>],
    base: Pose,
    across: [Vector3<f64>; 2], // orthonormal, perpendicular to base.t
    p: Vector5<f64>,
}

impl<'a> RelativePose<'a> {
    fn new(x: &'a [Vector3<f64>], y: &'a [Vector3<f64>], base: Pose) -> Self {
        let t = base.t.normalize();
        let helper = if t.x.abs() < 0.9 {
            Vector3::x()
        } else {
            Vector3::y()
        };
        let first = t.cross(&helper).normalize();
        RelativePose {
            x,
            y,
            base: Pose { r: base.r, t },
            across: [first, t.cross(&first)],
            p: Vector5::zeros(),
        }
    }
    fn turn(&self) -> (Vector3<f64>, Matrix3<f64>) {
        let w = Vector3::new(self.p[0], self.p[1], self.p[2]);
        (w, Rotation3::new(w).into_inner())
    }
    fn unnormalised_t(&self) -> Vector3<f64> {
        self.base.t + self.across[0] * self.p[3] + self.across[1] * self.p[4]
    }
    fn pose(&self) -> Pose {
        Pose {
            r: self.turn().1 * self.base.r,
            t: self.unnormalised_t().normalize(),
        }
    }
}

impl LeastSquaresProblem<f64, Dyn, U5> for RelativePose<'_> {
    type ResidualStorage = Owned<f64, Dyn>;
    type JacobianStorage = Owned<f64, Dyn, U5>;
    type ParameterStorage = Owned<f64, U5>;

    fn set_params(&mut self, p: &Vector5<f64>) {
        self.p = *p;
    }
    fn params(&self) -> Vector5<f64> {
        self.p
    }
    fn residuals(&self) -> Option<OVector<f64, Dyn>> {
        let pose = self.pose();
        let e = pose.t.cross_matrix() * pose.r;
        Some(OVector::<f64, Dyn>::from_iterator(
            self.x.len(),
            self.x.iter().zip(self.y).map(|(x, y)| {
                let (a, b) = (e * x, e.transpose() * y);
                FOCAL * y.dot(&a) / (a.x * a.x + a.y * a.y + b.x * b.x + b.y * b.y).sqrt()
            }),
        ))
    }
    fn jacobian(&self) -> Option<OMatrix<f64, Dyn, U5>> {
        let (w, turn) = self.turn();
        let pose = self.pose();
        let e = pose.t.cross_matrix() * pose.r;
        // dE/dp: through R for the rotation, through the normalised t for the others
        let mut de = [Matrix3::<f64>::zeros(); 5];
        for j in 0..3 {
            let column: Vector3<f64> = self.base.r.column(j).into();
            let d = rotated_by(&w, &turn, &column);
            for (k, m) in de.iter_mut().enumerate().take(3) {
                m.set_column(j, &(pose.t.cross_matrix() * d.column(k)));
            }
        }
        let length = self.unnormalised_t().norm();
        for k in 0..2 {
            let along = self.across[k];
            let dt = (along - pose.t * pose.t.dot(&along)) / length;
            de[3 + k] = dt.cross_matrix() * pose.r;
        }
        let mut jacobian = OMatrix::<f64, Dyn, U5>::zeros(self.x.len());
        for (i, (x, y)) in self.x.iter().zip(self.y).enumerate() {
            let (a, b) = (e * x, e.transpose() * y);
            let r = y.dot(&a);
            let d = a.x * a.x + a.y * a.y + b.x * b.x + b.y * b.y;
            let root = d.sqrt();
            for (k, m) in de.iter().enumerate() {
                let (da, db) = (m * x, m.transpose() * y);
                let dr = y.dot(&da);
                let dd = 2.0 * (a.x * da.x + a.y * da.y + b.x * db.x + b.y * db.y);
                jacobian[(i, k)] = FOCAL * (dr / root - 0.5 * r * dd / (d * root));
            }
        }
        Some(jacobian)
    }
}

/// The relative pose of a view to view 0 (t of length 1) and the matches it keeps: RANSAC,
/// the cheirality check, then refinement on the inliers and reclassification until they
/// settle (at most REFITS times).
fn relative_pose(
    x: &[Vector3<f64>],
    y: &[Vector3<f64>],
    rng: &mut Pcg64,
) -> Result<(Pose, Vec<bool>), WorkloadError> {
    let (e, mut mask) = ransac(x, y, rng)?;
    let mut pose = decompose(&e, x, y, &mask);
    for _ in 0..REFITS {
        let (xs, ys): (Vec<_>, Vec<_>) = (0..x.len())
            .filter(|&i| mask[i])
            .map(|i| (x[i], y[i]))
            .unzip();
        let (refined, _) = LevenbergMarquardt::new().minimize(RelativePose::new(&xs, &ys, pose));
        pose = refined.pose();
        let kept = inliers(&(pose.t.cross_matrix() * pose.r), x, y, EPIPOLAR_PX);
        if kept == mask {
            break;
        }
        mask = kept;
    }
    Ok((pose, mask))
}

/// One pixel of one track in one view, for the bundle adjustment.
struct Observation {
    track: usize,
    view: usize,
    pixel: Vector2<f64>,
}

fn observations(input: &Input, tracks: &[Track]) -> Vec<Observation> {
    let mut out = Vec::new();
    for (track, t) in tracks.iter().enumerate() {
        for (view, k) in t.keypoints.iter().enumerate() {
            if let Some(k) = k {
                out.push(Observation {
                    track,
                    view,
                    pixel: input.views[view].pixels[*k as usize],
                });
            }
        }
    }
    out
}

fn cost(poses: &[Pose; VIEWS], tracks: &[Track], seen: &[Observation]) -> f64 {
    seen.iter()
        .map(|o| (project(&poses[o.view], &tracks[o.track].point) - o.pixel).norm_squared())
        .sum()
}

const CAMS: usize = 6 * (VIEWS - 1); // view 0 is held fixed

/// Bundle adjustment by Levenberg-Marquardt on the Schur complement: each step builds the
/// normal equations block by block (poses 6x6, points 3x3, pose-point 6x3), eliminates the
/// points down to a CAMS x CAMS system solved by Cholesky, and substitutes back. The scale
/// is left free (the damping keeps the system regular) and fixed afterwards.
fn bundle_adjust(poses: &mut [Pose; VIEWS], tracks: &mut [Track], seen: &[Observation]) {
    let mut lambda = 1e-3;
    let mut current = cost(poses, tracks, seen);
    let n = tracks.len();
    let mut v = vec![Matrix3::<f64>::zeros(); n];
    let mut gp = vec![Vector3::<f64>::zeros(); n];
    let mut w = vec![SMatrix::<f64, 6, 3>::zeros(); seen.len()];
    let mut by_track: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, o) in seen.iter().enumerate() {
        by_track[o.track].push(i);
    }
    for _ in 0..BA_STEPS {
        let mut u = SMatrix::<f64, CAMS, CAMS>::zeros();
        let mut gc = SVector::<f64, CAMS>::zeros();
        v.iter_mut().for_each(|m| m.fill(0.0));
        gp.iter_mut().for_each(|g| g.fill(0.0));
        for (i, o) in seen.iter().enumerate() {
            let pose = &poses[o.view];
            let x = &tracks[o.track].point;
            let c = pose.camera(x);
            let r = Vector2::new(FOCAL * c.x / c.z + CX, FOCAL * c.y / c.z + CY) - o.pixel;
            let d = projection_jacobian(&c);
            let jp = d * pose.r;
            v[o.track] += jp.transpose() * jp;
            gp[o.track] -= jp.transpose() * r;
            if o.view > 0 {
                let mut jc = SMatrix::<f64, 2, 6>::zeros();
                jc.fixed_view_mut::<2, 3>(0, 0)
                    .copy_from(&(d * -(pose.r * x).cross_matrix()));
                jc.fixed_view_mut::<2, 3>(0, 3).copy_from(&d);
                let at = 6 * (o.view - 1);
                let block = jc.transpose() * jc;
                let mut ub = u.fixed_view_mut::<6, 6>(at, at);
                ub += block;
                let mut gb = gc.fixed_rows_mut::<6>(at);
                gb -= jc.transpose() * r;
                w[i] = jc.transpose() * jp;
            }
        }
        let mut improved = false;
        for _ in 0..10 {
            let mut s = u;
            for k in 0..CAMS {
                s[(k, k)] += lambda * u[(k, k)] + 1e-12;
            }
            let mut rhs = gc;
            let mut inverses = Vec::with_capacity(n);
            for j in 0..n {
                let mut vj = v[j];
                for k in 0..3 {
                    vj[(k, k)] += lambda * v[j][(k, k)] + 1e-12;
                }
                let inv = vj.try_inverse().unwrap_or_else(Matrix3::zeros);
                for &a in &by_track[j] {
                    let va = seen[a].view;
                    if va == 0 {
                        continue;
                    }
                    let wa = w[a] * inv;
                    let ra = 6 * (va - 1);
                    let mut rb = rhs.fixed_rows_mut::<6>(ra);
                    rb -= wa * gp[j];
                    for &b in &by_track[j] {
                        let vb = seen[b].view;
                        if vb == 0 {
                            continue;
                        }
                        let cb = 6 * (vb - 1);
                        let mut sb = s.fixed_view_mut::<6, 6>(ra, cb);
                        sb -= wa * w[b].transpose();
                    }
                }
                inverses.push(inv);
            }
            let Some(cholesky) = Cholesky::new(s) else {
                lambda *= 10.0;
                continue;
            };
            let dc = cholesky.solve(&rhs);
            let mut trial_poses = *poses;
            for view in 1..VIEWS {
                let at = 6 * (view - 1);
                let turn = Rotation3::new(Vector3::new(dc[at], dc[at + 1], dc[at + 2]));
                trial_poses[view].r = turn.into_inner() * poses[view].r;
                trial_poses[view].t += Vector3::new(dc[at + 3], dc[at + 4], dc[at + 5]);
            }
            let mut trial: Vec<Track> = tracks.to_vec();
            for (j, t) in trial.iter_mut().enumerate() {
                let mut g = gp[j];
                for &a in &by_track[j] {
                    let va = seen[a].view;
                    if va > 0 {
                        g -= w[a].transpose() * dc.fixed_rows::<6>(6 * (va - 1));
                    }
                }
                t.point += inverses[j] * g;
            }
            let next = cost(&trial_poses, &trial, seen);
            if next < current {
                let gain = (current - next) / current;
                *poses = trial_poses;
                tracks.clone_from_slice(&trial);
                current = next;
                lambda = (lambda / 3.0).max(1e-9);
                improved = gain > 1e-10;
                break;
            }
            lambda *= 4.0;
        }
        if !improved {
            break;
        }
    }
}

/// View 2's pose refined on the points views 0 and 1 triangulated (and their pixels in
/// view 2), from `start`: on those within RESECTION_PX of it first, then on those within
/// REPROJECTION_PX of the refined pose, until they settle. Wrong matches consistent with
/// one epipolar geometry triangulate anywhere along a ray, and would drag a plain
/// least-squares fit.
fn resect(known: &[(Vector3<f64>, Vector2<f64>)], start: Pose) -> Pose {
    let mut pose = start;
    let mut within = RESECTION_PX;
    let mut chosen: Vec<bool> = Vec::new();
    for _ in 0..REFITS {
        let now: Vec<bool> = known
            .iter()
            .map(|(x, pixel)| {
                pose.camera(x).z > 0.0 && (project(&pose, x) - pixel).norm() <= within
            })
            .collect();
        if now == chosen || now.iter().filter(|&&c| c).count() < 6 {
            break;
        }
        chosen = now;
        let (points, pixels): (Vec<_>, Vec<_>) = known
            .iter()
            .zip(&chosen)
            .filter(|(_, &c)| c)
            .map(|(k, _)| *k)
            .unzip();
        let problem = Resection {
            points: &points,
            pixels: &pixels,
            base: pose.r,
            x: Vector6::new(0.0, 0.0, 0.0, pose.t.x, pose.t.y, pose.t.z),
        };
        pose = LevenbergMarquardt::new().minimize(problem).0.pose();
        within = REPROJECTION_PX;
    }
    pose
}

/// The tracks triangulated (DLT) from all their candidate views, each observation in views
/// 1 and 2 more than REPROJECTION_PX off its point left out (and the point triangulated
/// again from the rest); tracks left with fewer than two views, or whose point is that far
/// off its keypoint in view 0, dropped.
fn admit(
    input: &Input,
    rays: &[Vec<Vector3<f64>>],
    poses: &[Pose; VIEWS],
    candidates: &[Track],
) -> Vec<Track> {
    let mut kept = Vec::with_capacity(candidates.len());
    for t in candidates {
        let mut t = t.clone();
        let from = |t: &Track| -> Vec<(Pose, Vector3<f64>)> {
            (0..VIEWS)
                .filter_map(|v| t.keypoints[v].map(|k| (poses[v], rays[v][k as usize])))
                .collect()
        };
        let Some(x) = triangulate(&from(&t)) else {
            continue;
        };
        let mut dropped = false;
        for (v, keypoint) in t.keypoints.iter_mut().enumerate().skip(1) {
            if let Some(k) = *keypoint {
                let off = (project(&poses[v], &x) - input.views[v].pixels[k as usize]).norm();
                if off > REPROJECTION_PX {
                    *keypoint = None;
                    dropped = true;
                }
            }
        }
        if t.keypoints.iter().flatten().count() < 2 {
            continue;
        }
        t.point = if dropped {
            match triangulate(&from(&t)) {
                Some(x) => x,
                None => continue,
            }
        } else {
            x
        };
        let anchor = t.keypoints[0].expect("view 0") as usize;
        if (project(&poses[0], &t.point) - input.views[0].pixels[anchor]).norm() > REPROJECTION_PX {
            continue; // its keypoint in view 0 is the one that does not fit
        }
        kept.push(t);
    }
    kept
}

/// The timed work: matching, two-view geometry, resection, triangulation, bundle adjustment.
fn reconstruct(input: &Input) -> Result<Reconstruction, WorkloadError> {
    let mut rng = Pcg64::seed_from_u64(input.seed ^ 0x5f3d_9e37_79b9_7f4a);
    let rays: Vec<Vec<Vector3<f64>>> = input
        .views
        .iter()
        .map(|v| v.pixels.iter().map(ray).collect())
        .collect();
    let mut relative = [Pose::identity(); VIEWS];
    let mut inliers: [Vec<(u32, u32)>; VIEWS - 1] = Default::default();
    for view in 1..VIEWS {
        let matches = match_views(&input.views[0], &input.views[view]);
        let x: Vec<Vector3<f64>> = matches.iter().map(|m| rays[0][m.0 as usize]).collect();
        let y: Vec<Vector3<f64>> = matches.iter().map(|m| rays[view][m.1 as usize]).collect();
        let (pose, mask) = relative_pose(&x, &y, &mut rng)?;
        relative[view] = pose;
        inliers[view - 1] = matches
            .iter()
            .zip(&mask)
            .filter(|(_, &m)| m)
            .map(|(m, _)| *m)
            .collect();
    }
    // The candidate tracks: view 0's keypoints matched in view 1 or 2.
    let mut of_keypoint: Vec<Option<usize>> = vec![None; input.views[0].pixels.len()];
    let mut candidates: Vec<Track> = Vec::new();
    for (view, list) in inliers.iter().enumerate() {
        for &(a, b) in list {
            let t = *of_keypoint[a as usize].get_or_insert_with(|| {
                candidates.push(Track {
                    point: Vector3::zeros(),
                    keypoints: [Some(a), None, None],
                });
                candidates.len() - 1
            });
            candidates[t].keypoints[view + 1] = Some(b);
        }
    }
    // Views 0 and 1 fix the scale (a baseline of 1); their points place view 2.
    let mut poses = relative;
    let mut known = Vec::new();
    let mut scales = Vec::new();
    for t in &candidates {
        let (Some(a), Some(b)) = (t.keypoints[0], t.keypoints[1]) else {
            continue;
        };
        let Some(x) = triangulate(&[
            (poses[0], rays[0][a as usize]),
            (poses[1], rays[1][b as usize]),
        ]) else {
            continue;
        };
        if let Some(c) = t.keypoints[2] {
            let y = rays[2][c as usize];
            let along = y.cross(&(relative[2].r * x));
            let per = y.cross(&relative[2].t);
            scales.push(-along.dot(&per) / per.norm_squared());
            known.push((x, input.views[2].pixels[c as usize]));
        }
    }
    if known.len() < 12 {
        return Err(failed!(
            "only {} points seen in all three views",
            known.len()
        ));
    }
    scales.sort_by(f64::total_cmp);
    poses[2].t *= scales[scales.len() / 2];
    poses[2] = resect(&known, poses[2]);
    // Every track from all its views, adjusted; then the matches re-admitted or left out
    // against the adjusted geometry, and adjusted again, until that changes nothing.
    let mut tracks = admit(input, &rays, &poses, &candidates);
    for _ in 0..REFITS {
        let seen = observations(input, &tracks);
        bundle_adjust(&mut poses, &mut tracks, &seen);
        let again = admit(input, &rays, &poses, &candidates);
        if again
            .iter()
            .map(|t| t.keypoints)
            .eq(tracks.iter().map(|t| t.keypoints))
        {
            break;
        }
        tracks = again;
    }
    let scale = poses[1].t.norm();
    for pose in &mut poses[1..] {
        pose.t /= scale;
    }
    for t in &mut tracks {
        t.point /= scale;
    }
    Ok(Reconstruction {
        poses,
        inliers,
        tracks,
    })
}

/// Whether `x` is at most `limit` (a NaN is not).
fn within(x: f64, limit: f64) -> bool {
    x <= limit
}

fn angle_deg(a: &Vector3<f64>, b: &Vector3<f64>) -> f64 {
    (a.dot(b) / (a.norm() * b.norm()))
        .clamp(-1.0, 1.0)
        .acos()
        .to_degrees()
}

/// Checks a reconstruction against the generator's truth; its checksum if it holds.
fn check(input: &Input, rec: &Reconstruction) -> Result<u64, WorkloadError> {
    for view in 1..VIEWS {
        let (got, want) = (&rec.poses[view], &input.poses[view]);
        let off = Rotation3::from_matrix_unchecked(got.r * want.r.transpose())
            .angle()
            .to_degrees();
        if !within(off, ROTATION_DEG) {
            return Err(failed!(
                "view {view}'s rotation is {off:.3} deg off the truth"
            ));
        }
        let off = angle_deg(&got.t, &want.t);
        if !within(off, DIRECTION_DEG) {
            return Err(failed!(
                "view {view}'s baseline is {off:.3} deg off the truth"
            ));
        }
    }
    // The reconstruction's unit is view 1's baseline.
    let unit = input.poses[1].t.norm();
    let ratio = rec.poses[2].t.norm() * unit / input.poses[2].t.norm();
    if !within((ratio - 1.0).abs(), BASELINE_RATIO) {
        return Err(failed!("view 2's baseline is {ratio:.4} times the truth's"));
    }
    for (pair, list) in rec.inliers.iter().enumerate() {
        let (a, b) = (&input.views[0], &input.views[pair + 1]);
        let correct = list
            .iter()
            .filter(|&&(i, j)| {
                a.truth[i as usize].is_some() && a.truth[i as usize] == b.truth[j as usize]
            })
            .count();
        let mut in_b = vec![false; POINTS];
        b.truth
            .iter()
            .flatten()
            .for_each(|&p| in_b[p as usize] = true);
        let possible = a
            .truth
            .iter()
            .flatten()
            .filter(|&&p| in_b[p as usize])
            .count();
        if (correct as f64) < PRECISION * list.len() as f64
            || (correct as f64) < RECALL * possible as f64
        {
            return Err(failed!(
                "views 0 and {}: {correct} of {} inlier matches are right, of {possible} possible",
                pair + 1,
                list.len()
            ));
        }
    }
    // The points, in the truth's scale that fits them best; a track built from a wrong
    // match has no true point (and only a few may be so).
    let truth = |t: &Track| -> Option<u32> {
        let mut shows = t
            .keypoints
            .iter()
            .enumerate()
            .filter_map(|(v, k)| k.map(|k| input.views[v].truth[k as usize]));
        let first = shows.next()??;
        shows.all(|p| p == Some(first)).then_some(first)
    };
    let (mut along, mut squared, mut wrong) = (0.0, 0.0, 0);
    for t in &rec.tracks {
        match truth(t) {
            Some(p) => {
                along += t.point.dot(&input.points[p as usize]);
                squared += t.point.norm_squared();
            }
            None => wrong += 1,
        }
    }
    if rec.tracks.len() < POINTS / 2 || wrong as f64 > (1.0 - PRECISION) * rec.tracks.len() as f64 {
        return Err(failed!(
            "{} points recovered, {wrong} of them from wrong matches",
            rec.tracks.len()
        ));
    }
    let scale = along / squared;
    for t in &rec.tracks {
        if let Some(p) = truth(t) {
            let want = &input.points[p as usize];
            let off = (t.point * scale - want).norm();
            if !within(off, POINT_DEPTH * want.z) {
                return Err(failed!(
                    "point {p} is {off:.3} off the truth at depth {:.2}",
                    want.z
                ));
            }
        }
    }
    let seen = observations(input, &rec.tracks);
    let worst = seen
        .iter()
        .map(|o| (project(&rec.poses[o.view], &rec.tracks[o.track].point) - o.pixel).norm())
        .fold(0.0, f64::max);
    if !within(worst, REPROJECTION_PX) {
        return Err(failed!("a point reprojects {worst:.2} px off its keypoint"));
    }
    let residual = cost(&rec.poses, &rec.tracks, &seen);
    let rms = (residual / (2 * seen.len()) as f64).sqrt();
    // A least-squares fit absorbs one residual per parameter (3 a point, 6 a moving view,
    // less the free scale): the RMS the noise alone leaves.
    let parameters = 3 * rec.tracks.len() + 6 * (VIEWS - 1) - 1;
    let expected = NOISE_PX * (1.0 - parameters as f64 / (2 * seen.len()) as f64).sqrt();
    if !within((rms / expected - 1.0).abs(), RMS_SLACK) {
        return Err(failed!(
            "RMS reprojection error {rms:.4} px, where the noise leaves {expected:.4} px"
        ));
    }
    let mut digest = Digest::new();
    for list in &rec.inliers {
        digest.word(list.len() as u64);
        for &(a, b) in list {
            digest.word((a as u64) << 32 | b as u64);
        }
    }
    digest.word(rec.tracks.len() as u64);
    for pose in &rec.poses {
        for v in pose.r.iter().chain(pose.t.iter()) {
            digest.word((v * 1e6).round() as i64 as u64);
        }
    }
    digest.word((rms * 1e6).round() as u64);
    Ok(digest.0)
}

impl Task for StructureFromMotion {
    type Input = Input;
    type Scratch = ();
    const NAME: &'static str = "cpu.structure_from_motion";
    const SECTION: &'static str = "floating_point";
    const DESCRIPTION: &'static str = "Matches 3 views of 400 points, RANSAC eight-point essential matrices, triangulation and bundle adjustment, checked against the true poses (work: keypoints)";
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 20;
    const WORK_UNIT: &'static str = "keypoints";

    fn prepare(&self, seed: u64) -> Input {
        generate(seed)
    }

    fn scratch(&self, _input: &Input) -> Self::Scratch {}

    fn work(&self, input: &Input) -> f64 {
        input.views.iter().map(|v| v.pixels.len()).sum::<usize>() as f64
    }

    fn round(&self, input: &Input, _scratch: &mut ()) -> Result<u64, WorkloadError> {
        check(input, &reconstruct(input)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_recovers_the_scene_and_its_checksum_follows_the_seed() {
        let input = generate(1);
        let first = StructureFromMotion.round(&input, &mut ()).unwrap();
        assert_eq!(StructureFromMotion.round(&input, &mut ()).unwrap(), first);
        let other = StructureFromMotion.round(&generate(2), &mut ()).unwrap();
        assert_ne!(first, other);
    }

    #[test]
    fn the_resection_jacobian_matches_its_residuals() {
        let input = generate(3);
        let points = &input.points[..20];
        let pixels: Vec<_> = points.iter().map(|p| project(&input.poses[2], p)).collect();
        let mut problem = Resection {
            points,
            pixels: &pixels,
            base: input.poses[1].r,
            x: Vector6::new(0.02, -0.05, 0.03, 0.9, 0.1, -0.2),
        };
        let numeric = levenberg_marquardt::differentiate_numerically(&mut problem).unwrap();
        let exact = problem.jacobian().unwrap();
        assert!((numeric - &exact).abs().max() < 1e-4 * exact.abs().max());
    }

    #[test]
    fn the_relative_pose_jacobian_matches_its_residuals() {
        let input = generate(3);
        let x: Vec<_> = input.points[..20]
            .iter()
            .map(|p| input.poses[0].camera(p))
            .collect();
        let y: Vec<_> = input.points[..20]
            .iter()
            .map(|p| input.poses[1].camera(p))
            .collect();
        let mut problem = RelativePose::new(&x, &y, input.poses[2]);
        problem.p = Vector5::new(0.02, -0.05, 0.03, 0.1, -0.2);
        let numeric = levenberg_marquardt::differentiate_numerically(&mut problem).unwrap();
        let exact = problem.jacobian().unwrap();
        assert!((numeric - &exact).abs().max() < 1e-4 * exact.abs().max());
    }

    #[test]
    fn a_tampered_reconstruction_is_caught() {
        let input = generate(4);
        let good = reconstruct(&input).unwrap();
        assert!(check(&input, &good).is_ok());

        let mut turned = good.clone();
        let tilt = Rotation3::new(Vector3::new(0.0, 0.7f64.to_radians(), 0.0));
        turned.poses[1].r = tilt.into_inner() * turned.poses[1].r;
        assert!(check(&input, &turned)
            .unwrap_err()
            .to_string()
            .contains("rotation"));

        let mut slid = good.clone();
        let across = slid.poses[2].t.cross(&Vector3::z()).normalize();
        slid.poses[2].t = Rotation3::new(across * 3f64.to_radians()) * slid.poses[2].t;
        assert!(check(&input, &slid)
            .unwrap_err()
            .to_string()
            .contains("baseline"));

        let mut moved = good.clone();
        let at = moved
            .tracks
            .iter()
            .position(|t| input.views[0].truth[t.keypoints[0].unwrap() as usize].is_some())
            .unwrap();
        let depth = moved.tracks[at].point.z;
        moved.tracks[at].point.x += 0.1 * depth;
        assert!(check(&input, &moved)
            .unwrap_err()
            .to_string()
            .contains("point"));
        moved.tracks[at].point.x -= 0.09 * depth; // 1% of its depth: 8 px in view 0
        assert!(check(&input, &moved)
            .unwrap_err()
            .to_string()
            .contains("reprojects"));

        let mut mismatched = good.clone();
        for m in mismatched.inliers[0].iter_mut().step_by(10) {
            m.1 = (m.1 + 1) % input.views[1].pixels.len() as u32;
        }
        assert!(check(&input, &mismatched)
            .unwrap_err()
            .to_string()
            .contains("inlier matches"));
    }
}
