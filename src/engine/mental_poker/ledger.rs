//! The public ledger of a match in id-B space: who holds which card, what
//! is left in the stock and what was played. Both sides keep one and update
//! it from the same frames, so their copies stay equal; it never holds a
//! card face.

use crate::engine::Role;
use std::collections::BTreeSet;

/// id-B strings are decimal indices; this orders them as numbers (the
/// stock is drawn lowest number first).
fn numeric(id: &str) -> u64 {
    id.parse().unwrap_or(u64::MAX)
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ledger {
    host_hand: BTreeSet<String>,
    guest_hand: BTreeSet<String>,
    /// Kept ordered by numeric id-B.
    stock: BTreeSet<(u64, String)>,
    played: BTreeSet<String>,
}

impl Ledger {
    /// A full stock of id-B `"0".."n-1"`.
    pub fn new(n: usize) -> Ledger {
        Ledger {
            stock: (0..n as u64).map(|i| (i, i.to_string())).collect(),
            ..Ledger::default()
        }
    }

    pub fn hand_of(&self, who: Role) -> &BTreeSet<String> {
        match who {
            Role::Host => &self.host_hand,
            Role::Guest => &self.guest_hand,
        }
    }

    fn hand_mut(&mut self, who: Role) -> &mut BTreeSet<String> {
        match who {
            Role::Host => &mut self.host_hand,
            Role::Guest => &mut self.guest_hand,
        }
    }

    pub fn stock_len(&self) -> usize {
        self.stock.len()
    }

    pub fn played_len(&self) -> usize {
        self.played.len()
    }

    pub fn is_played(&self, id_b: &str) -> bool {
        self.played.contains(id_b)
    }

    /// The card the next draw takes: the lowest numeric id-B in the stock.
    pub fn next_stock_id(&self) -> Option<&str> {
        self.stock.first().map(|(_, s)| s.as_str())
    }

    /// Stock → `who`'s hand. False (and nothing changes) when `id_b` is not
    /// in the stock.
    pub fn deal_to(&mut self, who: Role, id_b: &str) -> bool {
        if !self.stock.remove(&(numeric(id_b), id_b.to_owned())) {
            return false;
        }
        self.hand_mut(who).insert(id_b.to_owned());
        true
    }

    /// `who`'s hand → played. False (and nothing changes) when the card is
    /// not in that hand or was played already.
    pub fn play(&mut self, who: Role, id_b: &str) -> bool {
        if self.played.contains(id_b) || !self.hand_mut(who).remove(id_b) {
            return false;
        }
        self.played.insert(id_b.to_owned());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_take_the_lowest_number_not_the_lowest_string() {
        let mut l = Ledger::new(12);
        for i in 0..2 {
            assert!(l.deal_to(Role::Guest, &i.to_string()));
        }
        assert_eq!(l.next_stock_id(), Some("2"));
        for i in 2..10 {
            assert!(l.deal_to(Role::Host, &i.to_string()));
        }
        // "10" sorts before "2" as a string; the stock goes by number.
        assert_eq!(l.next_stock_id(), Some("10"));
        assert!(!l.deal_to(Role::Host, "3"), "already dealt");
        assert!(!l.deal_to(Role::Host, "99"), "never in the deck");
    }

    #[test]
    fn a_card_is_played_once_and_only_from_its_hand() {
        let mut l = Ledger::new(4);
        l.deal_to(Role::Host, "0");
        l.deal_to(Role::Guest, "1");
        assert!(!l.play(Role::Guest, "0"), "not the guest's card");
        assert!(l.play(Role::Host, "0"));
        assert!(!l.play(Role::Host, "0"), "played twice");
        assert!(l.is_played("0"));
        assert_eq!(l.hand_of(Role::Host).len(), 0);
        assert_eq!(l.stock_len(), 2);
    }
}
