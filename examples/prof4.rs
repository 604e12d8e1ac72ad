use palaver::json;
use palaver::library;
fn main() {
    let s = library::bundled_spec("rps-v1").unwrap();
    let m = json::parse_str(r#"{"action":"join","best_of":3}"#).unwrap();
    let mut n = 0;
    for _ in 0..20_000_000 {
        n += s
            .validate_message(std::hint::black_box(&m), Some("guest_to_host"), None)
            .is_ok() as usize;
    }
    println!("{n}");
}
