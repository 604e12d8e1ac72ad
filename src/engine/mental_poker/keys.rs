//! Session RSA keys for the blind-token OT: the public form exchanged in
//! `mp_setup_a`/`mp_setup_b`, and the CRT private operation.

use super::CryptoError;
use super::monty::Monty;
use super::num::{hex512, int_from_hex};
use crate::json::{Map, Number, Value};
use num_bigint::BigUint;
use num_integer::Integer;
use num_traits::{One, Zero};
use std::sync::Mutex;

/// The only public exponent accepted.
pub const E: u32 = 65537;
/// The only modulus size accepted.
pub const MODULUS_BITS: u64 = 2048;
/// Bytes of a modulus (I2OSP width of tokens).
pub const MODULUS_LEN: usize = (MODULUS_BITS / 8) as usize;

fn bad_exponent(e: impl std::fmt::Display) -> CryptoError {
    CryptoError::Rsa(format!("RSA public exponent must be 65537, got {e}"))
}

/// A checked RSA public key: e = 65537, n odd with exactly 2048 bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RsaPub {
    n: BigUint,
    e: BigUint,
    monty: Monty,
}

impl RsaPub {
    /// Checks e and n in the reference's order, with its error texts.
    pub fn new(e: BigUint, n: BigUint) -> Result<RsaPub, CryptoError> {
        if e != BigUint::from(E) {
            return Err(bad_exponent(e));
        }
        if n.bits() != MODULUS_BITS {
            return Err(CryptoError::Rsa(format!(
                "RSA modulus must be 2048-bit, got {}",
                n.bits()
            )));
        }
        let Some(monty) = Monty::new(&n).filter(|_| n.is_odd()) else {
            return Err(CryptoError::Rsa(
                "RSA modulus must be an odd integer > 1".into(),
            ));
        };
        Ok(RsaPub { n, e, monty })
    }

    /// Parses the wire object `{"e": <int>, "n": "<hex>"}`.
    pub fn parse(v: &Value) -> Result<RsaPub, CryptoError> {
        let obj = v
            .as_object()
            .ok_or_else(|| CryptoError::Rsa("rsa_pub must be an object".into()))?;
        // Any JSON integer is read; a wrong one is reported as the
        // reference reports it.
        let e = match obj.get("e") {
            Some(Value::Number(Number::Int(i))) if *i == i64::from(E) => BigUint::from(E),
            Some(Value::Number(Number::Int(i))) => return Err(bad_exponent(i)),
            Some(Value::Number(Number::BigInt(digits))) => return Err(bad_exponent(digits)),
            _ => return Err(CryptoError::Rsa("rsa_pub.e must be an integer".into())),
        };
        let n = obj
            .get_str("n")
            .ok_or(CryptoError::Hex)
            .and_then(int_from_hex)
            .map_err(|_| CryptoError::Rsa("rsa_pub.n must be a hex string".into()))?;
        RsaPub::new(e, n)
    }

    /// `{"e":65537,"n":"<512 lowercase hex>"}` as a value.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("e", Value::Number(Number::Int(i64::from(E))));
        m.insert("n", Value::from(hex512(&self.n)));
        Value::Object(m)
    }

    /// The compact text sent on the wire (530 characters).
    pub fn to_json_string(&self) -> String {
        crate::json::canonical::to_string(&self.to_json())
    }

    pub fn n(&self) -> &BigUint {
        &self.n
    }

    pub fn e(&self) -> &BigUint {
        &self.e
    }

    /// `x^e mod n`.
    pub fn public_op(&self, x: &BigUint) -> BigUint {
        self.monty.pow(x, &self.e)
    }
}

/// The primes palaver's own keys have: three, of 683, 683 and 682 bits
/// (multi-prime RSA, RFC 8017 §3.2). The public key is an ordinary 2048-bit
/// n, indistinguishable from a two-prime one; the private operation's CRT
/// then runs three exponentiations on 683-bit moduli, about half the work of
/// two on 1024-bit ones. docs/reliability.md gives the security argument.
const PRIME_BITS: [usize; 3] = [683, 683, 682];
/// The most primes a key may have (2048-bit moduli: three, so that no
/// factor is small enough for the elliptic-curve method).
const MAX_PRIMES: usize = 3;

/// One prime factor of n and what its part of the CRT needs.
#[derive(Clone)]
struct Factor {
    p: BigUint,
    /// d mod (p − 1).
    d: BigUint,
    monty: Monty,
    /// The product of the factors before this one (1 for the first), and
    /// its inverse mod p: Garner's recombination.
    before: BigUint,
    before_inv: BigUint,
}

/// An RSA private key kept as CRT parts, one per prime (two or three).
pub struct RsaKey {
    public: RsaPub,
    factors: Vec<Factor>,
    /// The blinding pair (bᵉ, b⁻¹) of the next private operation; squared
    /// after each use (a fresh random pair per key copy).
    blinding: Mutex<(BigUint, BigUint)>,
}

fn fresh_blinding(public: &RsaPub) -> Mutex<(BigUint, BigUint)> {
    let (b, b_inv) = random_unit(public);
    Mutex::new((public.public_op(&b), b_inv))
}

