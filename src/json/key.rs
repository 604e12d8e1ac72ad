//! An object key. Most keys are short names (`kind`, `state`) and are held
//! inline in the map's entry: reading one costs no pointer chase and making
//! one no allocation. Longer keys (a 64-digit public key naming a seat's
//! chips, a card's id) are shared between copies, so copying a map that is
//! keyed by them (copy on write, a table's typed state written back) counts
//! references instead of allocating every key again.

use compact_str::CompactString;
use std::borrow::{Borrow, Cow};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// The longest key held inline (compact_str's inline capacity on 64-bit).
const INLINE: usize = 24;

#[derive(Clone)]
pub struct Key(Repr);

#[derive(Clone)]
enum Repr {
    Inline(CompactString),
    Shared(Arc<str>),
}

impl Key {
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline(s) => s.as_str(),
            Repr::Shared(s) => s,
        }
    }
}

impl Deref for Key {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Key {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Key {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

/// Hashed as its text, as `Borrow<str>` requires.
impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Key {}

impl PartialEq<str> for Key {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Key {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for Key {
    fn from(s: &str) -> Key {
        if s.len() <= INLINE {
            Key(Repr::Inline(CompactString::from(s)))
        } else {
            Key(Repr::Shared(Arc::from(s)))
        }
    }
}

impl From<&String> for Key {
    fn from(s: &String) -> Key {
        Key::from(s.as_str())
    }
}

impl From<String> for Key {
    fn from(s: String) -> Key {
        Key::from(s.as_str())
    }
}

impl From<Cow<'_, str>> for Key {
    fn from(s: Cow<'_, str>) -> Key {
        Key::from(&*s)
    }
}

impl From<&Key> for Key {
    fn from(k: &Key) -> Key {
        k.clone()
    }
}

impl From<Arc<str>> for Key {
    fn from(s: Arc<str>) -> Key {
        if s.len() <= INLINE {
            Key(Repr::Inline(CompactString::from(&*s)))
        } else {
            Key(Repr::Shared(s))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn short_and_long_keys_read_compare_and_hash_as_their_text() {
        let short = Key::from("kind");
        let long = Key::from("0".repeat(64));
        assert!(matches!(short.0, Repr::Inline(_)));
        assert!(matches!(long.0, Repr::Shared(_)));
        assert_eq!(&*long, "0".repeat(64));
        let copy = long.clone();
        let (Repr::Shared(a), Repr::Shared(b)) = (&long.0, &copy.0) else {
            panic!("a long key is shared");
        };
        assert!(Arc::ptr_eq(a, b), "a copy of a long key shares its text");
        let mut index: HashMap<Key, usize> = HashMap::new();
        index.insert(short.clone(), 1);
        index.insert(long.clone(), 2);
        assert_eq!(index.get("kind"), Some(&1));
        assert_eq!(index.get("0".repeat(64).as_str()), Some(&2));
        assert_eq!(Key::from("a").cmp(&Key::from("b")), Ordering::Less);
        assert_eq!(
            Key::from("x".repeat(24)),
            Key::from(Arc::<str>::from("x".repeat(24)))
        );
        assert_eq!(format!("{long:?}"), format!("{:?}", "0".repeat(64)));
    }
}
