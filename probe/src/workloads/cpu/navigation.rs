//! cpu.navigation: shortest routes on a generated road network with petgraph's Dijkstra.
//! The map is a jittered grid of intersections with local streets, faster arterial roads
//! every tenth row and column, and a few closed streets. Every result is checked with a
//! certificate of optimality: no road offers a shorter way to any intersection, and each
//! reached intersection is entered by a road that achieves its distance.

use super::Task;
use crate::workload::{failed, WorkloadError};
use petgraph::algo::dijkstra;
use petgraph::graph::{NodeIndex, UnGraph};
use petgraph::visit::EdgeRef;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

pub struct Navigation;

const SIDE: usize = 160;
const ROUTES: usize = 24;

pub struct Input {
    graph: UnGraph<(), u64>,
    sources: Vec<NodeIndex>,
}

pub fn road_map(seed: u64, side: usize) -> UnGraph<(), u64> {
    let mut rng = Pcg64::seed_from_u64(seed);
    let points: Vec<(f64, f64)> = (0..side * side)
        .map(|i| {
            (
                (i % side) as f64 * 100.0 + rng.random_range(-30.0..30.0),
                (i / side) as f64 * 100.0 + rng.random_range(-30.0..30.0),
            )
        })
        .collect();
    let mut graph = UnGraph::with_capacity(side * side, 2 * side * side);
    let nodes: Vec<NodeIndex> = (0..side * side).map(|_| graph.add_node(())).collect();
    for y in 0..side {
        for x in 0..side {
            let here = y * side + x;
            for (there, arterial) in [
                (x + 1 < side).then(|| (here + 1, y % 10 == 0)),
                (y + 1 < side).then(|| (here + side, x % 10 == 0)),
            ]
            .into_iter()
            .flatten()
            {
                if !arterial && rng.random_bool(0.03) {
                    continue; // closed street
                }
                let (a, b) = (points[here], points[there]);
                let metres = ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt();
                let speed = if arterial {
                    0.4
                } else {
                    rng.random_range(0.9..1.6)
                };
                graph.add_edge(
                    nodes[here],
                    nodes[there],
                    (metres * speed).round() as u64 + 1,
                );
            }
        }
    }
    graph
}

/// Checks that `dist` (indexed by node, None where unreached) are the shortest distances
/// from `source`; returns their sum.
pub fn certify(
    graph: &UnGraph<(), u64>,
    source: NodeIndex,
    dist: &[Option<u64>],
) -> Result<u64, WorkloadError> {
    if dist[source.index()] != Some(0) {
        return Err(failed!("the source is not at distance 0"));
    }
    let mut entered = vec![false; graph.node_count()];
    entered[source.index()] = true;
    for e in graph.edge_references() {
        let (a, b, w) = (e.source().index(), e.target().index(), *e.weight());
        for (u, v) in [(a, b), (b, a)] {
            match (dist[u], dist[v]) {
                (Some(du), Some(dv)) => {
                    if dv > du + w {
                        return Err(failed!("a road offers a shorter route than the one found"));
                    }
                    if dv == du + w {
                        entered[v] = true;
                    }
                }
                (Some(_), None) => {
                    return Err(failed!(
                        "an intersection next to a reached one was not reached"
                    ))
                }
                _ => {}
            }
        }
    }
    if dist.iter().zip(&entered).any(|(d, e)| d.is_some() && !e) {
        return Err(failed!(
            "an intersection's distance is not achieved by any road"
        ));
    }
    Ok(dist.iter().flatten().sum())
}

impl Task for Navigation {
    type Input = Input;
    type Scratch = ();
    const NAME: &'static str = "cpu.navigation";
    const SECTION: &'static str = "integer";
    const DESCRIPTION: &'static str =
        "Dijkstra routes from 24 places on a 25,600-intersection road map, each certified optimal (work: intersections settled)";
    const VERSION: u32 = 2;
    const ITERATIONS: u64 = 4;
    const WORK_UNIT: &'static str = "nodes";
    const PARTS: usize = ROUTES;

    fn prepare(&self, seed: u64) -> Input {
        let graph = road_map(seed, SIDE);
        let mut rng = Pcg64::seed_from_u64(seed ^ 0x5eed);
        let sources = (0..ROUTES)
            .map(|_| NodeIndex::new(rng.random_range(0..graph.node_count())))
            .collect();
        Input { graph, sources }
    }

    fn scratch(&self, _input: &Input) {}

    fn work(&self, input: &Input) -> f64 {
        (input.graph.node_count() * input.sources.len()) as f64
    }

    /// One route: the part of the shared-task mode.
    fn part(&self, input: &Input, _: &mut (), index: usize) -> Result<u64, WorkloadError> {
        let source = input.sources[index];
        certify(&input.graph, source, &distances(&input.graph, source))
    }
}

/// Shortest distances from `source` by Dijkstra, indexed by node (None where unreached).
fn distances(graph: &UnGraph<(), u64>, source: NodeIndex) -> Vec<Option<u64>> {
    let mut dist = vec![None; graph.node_count()];
    for (node, d) in dijkstra(graph, source, None, |e| *e.weight()) {
        dist[node.index()] = Some(d);
    }
    dist
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn true_distances_are_certified_and_wrong_ones_are_not() {
        let graph = road_map(3, 20);
        let source = NodeIndex::new(7);
        let mut dist = distances(&graph, source);
        assert!(certify(&graph, source, &dist).is_ok());
        let far = dist.iter().position(|d| d.unwrap_or(0) > 500).unwrap();
        dist[far] = Some(dist[far].unwrap() + 1);
        assert!(certify(&graph, source, &dist).is_err());
        dist[far] = Some(dist[far].unwrap() - 2);
        assert!(certify(&graph, source, &dist).is_err());
    }

    #[test]
    fn a_round_passes_and_a_lost_or_wrong_route_is_caught() {
        let input = Navigation.prepare(1);
        let sum = Navigation.round(&input, &mut ()).unwrap();
        assert_ne!(Navigation.round(&Navigation.prepare(2), &mut ()), Ok(sum));
        let source = input.sources[0];
        let mut dist = distances(&input.graph, source);
        assert_eq!(
            certify(&input.graph, source, &dist),
            Navigation.part(&input, &mut (), 0)
        );
        // an intersection the search never settled
        let far = dist.iter().position(|d| d.unwrap_or(0) > 5000).unwrap();
        let kept = dist[far].take();
        assert!(certify(&input.graph, source, &dist)
            .unwrap_err()
            .to_string()
            .contains("not reached"));
        // a route 10 m too long
        dist[far] = kept.map(|d| d + 10);
        assert!(certify(&input.graph, source, &dist).is_err());
        // the routes of another place
        let other = distances(&input.graph, input.sources[1]);
        assert!(certify(&input.graph, source, &other).is_err());
    }
}
