//! The inbox's compose form: a one-line recipient (a 64-hex public key)
//! and a message counted live against the 256 characters a sealed message
//! holds. Checked before anything is sent.

use crate::community::social::check_message;
use crate::identity::is_key_hex;
use crate::sealed::MAX_MESSAGE_CHARS;
use crate::tui::panes::dialogs::edit_line;
use crossterm::event::KeyEvent;

/// Which field takes the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Field {
    #[default]
    To,
    Text,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Compose {
    /// The recipient's public key as typed.
    pub to: String,
    /// Who that is, when known (a nickname or the key's head).
    pub label: String,
    pub text: String,
    pub field: Field,
    /// Why the last send was refused (here or by the community).
    pub error: Option<String>,
    pub sending: bool,
}

impl Compose {
    /// A message to `key`, the message field focused.
    pub fn to(key: &str, label: &str) -> Compose {
        Compose {
            to: key.to_owned(),
            label: label.to_owned(),
            field: Field::Text,
            ..Compose::default()
        }
    }

    /// Characters typed, against the most a message holds.
    pub fn count(&self) -> (usize, usize) {
        (self.text.chars().count(), MAX_MESSAGE_CHARS)
    }

    /// The recipient (lower case) and the text, or what is wrong.
    pub fn check(&self) -> Result<(String, String), String> {
        let to = self.to.trim().to_ascii_lowercase();
        if !is_key_hex(&to) {
            return Err(format!(
                "the recipient must be a 64-hex public key ({} characters typed)",
                self.to.trim().chars().count()
            ));
        }
        check_message(&self.text).map_err(|e| e.to_string())?;
        Ok((to, self.text.clone()))
    }

    pub fn switch(&mut self) {
        self.field = match self.field {
            Field::To => Field::Text,
            Field::Text => Field::To,
        };
    }

    fn focused(&mut self) -> &mut String {
        match self.field {
            Field::To => &mut self.to,
            Field::Text => &mut self.text,
        }
    }

    pub fn input(&mut self, k: &KeyEvent) {
        if self.field == Field::To {
            self.label.clear();
        }
        edit_line(self.focused(), k);
        self.error = None;
    }

    pub fn paste(&mut self, p: &str) {
        let line = p.lines().next().unwrap_or("").to_owned();
        if self.field == Field::To {
            self.label.clear();
            self.to.push_str(line.trim());
        } else {
            self.text.push_str(&line);
        }
        self.error = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_needs_a_key_and_at_most_256_characters() {
        let mut c = Compose {
            text: "hi".into(),
            to: "abc".into(),
            ..Compose::default()
        };
        assert!(c.check().unwrap_err().contains("64-hex"));
        c.to = "AB".repeat(32);
        assert_eq!(c.check().unwrap().0, "ab".repeat(32));
        c.text = "é".repeat(257);
        assert!(c.check().unwrap_err().contains("257"));
        assert_eq!(c.count(), (257, 256));
        c.text.clear();
        assert!(c.check().is_err());
    }
}
