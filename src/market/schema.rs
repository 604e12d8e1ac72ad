//! `GET /api/gtl/schema`: the JSON Schema (draft 2020-12) of every GTL
//! message this market accepts and every server event it writes.

use crate::json::Value;

const SCHEMA: &str = include_str!("gtl-schema.json");

/// The schema document.
pub fn schema() -> Value {
    // A constant checked by the test below.
    crate::json::parse_str(SCHEMA).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_schema_parses_and_covers_every_message() {
        let s = super::schema();
        let defs = s.get("$defs").and_then(|d| d.as_object()).unwrap();
        for m in crate::market::vocab::Kind::ALL {
            assert!(defs.contains_key(m.as_str()), "{m}");
        }
    }
}
