//! The card play: the card checked against the hand to play (the
//! declarer plays the dummy's) and the led suit, the dummy shown after the
//! opening lead, and each trick won by the highest trump, else the highest
//! card of the led suit; the 13th trick ends the board.

use super::score::complete_board;
use super::{
    Bridge, Hooked, SUITS, action_kind, actor_pk, arr, arr_mut, next_key, obj_mut, team_of,
};
use crate::json::{Map, Value};
use crate::obj;
use crate::protocols::tables::{deck, hook_result, int, obj, text};

impl Bridge {
    pub(super) fn play(&self, mut state: Map, actor: &Value, action: &Value) -> Hooked<Value> {
        if action_kind(action)?.and_then(Value::as_str) != Some("play") {
            return Err("card play accepts only play".into());
        }
        let owner = text(&state, "current_hand_owner");
        let declarer = text(&state, "declarer");
        let expected = if owner == text(&state, "dummy") {
            declarer.clone()
        } else {
            owner.clone()
        };
        let pk = actor_pk(actor)?;
        if pk != Some(expected.as_str()) {
            return Err("it is not this Member's turn to play".into());
        }
        let pk = expected;
        let deck_map = obj(&state, "deck");
        let hand = deck::hand(&deck_map, &owner);
        let card_id = match action.get("card_id").and_then(Value::as_str) {
            Some(id) if hand.iter().any(|h| h == id) => id.to_owned(),
            _ => return Err("card_id is not in the active hand".into()),
        };
        let card = deck::card(&deck_map, &card_id).ok_or("unknown card_id")?;
        let trick = arr(&state, "current_trick");
        if let Some(first) = trick.first() {
            let led = first
                .get("card")
                .and_then(|c| c.get_str("suit"))
                .unwrap_or_default();
            let hand_cards: Vec<Map> = hand
                .iter()
                .filter_map(|id| deck::card(&deck_map, id))
                .collect();
            follows_suit(&hand_cards, &card, led)?;
        }
        {
            let deck = obj_mut(&mut state, "deck")?;
            deck::take_from_hand(deck, &owner, std::slice::from_ref(&card_id))?;
            deck::discard(deck, std::slice::from_ref(&card_id))?;
        }
        let owner_seat = state
            .get("players")
            .and_then(|p| p.get(&owner))
            .and_then(|p| p.get("seat"))
            .cloned()
            .unwrap_or(Value::Null);
        let play = obj! {
            "public_key" => pk.as_str(), "hand_owner" => owner.as_str(), "seat" => owner_seat,
            "card" => card,
        };
        arr_mut(&mut state, "current_trick")?.push(Value::Object(play.clone()));
        let mut event = obj! { "kind" => "bridge_card_played" };
        for (k, v) in play.iter() {
            event.insert(k, v.clone());
        }
        let mut events = vec![Value::Object(event)];
        if state.get("dummy_revealed") != Some(&Value::Bool(true)) {
            state.insert("dummy_revealed", Value::Bool(true));
            events.push(Value::Object(
                obj! { "kind" => "dummy_revealed", "dummy" => text(&state, "dummy") },
            ));
        }
        let trick = arr(&state, "current_trick");
        if trick.len() < 4 {
            let next = next_key(&state, &owner);
            let player = if next == text(&state, "dummy") {
                declarer
            } else {
                next.clone()
            };
            state.insert("current_hand_owner", Value::from(next));
            state.insert("current_player", Value::from(player));
            return Ok(hook_result(state, events));
        }
        let cards: Vec<Map> = trick
            .iter()
            .map(|p| p.get("card").and_then(Value::as_object).cloned())
            .collect::<Option<_>>()
            .ok_or("a trick entry has no card")?;
        let trump = trump_of(&state);
        let led = cards[0].get_str("suit").unwrap_or_default().to_owned();
        let index = winning_index(&cards, &led, trump.as_deref());
        let winner = trick[index]
            .get_str("hand_owner")
            .unwrap_or_default()
            .to_owned();
        let team = team_of(&state, &winner);
        {
            let tricks = obj_mut(&mut state, "tricks")?;
            let won = int(tricks, &team).saturating_add(1);
            tricks.insert(team.as_str(), Value::from(won));
        }
        let number = arr(&state, "trick_history").len() + 1;
        arr_mut(&mut state, "trick_history")?.push(Value::Object(obj! {
            "number" => number, "winner" => winner.as_str(), "cards" => trick,
        }));
        state.insert("current_trick", Value::Array(Vec::new()));
        events.push(Value::Object(obj! {
            "kind" => "bridge_trick_won", "winner" => winner.as_str(), "partnership" => team.as_str(),
            "trick_number" => number,
        }));
        if number == 13 {
            return complete_board(state, events);
        }
        let player = if winner == text(&state, "dummy") {
            declarer
        } else {
            winner.clone()
        };
        state.insert("current_hand_owner", Value::from(winner));
        state.insert("current_player", Value::from(player));
        Ok(hook_result(state, events))
    }
}

