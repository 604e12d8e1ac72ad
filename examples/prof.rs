use palaver::json::{self, Value};
use palaver::library;
use std::collections::BTreeMap;
use std::time::Instant;
fn main() {
    let text = std::fs::read_to_string("tests/data/aigenora/validation_cases.jsonl").unwrap();
    let cases: Vec<Value> = text.lines().map(|l| json::parse_str(l).unwrap()).collect();
    let mut per: BTreeMap<String, (u128, usize)> = BTreeMap::new();
    for _ in 0..200 {
        for c in &cases {
            let p = c.get("protocol").unwrap().as_str().unwrap();
            let s = library::bundled_spec(p).unwrap();
            let m = c.get("msg").unwrap();
            let d = c.get("direction").and_then(Value::as_str);
            let n = c.get("message").and_then(Value::as_str);
            let ok = c.get("ok").unwrap().as_bool().unwrap();
            let t = Instant::now();
            let _ = std::hint::black_box(s.validate_message(m, d, n));
            let e = t.elapsed().as_nanos();
            let k = format!("{p} {}", if ok { "ok" } else { "err" });
            let x = per.entry(k).or_default();
            x.0 += e;
            x.1 += 1;
        }
    }
    let mut tot = 0;
    let mut n = 0;
    for (k, (t, c)) in &per {
        println!("{k:40} {:8.0} ns x {}", *t as f64 / *c as f64, c / 200);
        tot += t;
        n += c;
    }
    println!("avg {:.0}", tot as f64 / n as f64);
}
