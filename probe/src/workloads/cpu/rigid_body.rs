//! cpu.rigid_body: the rapier3d physics engine drops a few hundred boxes in loose piles onto
//! the ground and simulates three seconds at 60 Hz: broad phase, contact generation and the
//! constraint solver at work. The result is checked physically: nothing may sink through
//! the ground or leave the scene, and the piles must be nearly at rest by the end.

use super::Task;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use rapier3d::prelude::*;

pub struct RigidBody;

const BOXES: usize = 300;
const STEPS: usize = 180;

impl Task for RigidBody {
    type Input = Vec<[f32; 4]>; // x, y, z, yaw of each box at the start
    type Scratch = ();
    const NAME: &'static str = "cpu.rigid_body";
    const SECTION: &'static str = "floating_point";
    const DESCRIPTION: &'static str = "rapier3d drops 300 boxes onto the ground, 180 steps at 60 Hz, checked for rest and no tunnelling (work: body-steps)";
    const VERSION: u32 = 1;
    const ITERATIONS: u64 = 1;
    const WORK_UNIT: &'static str = "body-steps";

    fn prepare(&self, seed: u64) -> Vec<[f32; 4]> {
        let mut rng = Pcg64::seed_from_u64(seed);
        (0..BOXES)
            .map(|i| {
                // a 10 x 10 grid, three layers high, loosely jittered so that boxes land on edges
                let (gx, gz, layer) = ((i % 10) as f32, ((i / 10) % 10) as f32, (i / 100) as f32);
                let jitter = |rng: &mut Pcg64| rng.random_range(-0.3..0.3f32);
                [
                    gx * 1.6 - 8.0 + jitter(&mut rng),
                    1.0 + layer * 1.5,
                    gz * 1.6 - 8.0 + jitter(&mut rng),
                    rng.random_range(0.0..3.0),
                ]
            })
            .collect()
    }

    fn scratch(&self, _input: &Vec<[f32; 4]>) {}

    fn work(&self, input: &Vec<[f32; 4]>) -> f64 {
        (input.len() * STEPS) as f64
    }

    fn round(&self, starts: &Vec<[f32; 4]>, _: &mut ()) -> Result<u64, String> {
        check(&simulate(starts))
    }
}

/// Where a box ended and how fast it still moves.
struct End {
    at: [f32; 3],
    speed: f32,
}

/// Drops the boxes and runs STEPS steps; where each box ended.
fn simulate(starts: &[[f32; 4]]) -> Vec<End> {
    let mut bodies = RigidBodySet::new();
    let mut colliders = ColliderSet::new();
    colliders.insert(
        ColliderBuilder::cuboid(100.0, 0.5, 100.0)
            .translation(vector![0.0, -0.5, 0.0])
            .build(),
    );
    let handles: Vec<RigidBodyHandle> = starts
        .iter()
        .map(|[x, y, z, yaw]| {
            let body = RigidBodyBuilder::dynamic()
                .translation(vector![*x, *y, *z])
                .rotation(vector![0.0, *yaw, 0.0])
                .build();
            let handle = bodies.insert(body);
            colliders.insert_with_parent(
                ColliderBuilder::cuboid(0.5, 0.5, 0.5).friction(0.8).build(),
                handle,
                &mut bodies,
            );
            handle
        })
        .collect();
    let mut pipeline = PhysicsPipeline::new();
    let (mut islands, mut broad, mut narrow) = (
        IslandManager::new(),
        DefaultBroadPhase::new(),
        NarrowPhase::new(),
    );
    let (mut joints, mut multibody, mut ccd) = (
        ImpulseJointSet::new(),
        MultibodyJointSet::new(),
        CCDSolver::new(),
    );
    let params = IntegrationParameters::default();
    let gravity = vector![0.0, -9.81, 0.0];
    for _ in 0..STEPS {
        pipeline.step(
            &gravity,
            &params,
            &mut islands,
            &mut broad,
            &mut narrow,
            &mut bodies,
            &mut colliders,
            &mut joints,
            &mut multibody,
            &mut ccd,
            &(),
            &(),
        ); // fmt: skip
    }
    handles
        .into_iter()
        .map(|handle| {
            let body = &bodies[handle];
            let p = body.translation();
            End {
                at: [p.x, p.y, p.z],
                speed: body.linvel().norm(),
            }
        })
        .collect()
}

/// No box may have sunk through the ground or left the scene, and none may still move
/// fast; returns a checksum of where they ended.
fn check(ends: &[End]) -> Result<u64, String> {
    let mut checksum = 0u64;
    let mut fastest = 0.0f32;
    for end in ends {
        let [x, y, z] = end.at;
        if !(y > 0.3 && y < 400.0 && x.abs() < 100.0 && z.abs() < 100.0) {
            return Err(format!(
                "a box ended at ({x:.2}, {y:.2}, {z:.2}): through the ground or out of the scene"
            ));
        }
        fastest = fastest.max(end.speed);
        checksum = checksum.rotate_left(5)
            ^ ((x * 1000.0) as i64 as u64)
            ^ ((y * 1000.0) as i64 as u64) << 20;
    }
    if fastest > 3.0 {
        return Err(format!(
            "a box still moves at {fastest:.1} m/s after the fall"
        ));
    }
    Ok(checksum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_passes_and_a_misplaced_or_moving_box_is_caught() {
        let starts = RigidBody.prepare(1);
        let mut ends = simulate(&starts);
        let sum = check(&ends).unwrap();
        assert_eq!(RigidBody.round(&starts, &mut ()), Ok(sum));
        // a box that fell through the ground
        let kept = ends[40].at;
        ends[40].at[1] = -0.4;
        assert!(check(&ends).unwrap_err().contains("through the ground"));
        // a box thrown out of the scene
        ends[40].at = [kept[0] + 150.0, kept[1], kept[2]];
        assert!(check(&ends).unwrap_err().contains("out of the scene"));
        ends[40].at = kept;
        // a box still sliding
        ends[250].speed = 4.0;
        assert!(check(&ends).unwrap_err().contains("still moves"));
    }
}
