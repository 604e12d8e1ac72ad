use palaver::json::{self, Value};
use palaver::library;
fn main() {
    let text = std::fs::read_to_string("tests/data/aigenora/validation_cases.jsonl").unwrap();
    let cases: Vec<_> = text
        .lines()
        .map(|l| json::parse_str(l).unwrap())
        .map(|c| {
            (
                library::bundled_spec(c.get("protocol").unwrap().as_str().unwrap()).unwrap(),
                c.get("msg").unwrap().clone(),
                c.get("direction")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                c.get("message").and_then(Value::as_str).map(str::to_owned),
            )
        })
        .collect();
    let mut n = 0;
    for _ in 0..2000 {
        for (s, m, d, name) in &cases {
            n += s
                .validate_message(std::hint::black_box(m), d.as_deref(), name.as_deref())
                .is_ok() as usize;
        }
    }
    println!("{n}");
}
