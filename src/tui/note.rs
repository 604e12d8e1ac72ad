//! A line of feedback the console shows beside what it is about: what
//! happened, and whether it went well (drawn in the theme's `Ok` or `Error`
//! colour).

/// One note: its text and whether it reports success.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Note {
    /// It went well (or is under way); false: it failed or was refused.
    pub ok: bool,
    pub text: String,
}

impl Note {
    pub fn new(ok: bool, text: impl Into<String>) -> Note {
        Note {
            ok,
            text: text.into(),
        }
    }

    /// A note of success (or of work under way).
    pub fn ok(text: impl Into<String>) -> Note {
        Note::new(true, text)
    }

    /// A note of failure.
    pub fn err(text: impl Into<String>) -> Note {
        Note::new(false, text)
    }
}
