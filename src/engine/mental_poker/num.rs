//! Big-integer and hex forms used on the wire and in the transcript.

use super::CryptoError;
use crate::json::{Number, Value};
use num_bigint::BigUint;

/// Width of a 2048-bit integer in hex digits.
pub const HEX512: usize = 512;

/// Lowercase hex, zero-padded to 512 digits (longer values keep all digits).
pub fn hex512(n: &BigUint) -> String {
    format!("{:0>width$}", n.to_str_radix(16), width = HEX512)
}

/// Bytes from hex (either case, even length), like Python `bytes.fromhex`
/// without its whitespace tolerance.
pub fn from_hex(s: &str) -> Result<Vec<u8>, CryptoError> {
    hex::decode(s).map_err(|_| CryptoError::Hex)
}

/// Exactly `N` bytes from hex.
pub fn from_hex_array<const N: usize>(s: &str) -> Result<[u8; N], CryptoError> {
    let v = from_hex(s)?;
    let got = v.len();
    v.try_into()
        .map_err(|_| CryptoError::Length { expected: N, got })
}

/// A non-negative integer from hex digits (either case, at least one).
pub fn int_from_hex(s: &str) -> Result<BigUint, CryptoError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CryptoError::Hex);
    }
    BigUint::parse_bytes(s.as_bytes(), 16).ok_or(CryptoError::Hex)
}

/// I2OSP: big-endian bytes, left-padded to `len`.
pub fn i2osp(n: &BigUint, len: usize) -> Result<Vec<u8>, CryptoError> {
    let bytes = n.to_bytes_be();
    if n.bits() == 0 {
        return Ok(vec![0; len]);
    }
    if bytes.len() > len {
        return Err(CryptoError::TooLarge(len));
    }
    let mut out = vec![0; len - bytes.len()];
    out.extend_from_slice(&bytes);
    Ok(out)
}

/// A JSON integer holding `n` exactly (the transcript writes z, y and r so).
pub fn json_int(n: &BigUint) -> Value {
    match i64::try_from(n) {
        Ok(small) => Value::Number(Number::Int(small)),
        Err(_) => Value::Number(Number::BigInt(n.to_str_radix(10).into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_forms_round_trip_and_refuse_junk() {
        let n = BigUint::from(0xabcdu32);
        let h = hex512(&n);
        assert_eq!(h.len(), 512);
        assert!(h.ends_with("abcd") && h.starts_with("000"));
        assert_eq!(int_from_hex(&h).unwrap(), n);
        assert_eq!(int_from_hex("ABCD").unwrap(), n);
        assert_eq!(int_from_hex(""), Err(CryptoError::Hex));
        assert_eq!(int_from_hex("0x12"), Err(CryptoError::Hex));
        assert_eq!(from_hex("0a0B").unwrap(), vec![10, 11]);
        assert_eq!(from_hex("abc"), Err(CryptoError::Hex));
        assert_eq!(from_hex("zz"), Err(CryptoError::Hex));
        assert_eq!(from_hex("é1"), Err(CryptoError::Hex));
        assert_eq!(
            from_hex_array::<2>("00"),
            Err(CryptoError::Length {
                expected: 2,
                got: 1
            })
        );
        assert_eq!(i2osp(&n, 3).unwrap(), vec![0, 0xab, 0xcd]);
        assert_eq!(i2osp(&BigUint::ZERO, 2).unwrap(), vec![0, 0]);
        assert_eq!(i2osp(&n, 1), Err(CryptoError::TooLarge(1)));
    }

    #[test]
    fn json_ints_are_exact() {
        let big = BigUint::from(1u8) << 100usize;
        let v = json_int(&big);
        assert_eq!(
            crate::json::canonical::to_string(&v),
            "1267650600228229401496703205376"
        );
        assert_eq!(
            crate::json::canonical::to_string(&json_int(&BigUint::from(7u8))),
            "7"
        );
    }
}
