//! Modular exponentiation in Montgomery form over 64-bit limbs with a
//! fixed 5-bit window: the RSA operations of a match (one CRT private
//! operation per token and per OT, a public one per blinding and per audit
//! check) spend nearly all their time here, and this is about three times
//! as fast as the general-purpose `BigUint::modpow`. Results are plain
//! `BigUint`s, checked against `modpow` in the tests.

use num_bigint::BigUint;
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};

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

/// The last step of a Montgomery product: `t` (with `hi`, the word above
/// it) is below 2m; it becomes t − m when t ≥ m, else stays. No branch and
/// no early exit on the values: the subtraction is always done and the
/// result picked with a constant-time select.
#[inline(always)]
fn reduce_once(t: &mut [u64], hi: u64, m: &[u64], scratch: &mut [u64]) {
    scratch.copy_from_slice(t);
    let borrow = sub_in_place(scratch, m);
    // Keep t only when it is below m: no carry word and the subtraction
    // borrowed.
    let keep = hi.ct_eq(&0) & Choice::from(u8::from(borrow));
    for (x, d) in t.iter_mut().zip(scratch.iter()) {
        *x = u64::conditional_select(d, x, keep);
    }
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

/// Calls `$self.$pow(base, exp, mul, sqr)` with the kernel for the
/// modulus's size: the RSA sizes get one whose loops the compiler unrolls
/// for their limb count (683-bit CRT parts of palaver's three-prime keys,
/// 1024-bit ones of two-prime keys, 2048-bit public ops).
macro_rules! by_size {
    ($self:ident, $pow:ident, $base:expr, $exp:expr) => {
        match $self.m.len() {
            11 => $self.$pow(
                $base,
                $exp,
                |a, b, out| $self.mul_fixed::<11>(a, b, out),
                |a, out| $self.sqr_fixed::<11>(a, out),
            ),
            16 => $self.$pow(
                $base,
                $exp,
                |a, b, out| $self.mul_fixed::<16>(a, b, out),
                |a, out| $self.sqr_fixed::<16>(a, out),
            ),
            32 => $self.$pow(
                $base,
                $exp,
                |a, b, out| $self.mul_fixed::<32>(a, b, out),
                |a, out| $self.sqr_fixed::<32>(a, out),
            ),
            n => {
                let t = std::cell::RefCell::new(vec![0u64; n + 2]);
                $self.$pow(
                    $base,
                    $exp,
                    |a, b, out| $self.mul(a, b, out, &mut t.borrow_mut()),
                    |a, out| $self.mul(a, a, out, &mut t.borrow_mut()),
                )
            }
        }
    };
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
        let hi = t[n];
        let mut scratch = vec![0u64; n];
        reduce_once(&mut t[..n], hi, &self.m, &mut scratch);
        out.copy_from_slice(&t[..n]);
    }

    /// base^exp mod m.
    pub fn pow(&self, base: &BigUint, exp: &BigUint) -> BigUint {
        by_size!(self, pow_with, base, exp)
    }

    /// base^exp mod m for a secret exponent (the CRT private exponents):
    /// the sequence of operations and the memory touched depend only on
    /// the modulus's size, never on exp's bits or length — see
    /// [`Monty::pow_ct_with`].
    pub fn pow_secret(&self, base: &BigUint, exp: &BigUint) -> BigUint {
        by_size!(self, pow_ct_with, base, exp)
    }

    /// out = a·b·R⁻¹ mod m for exactly N limbs, each word of b multiplied
    /// in and reduced in one pass over the accumulator.
    #[inline(always)]
    fn mul_fixed<const N: usize>(&self, a: &[u64], b: &[u64], out: &mut [u64]) {
        let (Ok(a), Ok(b), Ok(m), Ok(out)) = (
            <&[u64; N]>::try_from(a),
            <&[u64; N]>::try_from(b),
            <&[u64; N]>::try_from(&self.m[..]),
            <&mut [u64; N]>::try_from(out),
        ) else {
            unreachable!("operands have the modulus's limb count");
        };
        let mut t = [0u64; N];
        let mut hi: u64 = 0;
        for &bi in b {
            let s = u128::from(t[0]) + u128::from(a[0]) * u128::from(bi);
            let mut c1 = (s >> 64) as u64;
            let lo = s as u64;
            let q = lo.wrapping_mul(self.m_inv);
            let s2 = u128::from(lo) + u128::from(q) * u128::from(m[0]);
            let mut c2 = (s2 >> 64) as u64;
            for j in 1..N {
                let s = u128::from(t[j]) + u128::from(a[j]) * u128::from(bi) + u128::from(c1);
                c1 = (s >> 64) as u64;
                let s2 = u128::from(s as u64) + u128::from(q) * u128::from(m[j]) + u128::from(c2);
                c2 = (s2 >> 64) as u64;
                t[j - 1] = s2 as u64;
            }
            let s = u128::from(hi) + u128::from(c1) + u128::from(c2);
            t[N - 1] = s as u64;
            hi = (s >> 64) as u64;
        }
        reduce_once(&mut t, hi, m, &mut [0u64; N]);
        *out = t;
    }

    /// out = a²·R⁻¹ mod m for exactly N limbs (N ≤ 32): each cross
    /// product once, doubled, the squares added, then a Montgomery
    /// reduction of the double-width square (a quarter fewer products than
    /// [`Monty::mul_fixed`]).
    #[inline(always)]
    fn sqr_fixed<const N: usize>(&self, a: &[u64], out: &mut [u64]) {
        let (Ok(a), Ok(m), Ok(out)) = (
            <&[u64; N]>::try_from(a),
            <&[u64; N]>::try_from(&self.m[..]),
            <&mut [u64; N]>::try_from(out),
        ) else {
            unreachable!("operands have the modulus's limb count");
        };
        let mut wide = [0u64; 64];
        let t = &mut wide[..2 * N];
        for i in 0..N {
            let mut c: u64 = 0;
            for j in i + 1..N {
                let s = u128::from(t[i + j]) + u128::from(a[i]) * u128::from(a[j]) + u128::from(c);
                t[i + j] = s as u64;
                c = (s >> 64) as u64;
            }
            t[i + N] = c;
        }
        let mut shifted: u64 = 0;
        for w in t.iter_mut() {
            let v = *w;
            *w = (v << 1) | shifted;
            shifted = v >> 63;
        }
        let mut c: u64 = 0;
        for i in 0..N {
            let p = u128::from(a[i]) * u128::from(a[i]);
            let s = u128::from(t[2 * i]) + (p & u128::from(u64::MAX)) + u128::from(c);
            t[2 * i] = s as u64;
            let s = u128::from(t[2 * i + 1]) + (p >> 64) + (s >> 64);
            t[2 * i + 1] = s as u64;
            c = (s >> 64) as u64;
        }
        // Montgomery reduction: clear one low word per step.
        let mut top: u64 = 0;
        for i in 0..N {
            let q = t[i].wrapping_mul(self.m_inv);
            let mut c: u64 = 0;
            for j in 0..N {
                let s = u128::from(t[i + j]) + u128::from(q) * u128::from(m[j]) + u128::from(c);
                t[i + j] = s as u64;
                c = (s >> 64) as u64;
            }
            let s = u128::from(t[i + N]) + u128::from(c) + u128::from(top);
            t[i + N] = s as u64;
            top = (s >> 64) as u64;
        }
        let mut r = [0u64; N];
        r.copy_from_slice(&t[N..]);
        reduce_once(&mut r, top, m, &mut [0u64; N]);
        *out = r;
    }

    /// base^exp mod m with `mul` as the Montgomery product and `sqr` as the
    /// Montgomery square: a fixed window
    /// of five bits, or plain square-and-multiply for short exponents
    /// (e = 65537) where a table would cost more than it saves.
    #[inline(always)]
    fn pow_with(
        &self,
        base: &BigUint,
        exp: &BigUint,
        mut mul: impl FnMut(&[u64], &[u64], &mut [u64]),
        mut sqr: impl FnMut(&[u64], &mut [u64]),
    ) -> BigUint {
        let n = self.m.len();
        let reduced = if base >= &self.modulus {
            base % &self.modulus
        } else {
            base.clone()
        };
        let b = limbs(&reduced, n);
        let bits = exp.bits() as usize;
        let window = if bits <= 64 { 1 } else { WINDOW };
        // table[i] = base^i in Montgomery form.
        let mut table = vec![vec![0u64; n]; 1 << window];
        let mut one = vec![0u64; n];
        one[0] = 1;
        let mut tmp = vec![0u64; n];
        mul(&one, &self.r2, &mut tmp);
        table[0].copy_from_slice(&tmp);
        mul(&b, &self.r2, &mut tmp);
        table[1].copy_from_slice(&tmp);
        for i in 2..table.len() {
            let (lo, hi) = table.split_at_mut(i);
            mul(&lo[i - 1], &lo[1], &mut hi[0]);
        }
        let digits = exp.to_u64_digits();
        let bit = |i: usize| (digits[i / 64] >> (i % 64)) & 1;
        let mut acc = table[0].clone();
        let mut i = bits.div_ceil(window) * window;
        while i > 0 {
            i -= window;
            for _ in 0..window {
                tmp.copy_from_slice(&acc);
                sqr(&tmp, &mut acc);
            }
            let mut w = 0usize;
            for k in (0..window).rev() {
                let idx = i + k;
                w = (w << 1) | if idx < bits { bit(idx) as usize } else { 0 };
            }
            if w != 0 {
                tmp.copy_from_slice(&acc);
                mul(&tmp, &table[w], &mut acc);
            }
        }
        // Out of Montgomery form.
        tmp.copy_from_slice(&acc);
        mul(&tmp, &one, &mut acc);
        from_limbs(&acc)
    }

    /// [`Monty::pow_with`] in constant time with respect to `exp`: the
    /// exponent is read as 64·limbs bits (its own length is not used), every
    /// 5-bit window costs five squarings and one multiplication (by base⁰,
    /// the Montgomery one, for a zero window), and the window's table entry
    /// is picked by reading all 32 entries and keeping one with
    /// `subtle`'s constant-time select. The Montgomery kernels end with a
    /// branch-free conditional subtraction ([`reduce_once`]).
    #[inline(always)]
    fn pow_ct_with(
        &self,
        base: &BigUint,
        exp: &BigUint,
        mut mul: impl FnMut(&[u64], &[u64], &mut [u64]),
        mut sqr: impl FnMut(&[u64], &mut [u64]),
    ) -> BigUint {
        let n = self.m.len();
        let reduced = if base >= &self.modulus {
            base % &self.modulus
        } else {
            base.clone()
        };
        let b = limbs(&reduced, n);
        // The exponent's width is public: the modulus's (a longer exponent,
        // never a CRT one, is read at its own limb count).
        let mut digits = exp.to_u64_digits();
        digits.resize(digits.len().max(n), 0);
        let bits = digits.len() * 64;
        let mut table = vec![vec![0u64; n]; 1 << WINDOW];
        let mut one = vec![0u64; n];
        one[0] = 1;
        let mut tmp = vec![0u64; n];
        mul(&one, &self.r2, &mut tmp);
        table[0].copy_from_slice(&tmp);
        mul(&b, &self.r2, &mut tmp);
        table[1].copy_from_slice(&tmp);
        for i in 2..table.len() {
            let (lo, hi) = table.split_at_mut(i);
            mul(&lo[i - 1], &lo[1], &mut hi[0]);
        }
        let mut acc = table[0].clone();
        let mut entry = vec![0u64; n];
        let mut i = bits.div_ceil(WINDOW) * WINDOW;
        while i > 0 {
            i -= WINDOW;
            for _ in 0..WINDOW {
                tmp.copy_from_slice(&acc);
                sqr(&tmp, &mut acc);
            }
            // The window's value, from bit positions alone (public).
            let mut w = 0u64;
            for k in (0..WINDOW).rev() {
                let idx = i + k;
                let bit = if idx < bits {
                    (digits[idx / 64] >> (idx % 64)) & 1
                } else {
                    0
                };
                w = (w << 1) | bit;
            }
            for (k, row) in table.iter().enumerate() {
                let hit = (k as u64).ct_eq(&w);
                for (e, r) in entry.iter_mut().zip(row) {
                    e.conditional_assign(r, hit);
                }
            }
            tmp.copy_from_slice(&acc);
            mul(&tmp, &entry, &mut acc);
        }
        tmp.copy_from_slice(&acc);
        mul(&tmp, &one, &mut acc);
        from_limbs(&acc)
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
        for bits in [64usize, 192, 682, 683, 704, 1024, 2048] {
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
                    assert_eq!(
                        monty.pow_secret(&base, &exp),
                        base.modpow(&exp, &m),
                        "{bits}-bit modulus, constant time"
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
        // The unrolled kernels (11, 16 and 32 limbs) at the edges too, with
        // all-ones moduli where every carry propagates.
        for bits in [704usize, 1024, 2048] {
            let m = (BigUint::one() << bits) - 1u8;
            let monty = Monty::new(&m).unwrap();
            for base in [BigUint::ZERO, BigUint::one(), &m - 1u8, m.clone(), &m + 1u8] {
                for e in [BigUint::from(65537u32), &m - 2u8] {
                    assert_eq!(monty.pow(&base, &e), base.modpow(&e, &m), "{bits}");
                    assert_eq!(monty.pow_secret(&base, &e), base.modpow(&e, &m));
                }
                // Exponents with zero windows everywhere but the top, and a
                // long one past the modulus's width.
                for e in [BigUint::one() << (bits - 1), &m * &m + 7u8] {
                    assert_eq!(monty.pow_secret(&base, &e), base.modpow(&e, &m));
                }
            }
        }
        assert!(Monty::new(&BigUint::from(10u8)).is_none());
        assert!(Monty::new(&BigUint::ZERO).is_none());
    }
}
