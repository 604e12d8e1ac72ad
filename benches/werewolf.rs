//! Werewolf: whole bot games in-process (5 and 13 players) and 100
//! concurrent 5-player games over loopback WebSocket on one server.

use criterion::{Criterion, criterion_group, criterion_main};
use palaver::werewolf::agent::{BotDecider, JoinOptions, join};
use palaver::werewolf::bot::Bot;
use palaver::werewolf::config::Config;
use palaver::werewolf::game::GameEvent;
use palaver::werewolf::local::play_bot_game;
use palaver::werewolf::packet::Team;
use palaver::werewolf::server::{Server, serve};
use std::sync::Arc;
use std::time::Duration;

fn in_process(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for n in [5usize, 13] {
        let cfg = Arc::new(Config::default_for(n).unwrap());
        let mut seed = 0u64;
        c.bench_function(&format!("werewolf_{n}p_bot_game_in_process"), |b| {
            b.iter(|| {
                seed += 1;
                let mut sink: Vec<GameEvent> = Vec::new();
                let out = rt
                    .block_on(play_bot_game(cfg.clone(), seed, &mut sink))
                    .unwrap();
                assert_ne!(out.winner, Team::None);
            })
        });
    }
}

fn concurrent_over_websocket(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("werewolf_loopback");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("100_concurrent_5p_games", |b| {
        b.iter(|| {
            rt.block_on(async {
                let srv = Server::new(Config::default_for(5).unwrap(), 1).unwrap();
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                let task = tokio::spawn(serve(listener, srv.clone()));
                let mut clients = Vec::new();
                for game in 0..100u64 {
                    for i in 1..=5u64 {
                        let opts = JoinOptions {
                            url: format!("ws://{addr}/ws"),
                            name: format!("g{game}x{i}"),
                            token: None,
                            seed: game * 10 + i,
                        };
                        clients.push(tokio::spawn(async move {
                            join(&opts, &mut BotDecider(Bot::new(opts.seed))).await
                        }));
                    }
                }
                for c in clients {
                    let r = c.await.unwrap().unwrap();
                    assert!(r.finished);
                }
                let outcomes = srv.wait_finished(100).await;
                assert_eq!(outcomes.len(), 100);
                assert!(
                    outcomes
                        .iter()
                        .all(|o| o.errors.is_empty() && o.winner != Team::None)
                );
                task.abort();
            })
        })
    });
    g.finish();
}

criterion_group!(benches, in_process, concurrent_over_websocket);
criterion_main!(benches);
