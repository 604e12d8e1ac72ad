use super::*;
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Barrier, LazyLock};

/// One generated key for the whole module (keygen is the slow part).
static KEY: LazyLock<RsaKey> = LazyLock::new(|| RsaKey::generate().unwrap());

fn pool() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = pool_dir(t.path());
    (t, dir)
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_stored_spare_is_0600_in_a_0700_dir_and_comes_back_once() {
    let (_t, dir) = pool();
    store(&dir, &KEY).unwrap();
    let files = spares(&dir);
    assert_eq!(files.len(), 1);
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(&dir), 0o700);
    let key = claim(&dir).expect("the spare");
    assert_eq!(key.public(), KEY.public());
    let z = BigUint::from(42u8);
    assert_eq!(key.public().public_op(&key.private_op(&z)), z);
    // Gone once claimed: no second handout, no file left behind.
    assert!(claim(&dir).is_none());
    assert!(names(&dir).is_empty(), "{:?}", names(&dir));
}

#[test]
fn concurrent_claims_never_hand_out_a_spare_twice() {
    let (_t, dir) = pool();
    let stored = 6;
    for _ in 0..stored {
        store(&dir, &KEY).unwrap();
    }
    let claimers = 8;
    let barrier = Arc::new(Barrier::new(claimers));
    let got: usize = std::thread::scope(|s| {
        let hs: Vec<_> = (0..claimers)
            .map(|_| {
                let (dir, barrier) = (&dir, barrier.clone());
                s.spawn(move || {
                    barrier.wait();
                    std::iter::from_fn(|| claim(dir)).count()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    // Each file went to exactly one claimer.
    assert_eq!(got, stored);
    assert_eq!(count(&dir), 0);
}

#[test]
fn corrupt_or_partial_spares_are_discarded_not_used() {
    let (_t, dir) = pool();
    store(&dir, &KEY).unwrap();
    let good = fs::read_to_string(&spares(&dir)[0]).unwrap();
    fs::remove_file(&spares(&dir)[0]).unwrap();
    let flipped = good.replacen("prime ", "prime 1", 1);
    let half = &good[..good.len() / 2];
    // A consistent checksum over a wrong prime: caught by the round trip.
    let body = good
        .rsplit_once("sha256 ")
        .unwrap()
        .0
        .replacen("prime ", "prime 3", 1);
    let resummed = format!(
        "{body}sha256 {}\n",
        hex::encode(Sha256::digest(body.as_bytes()))
    );
    for (i, text) in ["", "garbage", half, &flipped, &resummed]
        .iter()
        .enumerate()
    {
        fs::write(dir.join(format!("spare-bad{i}.key")), text).unwrap();
    }
    assert!(claim(&dir).is_none());
    assert_eq!(count(&dir), 0, "the unusable spares are removed");
    // A good one beside bad ones is still found.
    fs::write(dir.join("spare-bad.key"), "x").unwrap();
    store(&dir, &KEY).unwrap();
    assert!(claim(&dir).is_some());
}

#[test]
fn a_spare_holds_its_three_primes_and_a_first_version_two_prime_spare_still_loads() {
    let text = encode(&KEY);
    assert_eq!(text.matches("\nprime ").count(), 3, "{text}");
    assert_eq!(decode(&text).unwrap().public(), KEY.public());
    // Version 1: two primes tagged p and q (an ordinary rsa-crate key).
    use rsa::traits::{PrivateKeyParts, PublicKeyParts};
    let two = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap();
    let [p, q] = two.primes() else {
        panic!("two primes")
    };
    let body = format!(
        "{MAGIC_V1}\np {}\nq {}\n",
        p.to_str_radix(16),
        q.to_str_radix(16)
    );
    let v1 = format!(
        "{body}sha256 {}\n",
        hex::encode(Sha256::digest(body.as_bytes()))
    );
    let key = decode(&v1).unwrap();
    assert_eq!(key.public().n().to_bytes_be(), two.n().to_bytes_be());
    assert_eq!(key.primes().count(), 2);
    // Four primes, or a first-version header over version-2 lines: refused.
    for bad in [
        text.replacen("prime ", "prime 3\nprime ", 1),
        text.replacen(MAGIC, MAGIC_V1, 1),
    ] {
        let body = bad.rsplit_once("sha256 ").unwrap().0;
        let resummed = format!(
            "{body}sha256 {}\n",
            hex::encode(Sha256::digest(body.as_bytes()))
        );
        assert!(decode(&resummed).is_err(), "{resummed}");
    }
}

#[test]
fn refill_is_bounded_and_single() {
    let (_t, dir) = pool();
    let mut made = 0;
    let n = refill_with(&dir, || {
        made += 1;
        Ok(KEY.clone())
    })
    .unwrap();
    assert_eq!((n, made, count(&dir)), (POOL_SIZE, POOL_SIZE, POOL_SIZE));
    // Full: nothing more is made.
    assert_eq!(refill_with(&dir, || panic!("the pool is full")).unwrap(), 0);
    // Two claimed: two made, not more.
    claim(&dir).unwrap();
    claim(&dir).unwrap();
    assert_eq!(refill_with(&dir, || Ok(KEY.clone())).unwrap(), 2);
    assert_eq!(count(&dir), POOL_SIZE);
    // Another refiller holding the lock: this one returns at once.
    claim(&dir).unwrap();
    let held = File::open(dir.join("refill.lock")).unwrap();
    held.lock().unwrap();
    assert_eq!(refill_with(&dir, || panic!("locked out")).unwrap(), 0);
    drop(held);
    // Leftovers of dead writers and claimers are swept under the lock.
    fs::write(dir.join("tmp-1-dead"), "x").unwrap();
    fs::write(dir.join("claimed-1-dead"), "x").unwrap();
    assert_eq!(refill_with(&dir, || Ok(KEY.clone())).unwrap(), 1);
    assert!(
        names(&dir)
            .iter()
            .all(|n| is_spare(n) || n == "refill.lock"),
        "{:?}",
        names(&dir)
    );
}

#[test]
fn take_uses_spares_first_then_generates_the_rest() {
    let (t, dir) = pool();
    store(&dir, &KEY).unwrap();
    let keys = take(Some(t.path()), 2).unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0].public(), KEY.public());
    assert_ne!(keys[1].public(), KEY.public());
    assert_eq!(count(&dir), 0);
}

#[test]
fn a_refill_never_brings_back_a_removed_data_dir() {
    let (t, dir) = pool();
    let data = t.path().to_path_buf();
    drop(t);
    assert!(refill_with(&dir, || Ok(KEY.clone())).is_err());
    assert!(store(&dir, &KEY).is_err());
    assert!(!data.exists());
}
