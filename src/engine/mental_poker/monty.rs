//! Modular exponentiation in Montgomery form over 64-bit limbs with a
//! fixed 5-bit window: the RSA operations of a match (one CRT private
//! operation per token and per OT, a public one per blinding and per audit
//! check) spend nearly all their time here, and this is about three times
//! as fast as the general-purpose `BigUint::modpow`. Results are plain
//! `BigUint`s, checked against `modpow` in the tests.

use num_bigint::BigUint;

const WINDOW: usize = 5;

/// Arithmetic modulo one odd modulus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Monty {
    modulus: BigUint,
    /// The modulus, little-endian limbs.
    m: Vec<u64>,
    /// −m⁻¹ mod 2⁶⁴.
    m_inv: u64,
    /// R² mod m, R = 2^(64·limbs), in limbs.
    r2: Vec<u64>,
}

fn limbs(x: &BigUint, n: usize) -> Vec<u64> {
    let mut v = x.to_u64_digits();
    v.resize(n, 0);
    v
}

fn from_limbs(v: &[u64]) -> BigUint {
    let halves: Vec<u32> = v
        .iter()
        .flat_map(|l| [*l as u32, (*l >> 32) as u32])
        .collect();
    BigUint::from_slice(&halves)
}

/// a >= b over equal-length little-endian limbs.
fn geq(a: &[u64], b: &[u64]) -> bool {
    for (x, y) in a.iter().rev().zip(b.iter().rev()) {
        if x != y {
            return x > y;
        }
    }
    true
}

/// a -= b, returning the borrow.
fn sub_in_place(a: &mut [u64], b: &[u64]) -> bool {
    let mut borrow = false;
    for (x, y) in a.iter_mut().zip(b) {
        let (d1, b1) = x.overflowing_sub(*y);
        let (d2, b2) = d1.overflowing_sub(u64::from(borrow));
        *x = d2;
        borrow = b1 || b2;
    }
    borrow
}

