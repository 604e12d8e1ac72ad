//! `Names`: a set of names (message fields, enum values, actions) that a
//! validation looks names up in, once per field of every frame.

use crate::json::Key as Name;
use crate::json::short;

/// A set of names in insertion order, each kept inline (up to 24 bytes).
/// Up to [`LINEAR`] names are found by comparing them in turn; a larger set
/// adds an open-addressing index whose slots carry each name's packed tag
/// and, for names up to 16 bytes, the bytes themselves: a lookup hashes one
/// word and then reads one slot (one cache line) per probe. The first of
/// duplicate names wins, as a Python `list.index` would.
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    names: Vec<Name>,
    /// A power of two at least twice as long as `names` (or empty).
    slots: Vec<Slot>,
    /// 64 minus log2 of `slots.len()`: the hash is the product's top bits.
    shift: u32,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// [`tag`] of the name (its length in the low 32 bits).
    tag: u64,
    /// Index into `names`; `EMPTY` when the slot is free.
    index: u32,
    /// The name's bytes when it is at most 16 long.
    head: [u8; 16],
}

/// Sets up to this size are scanned: their names sit inline side by side,
/// so a scan reads a few neighbouring cache lines where a table probe reads
/// a line of its own (measured: 8 to 16 are equally fast on the
/// conformance cases, 4 and below slower).
const LINEAR: usize = 8;

const EMPTY: u32 = u32::MAX;
const FREE: Slot = Slot {
    tag: 0,
    index: EMPTY,
    head: [0; 16],
};

/// Length plus the first, middle and last bytes: three loads, and enough to
/// tell apart most names schemas use (`host_cd_a` / `host_cd_b` differ in
/// the last byte). Equal tags are confirmed byte by byte.
#[inline]
fn tag(s: &str) -> u64 {
    let b = s.as_bytes();
    match b.len() {
        0 => 0,
        n => {
            (n as u64)
                | (u64::from(b[0]) << 32)
                | (u64::from(b[n / 2]) << 40)
                | (u64::from(b[n - 1]) << 48)
        }
    }
}

impl Names {
    pub(crate) fn push(&mut self, s: &str) {
        self.names.push(s.into());
        if self.names.len() <= LINEAR {
            return;
        }
        if self.slots.len() < 2 * self.names.len() {
            let len = (4 * self.names.len()).next_power_of_two();
            self.slots = vec![FREE; len];
            self.shift = 64 - len.trailing_zeros();
            for i in 0..self.names.len() {
                self.index(i);
            }
        } else {
            self.index(self.names.len() - 1);
        }
    }

    /// Enters name `i` unless an earlier equal name holds its place.
    fn index(&mut self, i: usize) {
        let name = self.names[i].as_str();
        if self.hashed(name).is_some() {
            return;
        }
        let (t, mask) = (tag(name), self.slots.len() - 1);
        let mut h = self.home(t);
        while self.slots[h].index != EMPTY {
            h = (h + 1) & mask;
        }
        let mut head = [0u8; 16];
        if name.len() <= head.len() {
            head[..name.len()].copy_from_slice(name.as_bytes());
        }
        self.slots[h] = Slot {
            tag: t,
            index: i as u32,
            head,
        };
    }

    #[inline]
    fn home(&self, t: u64) -> usize {
        (t.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    pub(crate) fn name(&self, i: usize) -> &str {
        &self.names[i]
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(Name::as_str)
    }

    /// [`Names::position`] for a set without duplicates, trying `hint`
    /// first: the fields of a message mostly come in the schema's order, so
    /// the next field is mostly the one after the last found, and one
    /// comparison finds it.
    #[inline(always)]
    pub(crate) fn position_from(&self, s: &str, hint: usize) -> Option<usize> {
        if self.names.get(hint).is_some_and(|n| short::str_eq(n, s)) {
            return Some(hint);
        }
        self.position(s)
    }

    /// Index of the first name equal to `s`.
    #[inline(always)]
    pub(crate) fn position(&self, s: &str) -> Option<usize> {
        if self.names.len() <= LINEAR {
            for (j, n) in self.names.iter().enumerate() {
                if short::str_eq(n, s) {
                    return Some(j);
                }
            }
            None
        } else {
            self.hashed(s)
        }
    }

    /// [`Names::position`] through the table.
    #[inline(always)]
    fn hashed(&self, s: &str) -> Option<usize> {
        let mask = self.slots.len().checked_sub(1)?;
        let t = tag(s);
        let mut h = self.home(t);
        loop {
            let slot = self.slots.get(h)?;
            if slot.index == EMPTY {
                return None;
            }
            if slot.tag == t {
                let j = slot.index as usize;
                let hit = match slot.head.get(..s.len()) {
                    Some(head) => short::eq(head, s.as_bytes()),
                    None => self.names.get(j).is_some_and(|n| short::str_eq(n, s)),
                };
                if hit {
                    return Some(j);
                }
            }
            h = (h + 1) & mask;
        }
    }

    pub(crate) fn contains(&self, s: &str) -> bool {
        self.position(s).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_find_every_name_and_only_those() {
        let mut names = Names::default();
        let list: Vec<String> = (0..200)
            .map(|i| match i % 4 {
                0 => format!("f{i}"),
                1 => format!("a_field_name_longer_than_sixteen_bytes_{i}"),
                2 => "x".repeat(i % 40),
                _ => format!("host_cd_{}", char::from(b'a' + (i % 26) as u8)),
            })
            .collect();
        for (i, n) in list.iter().enumerate() {
            names.push(n);
            // Every name pushed so far is found at its first index, with the
            // table growing underneath.
            for m in &list[..=i] {
                let first = list.iter().position(|x| x == m);
                assert_eq!(names.position(m), first, "{m:?} after {i} pushes");
            }
        }
        for probe in [
            "",
            "f1",
            "host_cd_",
            "x".repeat(41).as_str(),
            "a_field_name_longer_than_sixteen_bytes_0",
        ] {
            assert_eq!(
                names.position(probe),
                list.iter().position(|x| x == probe),
                "{probe:?}"
            );
        }
        assert_eq!(Names::default().position("a"), None);
    }

    #[test]
    fn tags_pack_length_and_three_bytes() {
        assert_eq!(tag(""), 0);
        assert_eq!(tag("abc") & 0xffff_ffff, 3);
        assert_ne!(tag("host_cd_a"), tag("host_cd_b"));
        // Same length and same first, middle and last bytes: equal tags,
        // told apart by the bytes.
        assert_eq!(tag("axxxb"), tag("ayxyb"));
        let mut names = Names::default();
        for n in ["axxxb", "p", "q", "r", "s", "t", "u", "v", "w", "ayxyb"] {
            names.push(n);
        }
        assert_eq!(names.position("ayxyb"), Some(9));
        assert_eq!(names.position("azxzb"), None);
    }
}
