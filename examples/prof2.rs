use palaver::{library, spec};
fn main() {
    let doc = library::bundled_spec("rps-v1").unwrap().doc();
    let mut n = 0usize;
    for _ in 0..400_000 {
        n += spec::protocol_id_of(std::hint::black_box(doc)).len();
    }
    println!("{n}");
}