impl Monty {
    /// None when the modulus is even or zero (Montgomery form needs it odd).
    pub fn new(modulus: &BigUint) -> Option<Monty> {
        let m = modulus.to_u64_digits();
        let m0 = *m.first()?;
        if m0 & 1 == 0 {
            return None;
        }
        // Newton's iteration doubles the correct low bits each step.
        let mut inv: u64 = 1;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(m0.wrapping_mul(inv)));
        }
        let n = m.len();
        let r2 = (BigUint::from(1u8) << (128 * n)) % modulus;
        Some(Monty {
            modulus: modulus.clone(),
            r2: limbs(&r2, n),
            m,
            m_inv: inv.wrapping_neg(),
        })
    }

    pub fn modulus(&self) -> &BigUint {
        &self.modulus
    }

    /// out = a·b·R⁻¹ mod m (CIOS); `t` is scratch of len n + 2.
    fn mul(&self, a: &[u64], b: &[u64], out: &mut [u64], t: &mut [u64]) {
        let n = self.m.len();
        t.fill(0);
        for &bi in b.iter().take(n) {
            let mut carry: u64 = 0;
            for j in 0..n {
                let s = u128::from(t[j]) + u128::from(a[j]) * u128::from(bi) + u128::from(carry);
                t[j] = s as u64;
                carry = (s >> 64) as u64;
            }
            let s = u128::from(t[n]) + u128::from(carry);
            t[n] = s as u64;
            t[n + 1] = (s >> 64) as u64;
            let q = t[0].wrapping_mul(self.m_inv);
            let s = u128::from(t[0]) + u128::from(q) * u128::from(self.m[0]);
            let mut carry = (s >> 64) as u64;
            for j in 1..n {
                let s =
                    u128::from(t[j]) + u128::from(q) * u128::from(self.m[j]) + u128::from(carry);
                t[j - 1] = s as u64;
                carry = (s >> 64) as u64;
            }
            let s = u128::from(t[n]) + u128::from(carry);
            t[n - 1] = s as u64;
            t[n] = t[n + 1] + ((s >> 64) as u64);
            t[n + 1] = 0;
        }
        if t[n] != 0 || geq(&t[..n], &self.m) {
            sub_in_place(&mut t[..n], &self.m);
        }
        out.copy_from_slice(&t[..n]);
    }

    /// base^exp mod m.
    pub fn pow(&self, base: &BigUint, exp: &BigUint) -> BigUint {
        let n = self.m.len();
        let mut t = vec![0u64; n + 2];
        let reduced = if base >= &self.modulus {
            base % &self.modulus
        } else {
            base.clone()
        };
        let b = limbs(&reduced, n);
        // table[i] = base^i in Montgomery form.
        let mut table = vec![vec![0u64; n]; 1 << WINDOW];
        let mut one = vec![0u64; n];
        one[0] = 1;
        let mut tmp = vec![0u64; n];
        self.mul(&one, &self.r2, &mut tmp, &mut t);
        table[0].copy_from_slice(&tmp);
        self.mul(&b, &self.r2, &mut tmp, &mut t);
        table[1].copy_from_slice(&tmp);
        for i in 2..table.len() {
            let (lo, hi) = table.split_at_mut(i);
            self.mul(&lo[i - 1], &lo[1], &mut hi[0], &mut t);
        }
        let digits = exp.to_u64_digits();
        let bits = exp.bits() as usize;
        let bit = |i: usize| (digits[i / 64] >> (i % 64)) & 1;
        let mut acc = table[0].clone();
        let mut i = bits.div_ceil(WINDOW) * WINDOW;
        while i > 0 {
            i -= WINDOW;
            for _ in 0..WINDOW {
                tmp.copy_from_slice(&acc);
                self.mul(&tmp, &tmp, &mut acc, &mut t);
            }
            let mut w = 0usize;
            for k in (0..WINDOW).rev() {
                let idx = i + k;
                w = (w << 1) | if idx < bits { bit(idx) as usize } else { 0 };
            }
            if w != 0 {
                tmp.copy_from_slice(&acc);
                self.mul(&tmp, &table[w], &mut acc, &mut t);
            }
        }
        // Out of Montgomery form.
        tmp.copy_from_slice(&acc);
        self.mul(&tmp, &one, &mut acc, &mut t);
        from_limbs(&acc)
    }

    /// a·b mod m (plain multiplication and reduction).
    pub fn mul_mod(&self, a: &BigUint, b: &BigUint) -> BigUint {
        (a * b) % &self.modulus
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_traits::One;

    fn random(bits: usize) -> BigUint {
        let mut bytes = vec![0u8; bits.div_ceil(8)];
        rand::fill(&mut bytes[..]);
        BigUint::from_bytes_be(&bytes)
    }

    #[test]
    fn agrees_with_modpow() {
        for bits in [64usize, 192, 1024, 2048] {
            for _ in 0..8 {
                let m = random(bits) | BigUint::one() | (BigUint::one() << (bits - 1));
                let monty = Monty::new(&m).unwrap();
                let base = random(bits + 7);
                for exp in [
                    BigUint::ZERO,
                    BigUint::one(),
                    BigUint::from(65537u32),
                    random(bits),
                ] {
                    assert_eq!(
                        monty.pow(&base, &exp),
                        base.modpow(&exp, &m),
                        "{bits}-bit modulus"
                    );
                }
            }
        }
    }

    #[test]
    fn edge_values() {
        let m = BigUint::from(0xffff_ffff_ffff_ffc5u64); // odd
        let monty = Monty::new(&m).unwrap();
        let e = BigUint::from(12345u32);
        for base in [BigUint::ZERO, BigUint::one(), &m - 1u8, m.clone(), &m + 1u8] {
            assert_eq!(monty.pow(&base, &e), base.modpow(&e, &m));
        }
        assert!(Monty::new(&BigUint::from(10u8)).is_none());
        assert!(Monty::new(&BigUint::ZERO).is_none());
    }
}