impl Clone for RsaKey {
    fn clone(&self) -> Self {
        RsaKey {
            public: self.public.clone(),
            factors: self.factors.clone(),
            blinding: fresh_blinding(&self.public),
        }
    }
}

impl std::fmt::Debug for RsaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RsaKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl RsaKey {
    /// A key from n, e, d and its primes (two or three, distinct, odd,
    /// multiplying to n); the CRT parts are derived.
    pub fn from_parts(
        n: BigUint,
        e: BigUint,
        d: &BigUint,
        primes: Vec<BigUint>,
    ) -> Result<RsaKey, CryptoError> {
        let public = RsaPub::new(e, n)?;
        let bad = |why: &str| Err(CryptoError::Rsa(why.into()));
        if !(2..=MAX_PRIMES).contains(&primes.len()) {
            return bad("an RSA key has two or three primes");
        }
        let one = BigUint::one();
        if primes.iter().any(|p| *p <= one) || primes.iter().product::<BigUint>() != public.n {
            return bad("RSA primes do not multiply to n");
        }
        if primes
            .iter()
            .enumerate()
            .any(|(i, p)| primes[..i].contains(p))
        {
            return bad("RSA primes must be distinct");
        }
        let mut factors = Vec::with_capacity(primes.len());
        let mut before = BigUint::one();
        for p in primes {
            let Some(monty) = Monty::new(&p) else {
                return bad("RSA primes must be odd");
            };
            let before_inv = (&before % &p)
                .modinv(&p)
                .ok_or(CryptoError::NotInvertible)?;
            let next = &before * &p;
            factors.push(Factor {
                d: d % (&p - 1u8),
                monty,
                before: std::mem::replace(&mut before, next),
                before_inv,
                p,
            });
        }
        Ok(RsaKey {
            blinding: fresh_blinding(&public),
            public,
            factors,
        })
    }

    /// A fresh RSA-2048 key with e = 65537 and three primes
    /// ([`PRIME_BITS`]) from the OS generator (slow: run it off the async
    /// runtime). The primes come from num-bigint-dig's generator, the one
    /// the rsa crate's key generation uses.
    pub fn generate() -> Result<RsaKey, CryptoError> {
        use num_bigint_dig::RandPrime;
        let mut rng = rand_core_06::OsRng;
        let e = BigUint::from(E);
        loop {
            let primes: Vec<BigUint> = PRIME_BITS
                .iter()
                .map(|&bits| BigUint::from_bytes_be(&rng.gen_prime(bits).to_bytes_be()))
                .collect();
            let n: BigUint = primes.iter().product();
            // Each prime has its top two bits set, so n has 2047 or 2048
            // bits; e must be invertible mod every p − 1; a repeated prime
            // (never seen in practice) is refused by from_parts.
            if n.bits() != MODULUS_BITS
                || primes
                    .iter()
                    .enumerate()
                    .any(|(i, p)| primes[..i].contains(p))
            {
                continue;
            }
            let phi: BigUint = primes.iter().map(|p| p - 1u8).product();
            let Some(d) = e.modinv(&phi) else {
                continue;
            };
            return RsaKey::from_parts(n, e, &d, primes);
        }
    }

    pub fn public(&self) -> &RsaPub {
        &self.public
    }

    /// The primes, for storing a spare key.
    pub(super) fn primes(&self) -> impl Iterator<Item = &BigUint> {
        self.factors.iter().map(|f| &f.p)
    }

    /// `z^d mod n` by CRT, with multiplicative blinding (the result is the
    /// same; only the timing is decoupled from z). The blinding factor is
    /// squared after each use, as common RSA implementations do, rather
    /// than drawn afresh (a modular inverse per operation).
    pub fn private_op(&self, z: &BigUint) -> BigUint {
        self.blinded(z, |blinded| {
            let parts = self
                .factors
                .iter()
                .map(|f| f.monty.pow_secret(blinded, &f.d));
            self.recombine(parts.collect())
        })
    }

    /// [`RsaKey::private_op`] with its CRT parts on threads of their own:
    /// for the one operation a peer waits on (an OT answer), where the
    /// other core would otherwise idle. Table building, which runs many
    /// operations side by side already, uses the single-threaded one.
    pub fn private_op_split(&self, z: &BigUint) -> BigUint {
        self.blinded(z, |blinded| {
            let parts = std::thread::scope(|s| {
                let others: Vec<_> = self
                    .factors
                    .iter()
                    .skip(1)
                    .map(|f| s.spawn(|| f.monty.pow_secret(blinded, &f.d)))
                    .collect();
                let first = self.factors.iter().take(1);
                let mut parts: Vec<_> = first.map(|f| f.monty.pow_secret(blinded, &f.d)).collect();
                // A panic in another part is a bug in pow; re-raise it.
                parts.extend(others.into_iter().map(|h| {
                    h.join()
                        .unwrap_or_else(|payload| std::panic::resume_unwind(payload))
                }));
                parts
            });
            self.recombine(parts)
        })
    }

