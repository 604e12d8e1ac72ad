//! The decision prompt of a seat a person plays: what is asked, the time
//! left before the safe answer goes out, a text line with the server's
//! length rules counted live and @mention completion (TALK, WHISPER), or a
//! target picker over the alive agents (VOTE, DIVINE, GUARD, ATTACK).

use crate::engine::ControlMode;
use crate::werewolf::View;
use crate::werewolf::agent::{DecisionRequest, safety_margin};
use crate::werewolf::config::LengthConfig;
use crate::werewolf::length;
use crate::werewolf::packet::MaxLength;
use crate::werewolf::{Request, Role};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::Instant;

/// The server's counting rules as announced in `setting` (unset limits are
/// omitted there and are -1 here).
pub fn length_config(m: &MaxLength) -> LengthConfig {
    length::from_setting(m)
}

/// How a text line measures under the length rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    /// Count before the mention (the whole text without one).
    pub before: i64,
    /// The mentioned name and the count after it.
    pub mention: Option<(String, i64)>,
    /// Allowance before the mention (base + today's budget), if limited.
    pub before_limit: Option<i64>,
    /// Allowance after the mention (mention length + budget), if limited.
    pub after_limit: Option<i64>,
    pub per_talk: Option<i64>,
    /// Today's budget left (per-agent limit).
    pub budget: Option<i64>,
    /// What the server would record, when it differs from the text.
    pub kept: Option<String>,
    pub unit: &'static str,
}

