//! tank-battle-v1 simulation benchmark: one tick of the default 5 v 5
//! match (31×31 map, power-ups on) with every tank commanded (pseudo-random
//! move, aim and fire from a fixed xorshift seed), measured two ways:
//! `tank/step` is `World::step` alone, `tank/step+hash` adds
//! `World::state_hash` (the SHA-256 of the world's canonical JSON that every
//! frame carries), i.e. the host's simulation cost per tick without the
//! commander. The world restarts from tick 0 whenever a match ends.
//!
//! `tank/step+commanders` is the whole per-tick cost with the auto
//! commander: both sides' `Commander::commands` (A* navigation, target
//! choice, fire) from the default strategy, then `World::step` and
//! `World::state_hash`; `tank/commanders` is the two commanders alone on
//! a mid-match world.
//!
//! Run: `cargo bench --bench tank`. The issue's budget is 0.2 ms per tick
//! for simulation + commander at 5 v 5.

use criterion::{Criterion, criterion_group, criterion_main};
use palaver::json::Value;
use palaver::json::{self, Map};
use palaver::protocols::tank::commander::Commander;
use palaver::protocols::tank::{Command, Dir, Team, World};
use std::hint::black_box;

fn commands(world: &World, seed: &mut u64) -> Vec<Command> {
    world
        .tanks
        .iter()
        .map(|t| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            Command {
                unit: t.id,
                mv: Dir::ALL[(*seed % 5) as usize],
                aim: Dir::ALL[(*seed / 5 % 5) as usize],
                fire: (*seed / 25).is_multiple_of(2),
            }
        })
        .collect()
}

fn ticks(c: &mut Criterion) {
    let options: Map = json::parse_str(r#"{"team_size":5,"pickup_mode":"powerups"}"#)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let start = World::from_options(&options).expect("default match");
    let mut g = c.benchmark_group("tank");
    for hash in [false, true] {
        let mut world = start.clone();
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        g.bench_function(if hash { "step+hash" } else { "step" }, |b| {
            b.iter(|| {
                if world.game_over {
                    world = start.clone();
                }
                let cmds = commands(&world, &mut seed);
                world.step(&cmds, &cmds);
                if hash {
                    black_box(world.state_hash());
                }
            })
        });
    }
    let strategy = Value::Object(Map::new());
    let fresh = || {
        (
            Commander::new(Team::Host),
            Commander::new(Team::Guest),
            start.clone(),
        )
    };
    let (mut host, mut guest, mut world) = fresh();
    g.bench_function("step+commanders", |b| {
        b.iter(|| {
            if world.game_over {
                (host, guest, world) = fresh();
            }
            let tick = world.tick + 1;
            let h = host.commands(&world, tick, &strategy).unwrap_or_default();
            let a = guest.commands(&world, tick, &strategy).unwrap_or_default();
            world.step(&h, &a);
            black_box(world.state_hash());
        })
    });
    // A mid-match world: 60 ticks of commanded play.
    let (mut host, mut guest, mut mid) = fresh();
    for _ in 0..60 {
        let tick = mid.tick + 1;
        let h = host.commands(&mid, tick, &strategy).unwrap_or_default();
        let a = guest.commands(&mid, tick, &strategy).unwrap_or_default();
        mid.step(&h, &a);
    }
    g.bench_function("commanders", |b| {
        b.iter(|| {
            let tick = mid.tick + 1;
            black_box(host.commands(&mid, tick, &strategy).unwrap_or_default());
            black_box(guest.commands(&mid, tick, &strategy).unwrap_or_default());
        })
    });
    g.finish();
}

criterion_group!(benches, ticks);
criterion_main!(benches);
