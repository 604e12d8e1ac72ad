//! The text of a validation error, kept inline when it is short, and the
//! builder that joins a frame's errors into it.
//!
//! A frame that fails validation is common on the wire (and most of the
//! conformance cases fail on purpose); nearly every error text is under a
//! hundred bytes, so such a text is written into a buffer inside the error
//! itself and only a longer one goes to the heap.

use crate::json::short::{self, SHORT};
use std::fmt;

/// Bytes held inline; with the length and the variant this makes the whole
/// text 96 bytes.
const INLINE: usize = 94;

#[derive(Clone)]
pub(crate) enum Text {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(String),
}

impl Default for Text {
    fn default() -> Self {
        Text::Inline {
            len: 0,
            bytes: [0; INLINE],
        }
    }
}

impl Text {
    /// Appends `s`, moving to the heap when it does not fit inline.
    #[inline]
    pub(crate) fn push_str(&mut self, s: &str) {
        if let Text::Inline { len, bytes } = self {
            let (at, n) = (usize::from(*len), s.len());
            if at + n <= INLINE {
                // Short pieces, the common case, are copied without a call.
                match bytes
                    .get_mut(at..at + SHORT)
                    .map(<&mut [u8; SHORT]>::try_from)
                {
                    Some(Ok(room)) if n <= SHORT => short::copy(room, s.as_bytes()),
                    _ => bytes[at..at + n].copy_from_slice(s.as_bytes()),
                }
                // The end is within the buffer, so it fits a byte.
                *len = (at + n) as u8;
                return;
            }
        }
        self.push_heap(s);
    }

    /// [`Text::push_str`] once the text does not fit inline.
    #[cold]
    #[inline(never)]
    fn push_heap(&mut self, s: &str) {
        match self {
            Text::Inline { len, bytes } => {
                let old = inline_str(&bytes[..usize::from(*len)]);
                let mut heap = String::with_capacity(2 * (old.len() + s.len()));
                heap.push_str(old);
                heap.push_str(s);
                *self = Text::Heap(heap);
            }
            Text::Heap(h) => h.push_str(s),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Text::Inline { len, .. } => *len == 0,
            Text::Heap(h) => h.is_empty(),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            Text::Inline { len, bytes } => inline_str(&bytes[..usize::from(*len)]),
            Text::Heap(h) => h,
        }
    }

    pub(crate) fn into_string(self) -> String {
        match self {
            Text::Heap(h) => h,
            inline => inline.as_str().to_owned(),
        }
    }
}

/// The inline bytes as text. Only whole `&str`s are ever copied in, so they
/// are always UTF-8; the empty fallback is never taken.
fn inline_str(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or_default()
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        if s.len() <= INLINE {
            Text::from(s.as_str())
        } else {
            Text::Heap(s)
        }
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        let mut t = Text::default();
        t.push_str(s);
        t
    }
}

impl fmt::Write for Text {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

/// Error texts joined with `"; "` as they are found, in one buffer.
#[derive(Default)]
pub(super) struct Errs(Text);

impl Errs {
    pub(super) fn push(&mut self, args: std::fmt::Arguments<'_>) {
        use std::fmt::Write;
        self.sep();
        let _ = self.0.write_fmt(args);
    }

    /// The text, to go on with the error last begun.
    pub(super) fn tail(&mut self) -> &mut Text {
        &mut self.0
    }

    fn sep(&mut self) {
        if !self.0.is_empty() {
            self.0.push_str("; ");
        }
    }

    /// `"{key}: {text}"` without the formatting machinery.
    pub(super) fn field(&mut self, key: Key<'_>, text: &str) {
        self.field_parts(key, &[text]);
    }

    /// `"{key}: "` and then `parts`, without the formatting machinery.
    pub(super) fn field_parts(&mut self, key: Key<'_>, parts: &[&str]) {
        self.sep();
        match key {
            Key::Field(k) => self.0.push_str(k),
            Key::Item(k, i) => {
                self.0.push_str(k);
                self.0.push_str("[");
                push_decimal(&mut self.0, i);
                self.0.push_str("]");
            }
        }
        self.0.push_str(": ");
        for p in parts {
            self.0.push_str(p);
        }
    }

    /// `"{prefix}{name}"`, e.g. `missing required field: x`.
    pub(super) fn named(&mut self, prefix: &str, name: &str) {
        self.sep();
        self.0.push_str(prefix);
        self.0.push_str(name);
    }

    pub(super) fn finish(self) -> Result<(), Text> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self.0)
        }
    }
}

/// `i` in decimal, appended.
fn push_decimal(out: &mut Text, i: usize) {
    let mut tmp = [0u8; 21];
    let at = crate::json::canonical::decimal_digits(i as u64, &mut tmp);
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&tmp[at..]).unwrap_or_default());
}

/// The name an error is reported under: a field, or an element of an
/// array field (arrays never nest, so one level is enough).
#[derive(Clone, Copy)]
pub(super) enum Key<'a> {
    Field(&'a str),
    Item(&'a str, usize),
}

impl<'a> Key<'a> {
    pub(super) fn item(self, i: usize) -> Key<'a> {
        match self {
            Key::Field(k) | Key::Item(k, _) => Key::Item(k, i),
        }
    }
}

impl std::fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Field(k) => f.write_str(k),
            Key::Item(k, i) => write!(f, "{k}[{i}]"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_grow_from_inline_to_heap_without_losing_a_byte() {
        let mut t = Text::default();
        let mut want = String::new();
        assert!(t.is_empty());
        // Pieces of every length, multi-byte characters included, across
        // the inline limit and well past it.
        for i in 0..60 {
            let piece: String = "aé€𝄞".chars().cycle().skip(i % 4).take(i % 7).collect();
            t.push_str(&piece);
            want.push_str(&piece);
            assert_eq!(t.as_str(), want);
            assert_eq!(
                matches!(t, Text::Inline { .. }),
                want.len() <= INLINE,
                "{} bytes",
                want.len()
            );
        }
        assert_eq!(t.clone().into_string(), want);
        assert_eq!(Text::from(want.clone()).as_str(), want);
        assert_eq!(Text::from("short".to_owned()).into_string(), "short");
        assert!(matches!(Text::from("short"), Text::Inline { len: 5, .. }));
        assert!(matches!(Text::from("x".repeat(95).as_str()), Text::Heap(_)));
        assert!(matches!(Text::from("x".repeat(95)), Text::Heap(_)));
    }
}
