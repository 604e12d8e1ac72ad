//! four-player-landlord-v1's part of a table view: the bidding, the
//! landlord and the bottom, the play to beat, the bombs.

use super::*;

/// What four-player-landlord-v1 adds to a table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Landlord {
    /// The landlord's public key ("" while bidding).
    pub landlord: String,
    pub highest_bid: i64,
    pub highest_bidder: String,
    /// The bottom cards, shown once the landlord takes them.
    pub bottom: Vec<Card>,
    /// The play to beat (None: the trick is led afresh).
    pub last_play: Option<Play>,
    pub passes: i64,
    pub bombs: i64,
    /// Cards played so far.
    pub discarded: usize,
}

impl Landlord {
    /// The stake the round is played for: the bid (at least 1) doubled
    /// for every bomb.
    pub fn base(&self) -> i64 {
        let bombs = self.bombs.clamp(0, 62) as u32;
        self.highest_bid
            .max(1)
            .saturating_mul(2i64.saturating_pow(bombs))
    }
}

pub(super) fn landlord(alias: &str, v: &Map) -> Result<TableView, String> {
    let per = |k: &str| v.get(k).and_then(Value::as_object);
    let (scores, bids) = (per("scores"), per("bids"));
    let seats = seats_of(v, &|s, p| {
        let at = |m: Option<&Map>| m.and_then(|m| int(m.get(&s.public_key)));
        s.role = p.map(|p| text(p.get("role"))).unwrap_or_default();
        s.score = at(scores);
        s.bid = at(bids);
    })?;
    let mut hand = cards(v.get("my_hand"));
    sort_cards(&mut hand);
    let mut bottom = cards(v.get("bottom_revealed"));
    sort_cards(&mut bottom);
    let game = Landlord {
        landlord: text(v.get("landlord")),
        highest_bid: int(v.get("highest_bid")).unwrap_or(0),
        highest_bidder: text(v.get("highest_bidder")),
        bottom,
        last_play: v.get("last_play").and_then(Play::parse),
        passes: int(v.get("passes")).unwrap_or(0),
        bombs: int(v.get("bombs")).unwrap_or(0),
        discarded: v
            .get("discard")
            .and_then(Value::as_array)
            .map_or(0, Vec::len),
    };
    Ok(common(
        alias,
        v,
        "round_number",
        seats,
        hand,
        Game::Landlord(game),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj;
    use crate::session::table::tests::*;

    #[test]
    fn a_landlord_view_reads_sorted_and_seated() {
        let view = Value::Object(obj! {
            "phase" => "playing", "round_number" => 2, "restart_count" => 0, "recovery_notice" => "",
            "players" => obj! {
                "bb" => obj! { "seat" => 1, "role" => "landlord" },
                "aa" => obj! { "seat" => 0, "role" => "farmer" },
            },
            "turn_order" => vec![Value::from("aa"), Value::from("bb")],
            "current_player" => "aa", "landlord" => "bb", "highest_bid" => 2, "bombs" => 1,
            "hand_counts" => obj! { "aa" => 3, "bb" => 30 }, "scores" => obj! { "aa" => -4, "bb" => 12 },
            "bids" => obj! { "aa" => 0, "bb" => 2 },
            "my_hand" => vec![
                card("Red Joker", 17, "joker", "r"), card("2", 15, "clubs", "2c"),
                card("7", 7, "spades", "7s"), card("7", 7, "hearts", "7h"),
            ],
            "bottom_revealed" => vec![card("K", 13, "spades", "ks")],
            "last_play" => obj! {
                "public_key" => "bb", "seat" => 1, "cards" => vec![card("5", 5, "clubs", "5c"), card("5", 5, "spades", "5s")],
                "combination" => obj! { "kind" => "pair", "primary" => 5, "length" => 2, "tier" => 0 },
            },
            "discard" => vec![Value::Null, Value::Null],
            "you" => obj! { "public_key" => "aa", "seat" => 0, "is_landlord" => false },
        });
        let t = TableView::parse("four-player-landlord-v1", &view).unwrap();
        let labels: Vec<String> = t.hand.iter().map(Card::label).collect();
        assert_eq!(labels, ["7♥", "7♠", "2♣", "RJ"]);
        assert_eq!(t.seats[0].public_key, "aa");
        assert_eq!(t.seats[1].cards_left, Some(30));
        assert_eq!(t.seats[0].score, Some(-4));
        assert!(t.your_turn());
        let l = t.landlord().unwrap();
        assert_eq!(l.base(), 4);
        assert_eq!(l.last_play.as_ref().unwrap().kind_words(), "pair");
        assert_eq!(l.discarded, 2);
    }
}