    fn blinded(&self, z: &BigUint, op: impl FnOnce(&BigUint) -> BigUint) -> BigUint {
        let n = &self.public.n;
        let (be, b_inv) = {
            let mut pair = self
                .blinding
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let now = pair.clone();
            *pair = ((&now.0 * &now.0) % n, (&now.1 * &now.1) % n);
            now
        };
        let blinded = (z * be) % n;
        (op(&blinded) * b_inv) % n
    }

    /// Does `h` share no factor with n (every prime known here)?
    pub fn coprime(&self, h: &BigUint) -> bool {
        self.factors.iter().all(|f| !(h % &f.p).is_zero())
    }

    /// Garner's recombination of `z^(d mod (p − 1)) mod p`, one per factor
    /// in order: each step adds the next prime's residue.
    fn recombine(&self, parts: Vec<BigUint>) -> BigUint {
        let mut m = BigUint::zero();
        for (f, part) in self.factors.iter().zip(parts) {
            // (part − m) mod p without going negative.
            let diff = (part + &f.p - (&m % &f.p)) % &f.p;
            let h = (diff * &f.before_inv) % &f.p;
            m += h * &f.before;
        }
        m
    }
}

/// A uniform `r` in `[1, n)` with `gcd(r, n) = 1`, and its inverse mod n
/// (rejection sampling over random 2048-bit strings).
pub fn random_unit(public: &RsaPub) -> (BigUint, BigUint) {
    let n = &public.n;
    let mut buf = [0u8; MODULUS_LEN];
    loop {
        rand::fill(&mut buf[..]);
        let r = BigUint::from_bytes_be(&buf);
        if r >= *n {
            continue;
        }
        if let Some(inv) = r.modinv(n) {
            return (r, inv);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_2048_bit_and_invert() {
        let key = RsaKey::generate().unwrap();
        assert_eq!(key.public().n().bits(), MODULUS_BITS);
        let bits: Vec<u64> = key.primes().map(|p| p.bits()).collect();
        assert_eq!(bits, [683, 683, 682]);
        assert_eq!(key.public().e(), &BigUint::from(E));
        let parsed = RsaPub::parse(&key.public().to_json()).unwrap();
        assert_eq!(&parsed, key.public());
        let z = BigUint::from(123_456_789u32);
        let y = key.private_op(&z);
        assert_eq!(y.modpow(key.public().e(), key.public().n()), z);
        // The two-thread form gives the same root, and blinding factors
        // that change per call never leak into the result.
        assert_eq!(key.private_op_split(&z), y);
        assert_eq!(key.private_op(&z), y);
        let big = key.public().n() - 2u8;
        let root = key.private_op_split(&big);
        assert_eq!(root.modpow(key.public().e(), key.public().n()), big);
    }

    #[test]
    fn two_prime_keys_answer_alike_and_bad_prime_lists_are_refused() {
        use rsa::traits::{PrivateKeyParts, PublicKeyParts};
        let two = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap();
        let big = |x: &rsa::BigUint| BigUint::from_bytes_be(&x.to_bytes_be());
        let (n, d) = (big(two.n()), big(two.d()));
        let primes: Vec<BigUint> = two.primes().iter().map(big).collect();
        let key = RsaKey::from_parts(n.clone(), E.into(), &d, primes.clone()).unwrap();
        // Against plain z^d mod n, one thread and several.
        for z in [BigUint::from(2u8), &n - 1u8, &n / 3u8] {
            let y = z.modpow(&d, &n);
            assert_eq!(key.private_op(&z), y);
            assert_eq!(key.private_op_split(&z), y);
        }
        assert!(!key.coprime(&primes[1]));
        assert!(key.coprime(&BigUint::from(3u8)));
        let (p, q) = (primes[0].clone(), primes[1].clone());
        for bad in [
            vec![n.clone()],
            vec![p.clone(), p.clone()],
            vec![p.clone(), q.clone(), BigUint::one()],
            vec![p.clone(), q.clone(), BigUint::one(), BigUint::one()],
            vec![q, p + 2u8],
        ] {
            let refused = RsaKey::from_parts(n.clone(), E.into(), &d, bad.clone());
            assert!(matches!(refused, Err(CryptoError::Rsa(_))), "{bad:?}");
        }
    }

    #[test]
    fn three_prime_keys_agree_with_plain_exponentiation() {
        let key = RsaKey::generate().unwrap();
        let n = key.public().n().clone();
        let primes: Vec<BigUint> = key.primes().cloned().collect();
        assert!(primes.iter().all(|p| key.coprime(&(p + 2u8))));
        assert!(!key.coprime(&(&primes[2] * 5u8)));
        let phi: BigUint = primes.iter().map(|p| p - 1u8).product();
        let d = BigUint::from(E).modinv(&phi).unwrap();
        for z in [BigUint::from(2u8), &n - 1u8, &primes[0] * 7u8] {
            let y = z.modpow(&d, &n);
            assert_eq!(key.private_op(&z), y);
            assert_eq!(key.private_op_split(&z), y);
        }
    }
}