/// The reference's `validate_follow_suit`.
fn follows_suit(hand: &[Map], card: &Map, led: &str) -> Hooked<()> {
    if !SUITS.contains(&led) {
        return Err("led_suit must be a standard suit".into());
    }
    if card.get_str("suit") == Some(led) {
        return Ok(());
    }
    if hand.iter().any(|c| c.get_str("suit") == Some(led)) {
        return Err("the player must follow the led suit".into());
    }
    Ok(())
}

/// The index of the card that wins a trick: the highest trump, else the
/// highest card of the led suit (the first of equals).
pub fn winning_index(cards: &[Map], led: &str, trump: Option<&str>) -> usize {
    let strength = |c: &Map| {
        let suit = c.get_str("suit").unwrap_or_default();
        let rank = c.get("rank").and_then(Value::as_i64).unwrap_or(0);
        if trump == Some(suit) {
            (2, rank)
        } else if suit == led {
            (1, rank)
        } else {
            (0, rank)
        }
    };
    let mut best = 0;
    for (i, c) in cards.iter().enumerate() {
        if strength(c) > strength(&cards[best]) {
            best = i;
        }
    }
    best
}

/// The contract's trump suit (`None` at no trump or without a contract).
fn trump_of(state: &Map) -> Option<String> {
    state
        .get("contract")
        .and_then(|c| c.get_str("denomination"))
        .filter(|d| SUITS.contains(d))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::super::bot::{bid_action, call_action, cards_of, play_action};
    use super::super::tests::{act, members};
    use super::*;
    use crate::engine::group::GroupHooks;
    use crate::protocols::tables::Table;

    fn card(suit: &str, rank: i64) -> Map {
        obj! { "suit" => suit, "rank" => rank }
    }

    #[test]
    fn the_trick_goes_to_the_highest_trump_else_the_led_suit() {
        let trick = [
            card("hearts", 10),
            card("hearts", 14),
            card("spades", 2),
            card("clubs", 14),
        ];
        assert_eq!(winning_index(&trick, "hearts", None), 1);
        assert_eq!(winning_index(&trick, "hearts", Some("spades")), 2);
        assert_eq!(winning_index(&trick, "hearts", Some("diamonds")), 1);
        assert_eq!(winning_index(&trick[..1], "hearts", Some("clubs")), 0);
    }

    #[test]
    fn declarer_plays_the_dummy_and_must_follow_suit() {
        let mut b = Bridge::new(&obj! { "deal_seed" => "unit" });
        let mut s = b.initial_state(&members()).unwrap();
        // North opens 1NT, all pass: east leads, south is dummy.
        s = act(&mut b, s, 0, bid_action(1, "nt")).unwrap();
        for seat in 1..4 {
            s = act(&mut b, s, seat, call_action("pass")).unwrap();
        }
        let view = |b: &mut Bridge, s: &Value, seat: usize| b.view(s, &members()[seat]).unwrap();
        let east = view(&mut b, &s, 1);
        let lead = b.bot_action(&east).unwrap();
        s = act(&mut b, s, 1, lead).unwrap();
        assert_eq!(s.get_str("current_player"), Some("pk0"));
        assert_eq!(s.get_str("current_hand_owner"), Some("pk2"));
        let north = view(&mut b, &s, 0);
        assert_eq!(north.get("dummy_hand"), north.get("playable_hand"));
        let legal = b.legal_actions(&north);
        assert!(!legal.is_empty());
        // The dummy may not play for itself; a card of north's own hand is
        // not in the active hand; an off-suit card is a revoke when the
        // dummy holds the led suit.
        assert_eq!(
            act(&mut b, s.clone(), 2, legal[0].clone()).unwrap_err(),
            "it is not this Member's turn to play"
        );
        let own = cards_of(north.get("my_hand"))[0].id.clone();
        assert_eq!(
            act(&mut b, s.clone(), 0, play_action(&own)).unwrap_err(),
            "card_id is not in the active hand"
        );
        let led = s.get("current_trick").unwrap().as_array().unwrap()[0]
            .get("card")
            .unwrap()
            .get_str("suit")
            .unwrap()
            .to_owned();
        let dummy = cards_of(north.get("playable_hand"));
        if dummy.iter().any(|c| c.suit == led) {
            let off = dummy.iter().find(|c| c.suit != led).unwrap();
            assert_eq!(
                act(&mut b, s.clone(), 0, play_action(&off.id)).unwrap_err(),
                "the player must follow the led suit"
            );
        }
        for a in legal {
            act(&mut b, s.clone(), 0, a).unwrap();
        }
    }
}
