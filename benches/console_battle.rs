//! The tank battle's console frame (issue 42): a 5 v 5 match with power-ups
//! played 150 ticks by both sides' auto commanders (shells in flight, tanks
//! damaged and destroyed), drawn at 120×40.
//!
//! - `battle/pane_120x40`: the battlefield pane alone (`BattlePaint::draw`
//!   into a `TestBackend`) from the typed world.
//! - `battle/console_120x40`: a whole console frame (`Headless::screen`)
//!   attached to a session dir whose snapshot.json carries that world (the
//!   watcher's read of the file is done before timing).
//!
//! Run: `cargo bench --bench console_battle`. Target ≤ 3 ms per frame. A
//! mean and median of 500 frames are printed at the end.

use criterion::Criterion;
use palaver::json::{self, Map, Value};
use palaver::obj;
use palaver::protocols::tank::commander::Commander;
use palaver::protocols::tank::{Team, UnitId, World};
use palaver::tui::panes::battlefield::BattlePaint;
use palaver::tui::theme::Theme;
use palaver::tui::{Headless, load_settings};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use std::time::{Duration, Instant};

const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;

fn mid_match() -> World {
    let options: Map = json::parse_str(r#"{"team_size":5,"pickup_mode":"powerups"}"#)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let mut w = World::from_options(&options).expect("default match");
    let (mut host, mut guest) = (Commander::new(Team::Host), Commander::new(Team::Guest));
    let strategy = Value::Object(Map::new());
    for _ in 0..150 {
        let next = w.tick + 1;
        let h = host.commands(&w, next, &strategy).expect("host commands");
        let g = guest.commands(&w, next, &strategy).expect("guest commands");
        w.step(&h, &g);
    }
    assert!(!w.game_over, "still mid-match");
    w
}

fn quick_stats(frames: usize, mut f: impl FnMut()) -> (f64, f64) {
    let mut t: Vec<f64> = (0..frames)
        .map(|_| {
            let t0 = Instant::now();
            f();
            t0.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t.iter().sum::<f64>() / frames as f64, t[frames / 2])
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut c = Criterion::default().configure_from_args();
    let world = mid_match();
    let theme = Theme::builtin_default();
    let mut figures = Vec::new();
    let mut g = c.benchmark_group("battle");

    let mut term = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).expect("terminal");
    let mut draw = || {
        term.draw(|f| {
            BattlePaint {
                world: Ok(&world),
                title: "bench ",
                side: Some(Team::Host),
                spectating: false,
                selected: Some(UnitId {
                    team: Team::Host,
                    index: 0,
                }),
                target: None,
                cursor: Some((15, 15)),
                status: "battle",
                line: None,
                note: None,
                hint: "a assault · . unit",
                focused: true,
            }
            .draw(f, f.area(), &theme)
        })
        .expect("draw");
    };
    g.bench_function("pane_120x40", |b| b.iter(&mut draw));
    let (mean, p50) = quick_stats(500, &mut draw);
    figures.push(("battle/pane_120x40", mean, p50));

    let data = tempfile::tempdir().expect("tempdir");
    let dir = data.path().join("sessions").join("tank").join("engine");
    std::fs::create_dir_all(&dir).expect("dir");
    let snap = obj! {
        "phase" => "battle",
        "role" => "host",
        "tick" => world.tick,
        "world" => world.to_value(),
        "protocol_name" => "tank-battle-v1",
    };
    std::fs::write(
        dir.join("snapshot.json"),
        json::canonical::to_string(&Value::Object(snap)),
    )
    .expect("snapshot");
    let _rt = rt.enter();
    let settings = load_settings(data.path(), None, None).expect("settings");
    let mut h = Headless::new(settings, WIDTH, HEIGHT);
    h.app.attach(&dir);
    let ok = rt.block_on(h.until(Duration::from_secs(30), |app| {
        app.sessions.tank().and_then(|t| t.world()).is_some()
    }));
    assert!(ok, "the battlefield did not load:\n{}", h.screen());
    g.bench_function("console_120x40", |b| b.iter(|| black_box(h.screen())));
    let (mean, p50) = quick_stats(500, || {
        black_box(h.screen());
    });
    figures.push(("battle/console_120x40", mean, p50));
    g.finish();
    c.final_summary();
    println!("\n| benchmark | mean | median |\n|---|---|---|");
    for (k, mean, p50) in figures {
        println!("| {k} | {mean:.0} µs | {p50:.0} µs |");
    }
}