impl Measure {
    /// How much more may be typed before the server cuts: the tightest of
    /// the allowance of the part being typed (before the mention, or after
    /// it) and the per-talk cap. None when nothing limits the talk.
    pub fn left(&self) -> Option<i64> {
        let after = self.mention.as_ref().map(|m| m.1);
        let part = match after {
            Some(a) => self.after_limit.map(|l| l - a),
            None => self.before_limit.map(|l| l - self.before),
        };
        let talk = self.per_talk.map(|p| p - self.before - after.unwrap_or(0));
        match (part, talk) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Measures `text` as the server will (same split, same counting, same
/// trimming), for a speaker whose other agents are `others`.
pub fn measure(text: &str, cfg: &LengthConfig, others: &[&str], remain: Option<i64>) -> Measure {
    let mention = cfg
        .mention_length()
        .and_then(|_| length::find_mention(text, others));
    let (before, after) = match mention {
        Some((pos, n)) => (&text[..pos], Some((n, &text[pos + 1 + n.len()..]))),
        None => (text, None),
    };
    let limited = cfg.per_agent().is_some() || cfg.base_length().is_some();
    let budget = cfg.per_agent().map(|_| remain.unwrap_or(0).max(0));
    let b = budget.unwrap_or(0);
    let mut left = remain;
    let kept = length::apply(text, cfg, others, &mut left);
    Measure {
        before: length::count(before, cfg),
        mention: after.map(|(n, a)| (n.to_owned(), length::count(a, cfg))),
        before_limit: limited.then(|| cfg.base_length().unwrap_or(0) + b),
        after_limit: (limited && mention.is_some()).then(|| cfg.mention_length().unwrap_or(0) + b),
        per_talk: cfg.per_talk(),
        budget,
        // The server re-spaces around a mention; only a cut matters here.
        kept: (squeeze(&kept) != squeeze(text) && !text.trim().is_empty()).then_some(kept),
        unit: if cfg.count_in_word { "words" } else { "chars" },
    }
}

/// Text without whitespace: what the server keeps is compared with what
/// was typed this way, since it re-spaces around a mention (`a @B. c`
/// becomes `a  @B . c`) without cutting anything.
fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// TALK / WHISPER: a line of text.
    Text {
        line: String,
        /// Tab completion in progress: the prefix typed and the next match.
        completing: Option<(String, usize)>,
    },
    /// A target over `targets`.
    Pick {
        targets: Vec<String>,
        selected: usize,
    },
}

/// One open decision.
#[derive(Debug)]
pub struct Decision {
    pub request: Request,
    pub view: View,
    pub proposal: Option<String>,
    pub deadline: Instant,
    pub mode: ControlMode,
    pub input: Input,
    /// Time left when last looked (updated on ticks, never while drawing).
    pub left: Duration,
    answer: Option<oneshot::Sender<String>>,
}

impl Decision {
    pub fn new(req: DecisionRequest, mode: ControlMode, now: Instant) -> Decision {
        let DecisionRequest {
            request,
            view,
            proposal,
            deadline,
            answer,
        } = req;
        let input = match request {
            Request::Talk | Request::Whisper => Input::Text {
                line: proposal
                    .clone()
                    .filter(|p| p != "Skip" && p != "Over" && mode == ControlMode::Hybrid)
                    .unwrap_or_default(),
                completing: None,
            },
            _ => {
                let wolves = view.wolves();
                let targets: Vec<String> = view
                    .alive()
                    .into_iter()
                    .filter(|n| {
                        *n != view.me && !(request == Request::Attack && wolves.contains(n))
                    })
                    .collect();
                let selected = proposal
                    .as_ref()
                    .and_then(|p| targets.iter().position(|t| t == p))
                    .unwrap_or(0);
                Input::Pick { targets, selected }
            }
        };
        Decision {
            request,
            left: deadline.saturating_duration_since(now),
            view,
            proposal,
            deadline,
            mode,
            input,
            answer: Some(answer),
        }
    }

    /// Whether the answer can still be given (not sent, not timed out).
    pub fn open(&self) -> bool {
        self.answer.as_ref().is_some_and(|a| !a.is_closed()) && !self.left.is_zero()
    }

    pub fn tick(&mut self, now: Instant) {
        self.left = self.deadline.saturating_duration_since(now);
    }

    /// Sends `text` as the answer; false when it is too late.
    pub fn send(&mut self, text: String) -> bool {
        match self.answer.take() {
            Some(a) => a.send(text).is_ok(),
            None => false,
        }
    }

    /// The server's action timeout and the margin kept before it.
    pub fn timing(&self) -> (Duration, Duration) {
        let action = self.view.action_timeout();
        (action, safety_margin(action))
    }

    /// Others' in-game names (mention targets).
    pub fn others(&self) -> Vec<String> {
        self.view
            .names()
            .into_iter()
            .filter(|n| *n != self.view.me)
            .collect()
    }

    pub fn length_config(&self) -> LengthConfig {
        let s = self.view.setting.as_ref();
        let m = if self.request == Request::Whisper {
            s.map(|s| s.whisper.max_length)
        } else {
            s.map(|s| s.talk.max_length)
        };
        length_config(&m.unwrap_or_default())
    }

    /// The live measure of the text line (None for pickers).
    pub fn measure(&self) -> Option<Measure> {
        let Input::Text { line, .. } = &self.input else {
            return None;
        };
        let others = self.others();
        let refs: Vec<&str> = others.iter().map(String::as_str).collect();
        Some(measure(
            line,
            &self.length_config(),
            &refs,
            self.view.remain_length,
        ))
    }

    pub fn typed(&mut self, c: char) {
        if let Input::Text { line, completing } = &mut self.input
            && !c.is_control()
        {
            line.push(c);
            *completing = None;
        }
    }

    pub fn paste(&mut self, s: &str) {
        for c in s.lines().next().unwrap_or("").chars() {
            self.typed(c);
        }
    }

    pub fn backspace(&mut self) {
        if let Input::Text { line, completing } = &mut self.input {
            line.pop();
            *completing = None;
        }
    }

    pub fn clear(&mut self) {
        if let Input::Text { line, completing } = &mut self.input {
            line.clear();
            *completing = None;
        }
    }

    /// Tab: completes the `@prefix` at the end of the line to the next
    /// matching name (again: the one after it).
    pub fn complete(&mut self) {
        let others = self.others();
        let Input::Text { line, completing } = &mut self.input else {
            return;
        };
        let (prefix, next) = match completing.take() {
            Some(c) => c,
            None => {
                let word = line.rsplit(char::is_whitespace).next().unwrap_or("");
                let Some(p) = word.strip_prefix('@') else {
                    return;
                };
                (p.to_owned(), 0)
            }
        };
        let low = prefix.to_lowercase();
        let matches: Vec<&String> = others
            .iter()
            .filter(|n| n.to_lowercase().starts_with(&low))
            .collect();
        if matches.is_empty() {
            return;
        }
        // Drop the word being completed (the prefix, or the last pick).
        let cut = line
            .trim_end()
            .rfind(|c: char| c.is_whitespace())
            .map(|i| i + 1)
            .unwrap_or(0);
        line.truncate(cut);
        let name = matches[next % matches.len()];
        line.push('@');
        line.push_str(name);
        line.push(' ');
        *completing = Some((prefix, next + 1));
    }

    pub fn move_by(&mut self, d: isize) {
        if let Input::Pick { targets, selected } = &mut self.input
            && !targets.is_empty()
        {
            let n = targets.len() as isize;
            *selected = ((*selected as isize + d).rem_euclid(n)) as usize;
        }
    }

    /// What Enter would send (None: nothing to send yet).
    pub fn current(&self) -> Option<String> {
        match &self.input {
            Input::Text { line, .. } => {
                let t = line.trim();
                (!t.is_empty()).then(|| t.to_owned())
            }
            Input::Pick { targets, selected } => targets.get(*selected).cloned(),
        }
    }

    /// Why `answer` may not be sent as it is (None: it may): a talk the
    /// server would cut (the length rules of the setting, the budget left
    /// today) or a `Skip` with no skips left (the server would make it
    /// `Over`). Targets are never refused here.
    pub fn refusal(&self, answer: &str) -> Option<String> {
        if !matches!(self.input, Input::Text { .. }) {
            return None;
        }
        match answer {
            "Over" => None,
            "Skip" => match self.view.remain_skip {
                Some(n) if n <= 0 => {
                    Some("no skips left today (the server would take Skip as Over)".into())
                }
                _ => None,
            },
            text => {
                let others = self.others();
                let refs: Vec<&str> = others.iter().map(String::as_str).collect();
                let m = measure(text, &self.length_config(), &refs, self.view.remain_length);
                let kept = m.kept.clone()?;
                let over = m.left().map(|l| -l).filter(|n| *n > 0);
                Some(match (kept.as_str(), over) {
                    ("Over", _) => "nothing more may be said today: the length budget is spent \
                                    (C-o Over)"
                        .to_owned(),
                    (_, Some(n)) => format!(
                        "too long by {n} {}: the server would keep only {kept:?}",
                        m.unit
                    ),
                    _ => format!("too long: the server would keep only {kept:?}"),
                })
            }
        }
    }

    /// What the question asks, in words.
    pub fn question(&self) -> &'static str {
        match self.request {
            Request::Talk => "say something to the village",
            Request::Whisper => "whisper to the wolves",
            Request::Vote => "vote to execute",
            Request::Divine => "divine one agent",
            Request::Guard => "guard one agent tonight",
            Request::Attack => "choose tonight's victim",
            _ => "answer",
        }
    }

    /// The seat's own role.
    pub fn role(&self) -> Option<Role> {
        self.view.role
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::werewolf::Status;
    use crate::werewolf::config::Config;

    fn view() -> View {
        let mut v = View::default();
        v.me = "Ann".into();
        v.role = Some(Role::Villager);
        v.day = 1;
        v.setting = Some(Config::default_for(5).unwrap().setting());
        for (n, s) in [
            ("Ann", Status::Alive),
            ("Bob", Status::Alive),
            ("Bea", Status::Alive),
            ("Cy", Status::Dead),
        ] {
            v.status.insert(n.into(), s);
        }
        v
    }

    fn decision(request: Request, proposal: Option<&str>, mode: ControlMode) -> Decision {
        let (answer, _rx) = oneshot::channel();
        let now = Instant::now();
        Decision::new(
            DecisionRequest {
                request,
                view: view(),
                proposal: proposal.map(Into::into),
                deadline: now + Duration::from_secs(55),
                answer,
            },
            mode,
            now,
        )
    }

    #[test]
    fn the_counter_counts_as_the_server_does() {
        let cfg = length_config(&Config::default_for(5).unwrap().setting().talk.max_length);
        // Default: characters without whitespace; 50 before and after a mention.
        let m = measure("a b  c", &cfg, &["Bob"], None);
        assert_eq!(
            (m.before, m.before_limit, m.kept.clone()),
            (3, Some(50), None)
        );
        let m = measure("hi @Bob you", &cfg, &["Bob"], None);
        assert_eq!((m.before, m.kept.clone()), (2, None));
        assert_eq!(m.mention, Some(("Bob".into(), 3)));
        // Re-spacing around a mention is not a cut.
        let m = measure("I suspect @Bob. I'll vote that way.", &cfg, &["Bob"], None);
        assert_eq!(m.kept, None);
        let long = "x".repeat(60);
        let m = measure(&long, &cfg, &["Bob"], None);
        assert_eq!(m.before, 60);
        assert_eq!(m.kept.as_deref(), Some("x".repeat(50).as_str()));
        // Word counting.
        let words = LengthConfig {
            count_in_word: true,
            base_length: 2,
            ..cfg
        };
        let m = measure("one two three", &words, &[], None);
        assert_eq!((m.before, m.unit), (3, "words"));
        assert_eq!(m.kept.as_deref(), Some("one two"));
    }

    #[test]
    fn tab_completes_and_cycles_mentions() {
        let mut d = decision(Request::Talk, None, ControlMode::Human);
        for c in "hey @b".chars() {
            d.typed(c);
        }
        d.complete();
        assert_eq!(d.current().as_deref(), Some("hey @Bea"));
        d.complete();
        assert_eq!(d.current().as_deref(), Some("hey @Bob"));
        d.complete();
        assert_eq!(d.current().as_deref(), Some("hey @Bea"));
        // Nothing to complete: unchanged; no match: unchanged.
        let mut d = decision(Request::Talk, None, ControlMode::Human);
        d.complete();
        for c in "@zz".chars() {
            d.typed(c);
        }
        d.complete();
        assert_eq!(d.current().as_deref(), Some("@zz"));
    }

    #[test]
    fn pickers_list_alive_others_and_take_the_proposal() {
        let d = decision(Request::Vote, Some("Bob"), ControlMode::Hybrid);
        assert_eq!(
            d.input,
            Input::Pick {
                targets: vec!["Bea".into(), "Bob".into()],
                selected: 1
            }
        );
        let mut d = decision(Request::Vote, Some("nobody"), ControlMode::Hybrid);
        assert_eq!(d.current().as_deref(), Some("Bea"));
        d.move_by(-1);
        assert_eq!(d.current().as_deref(), Some("Bob"));
        let d = decision(Request::Talk, Some("I trust @Bob"), ControlMode::Hybrid);
        assert_eq!(d.current().as_deref(), Some("I trust @Bob"));
        let d = decision(Request::Talk, Some("I trust @Bob"), ControlMode::Human);
        assert_eq!(d.current(), None);
    }

    #[test]
    fn an_answer_goes_once_and_not_after_the_receiver_gave_up() {
        let (answer, rx) = oneshot::channel();
        let now = Instant::now();
        let mut d = Decision::new(
            DecisionRequest {
                request: Request::Vote,
                view: view(),
                proposal: None,
                deadline: now + Duration::from_secs(5),
                answer,
            },
            ControlMode::Human,
            now,
        );
        assert!(d.open());
        drop(rx);
        assert!(!d.open());
        assert!(!d.send("Bob".into()));
        assert!(!d.send("Bob".into()));
    }
}
