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

/// An RSA private key kept as CRT parts.
pub struct RsaKey {
    public: RsaPub,
    p: BigUint,
    q: BigUint,
    dp: BigUint,
    dq: BigUint,
    qinv: BigUint,
    mp: Monty,
    mq: Monty,
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
            p: self.p.clone(),
            q: self.q.clone(),
            dp: self.dp.clone(),
            dq: self.dq.clone(),
            qinv: self.qinv.clone(),
            mp: self.mp.clone(),
            mq: self.mq.clone(),
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
    /// A key from n, e, d and the primes; the CRT exponents are derived.
    pub fn from_parts(
        n: BigUint,
        e: BigUint,
        d: &BigUint,
        p: BigUint,
        q: BigUint,
    ) -> Result<RsaKey, CryptoError> {
        let public = RsaPub::new(e, n)?;
        let one = BigUint::one();
        if p <= one || q <= one || &p * &q != public.n {
            return Err(CryptoError::Rsa("RSA primes do not multiply to n".into()));
        }
        let qinv = q.modinv(&p).ok_or(CryptoError::NotInvertible)?;
        let (Some(mp), Some(mq)) = (Monty::new(&p), Monty::new(&q)) else {
            return Err(CryptoError::Rsa("RSA primes must be odd".into()));
        };
        Ok(RsaKey {
            dp: d % (&p - 1u8),
            dq: d % (&q - 1u8),
            qinv,
            blinding: fresh_blinding(&public),
            public,
            p,
            q,
            mp,
            mq,
        })
    }

    /// A fresh RSA-2048 key with e = 65537 from the OS generator (slow:
    /// run it off the async runtime).
    pub fn generate() -> Result<RsaKey, CryptoError> {
        use rsa::traits::{PrivateKeyParts, PublicKeyParts};
        let fail = |e: rsa::Error| CryptoError::Rsa(format!("RSA key generation failed: {e}"));
        let key = rsa::RsaPrivateKey::new_with_exp(
            &mut rsa::rand_core::OsRng,
            MODULUS_BITS as usize,
            &rsa::BigUint::from(E),
        )
        .map_err(fail)?;
        let big = |x: &rsa::BigUint| BigUint::from_bytes_be(&x.to_bytes_be());
        let [p, q] = key.primes() else {
            return Err(CryptoError::Rsa(
                "RSA key generation gave more than two primes".into(),
            ));
        };
        RsaKey::from_parts(big(key.n()), big(key.e()), &big(key.d()), big(p), big(q))
    }

    pub fn public(&self) -> &RsaPub {
        &self.public
    }

    /// The primes (p, q), for storing a spare key.
    pub(super) fn primes(&self) -> (&BigUint, &BigUint) {
        (&self.p, &self.q)
    }

    /// `z^d mod n` by CRT, with multiplicative blinding (the result is the
    /// same; only the timing is decoupled from z). The blinding factor is
    /// squared after each use, as common RSA implementations do, rather
    /// than drawn afresh (a modular inverse per operation).
    pub fn private_op(&self, z: &BigUint) -> BigUint {
        self.blinded(z, |blinded| self.crt(blinded))
    }

    /// [`RsaKey::private_op`] with its two CRT halves on two threads: for
    /// the one operation a peer waits on (an OT answer), where the other
    /// core would otherwise idle. Table building, which runs many
    /// operations side by side already, uses the single-threaded one.
    pub fn private_op_split(&self, z: &BigUint) -> BigUint {
        self.blinded(z, |blinded| {
            let (m1, m2) = std::thread::scope(|s| {
                let half = s.spawn(|| self.mq.pow_secret(blinded, &self.dq));
                let m1 = self.mp.pow_secret(blinded, &self.dp);
                // A panic in the other half is a bug in pow; re-raise it.
                let m2 = half
                    .join()
                    .unwrap_or_else(|payload| std::panic::resume_unwind(payload));
                (m1, m2)
            });
            self.recombine(&m1, m2)
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

    /// Does `h` share no factor with n (both primes known here)?
    pub fn coprime(&self, h: &BigUint) -> bool {
        !(h % &self.p).is_zero() && !(h % &self.q).is_zero()
    }

    fn crt(&self, z: &BigUint) -> BigUint {
        let m1 = self.mp.pow_secret(z, &self.dp);
        let m2 = self.mq.pow_secret(z, &self.dq);
        self.recombine(&m1, m2)
    }

    /// Garner's recombination of `z^dp mod p` and `z^dq mod q`.
    fn recombine(&self, m1: &BigUint, m2: BigUint) -> BigUint {
        // (m1 - m2) mod p without going negative.
        let diff = (m1 + &self.p - (&m2 % &self.p)) % &self.p;
        let h = (diff * &self.qinv) % &self.p;
        m2 + h * &self.q
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
}
