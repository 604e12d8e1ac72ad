//! A rule-based werewolf agent that plays from packets alone (so it works
//! in-process and over the wire). Seers report, the medium reports, the
//! possessed sometimes fakes a seer claim, villagers vote on claims and
//! suspicion, wolves agree on their prey in whispers. Talk is drawn from
//! role- and situation-specific phrasings with a seeded RNG, so a game with
//! the same seeds replays exactly.
//!
//! Every talk and whisper is shortened to the length rules of the setting
//! in force ([`super::length::fit`], cut between words), so the server
//! never cuts it; and once the bot has said "I'll vote for @X" it votes
//! for X that day (its word and its vote agree).

use super::packet::{Judge, Packet, Request, Role, Species, Talk};
use super::view::View;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};

/// A public seer (or medium) claim parsed from talk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub day: i64,
    pub speaker: String,
    pub medium: bool,
    pub target: String,
    pub result: Species,
}

/// Parses a claim: the speaker says they are the seer (or medium) and
/// names one agent with `HUMAN` or `WEREWOLF` (how bots phrase results).
pub fn parse_claim(talk: &Talk, names: &[String]) -> Option<Claim> {
    let lower = talk.text.to_lowercase();
    let medium = lower.contains("medium");
    if !(lower.contains("seer") || medium) {
        return None;
    }
    let result = if talk.text.contains("WEREWOLF") {
        Species::Werewolf
    } else if talk.text.contains("HUMAN") {
        Species::Human
    } else {
        return None;
    };
    let target = names
        .iter()
        .filter(|n| **n != talk.agent)
        .filter_map(|n| talk.text.find(&format!("@{n}")).map(|p| (p, n)))
        .min_by_key(|(p, n)| (*p, usize::MAX - n.len()))?
        .1
        .clone();
    Some(Claim {
        day: talk.day,
        speaker: talk.agent.clone(),
        medium,
        target,
        result,
    })
}

/// The bot.
pub struct Bot {
    rng: StdRng,
    /// Possessed only: decided at INITIALIZE whether to fake a seer claim.
    fake_seer: bool,
    fake_results: Vec<Judge>,
    /// Talk lines queued for today, with the agent a news line is about.
    queue: Vec<(String, Option<String>)>,
    planned_day: i64,
    said_today: usize,
    suspicion: BTreeMap<String, f64>,
    /// Today's planned vote announcement and its target.
    vote_line: Option<(String, String)>,
    /// The target this bot announced (day, name): its vote follows it.
    declared: Option<(i64, String)>,
}

fn pick<'a>(rng: &mut StdRng, options: &[&'a str]) -> &'a str {
    options.choose(rng).copied().unwrap_or("")
}

/// Text without whitespace: how a line is compared with what was said
/// (the server may re-space around mentions).
fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Today's talk, squeezed.
fn said_today(view: &View) -> Vec<String> {
    view.talks
        .iter()
        .filter(|t| t.day == view.day && !t.skip && !t.over)
        .map(|t| squeeze(&t.text))
        .collect()
}

/// Lines about yesterday's news, by who says them: a wolf feigns, a seer
/// or medium weighs it against what it knows, the others wonder.
fn news_lines(role: Role, executed: bool) -> &'static [&'static str] {
    match (executed, role) {
        (true, Role::Werewolf | Role::Possessed) => &[
            "We exiled @{x}. I hope that was the right call.",
            "@{x} is gone. I voted with the village, for what it's worth.",
            "Yesterday's vote on @{x} went fast. Too fast?",
        ],
        (true, Role::Seer | Role::Medium) => &[
            "@{x} was exiled. I have my own view on that.",
            "Keep @{x}'s exile in mind when you hear my results.",
            "So @{x} is gone. Let's see if the attacks stop.",
        ],
        (true, _) => &[
            "So @{x} is gone. Did we choose well?",
            "@{x} was exiled yesterday. Let's learn from the votes.",
            "Who pushed hardest for @{x} yesterday? That matters now.",
            "If @{x} was human, someone steered us wrong.",
        ],
        (false, Role::Werewolf) => &[
            "Awful news about @{x}. We have to find them.",
            "@{x} didn't deserve that. Who had a reason?",
        ],
        (false, Role::Seer | Role::Medium | Role::Bodyguard) => &[
            "The wolves went for @{x}. They feared what @{x} knew.",
            "Poor @{x}. That attack tells us something.",
            "They took @{x} and not someone louder. Interesting.",
        ],
        (false, _) => &[
            "Poor @{x} was attacked last night.",
            "The wolves took @{x}. Who benefits from that?",
            "@{x} was attacked. Whoever was quiet about @{x} worries me.",
            "Another night, another loss: @{x}.",
        ],
    }
}

impl Bot {
    pub fn new(seed: u64) -> Bot {
        Bot {
            rng: StdRng::seed_from_u64(seed),
            fake_seer: false,
            fake_results: Vec::new(),
            queue: Vec::new(),
            planned_day: -1,
            said_today: 0,
            suspicion: BTreeMap::new(),
            vote_line: None,
            declared: None,
        }
    }

    /// `line` shortened to the length rules of today's talk (or whisper)
    /// setting, for this speaker's budget: what the server records uncut.
    fn fitted(view: &View, line: &str, whisper: bool) -> String {
        let Some(s) = &view.setting else {
            return line.to_owned();
        };
        let m = if whisper {
            &s.whisper.max_length
        } else {
            &s.talk.max_length
        };
        let cfg = super::length::from_setting(m);
        let others: Vec<&str> = view
            .status
            .keys()
            .filter(|n| **n != view.me)
            .map(String::as_str)
            .collect();
        super::length::fit(line, &cfg, &others, view.remain_length)
    }

    /// The text to send for `line`; notes a vote announcement that
    /// survived the shortening.
    fn say(&mut self, view: &View, line: String, whisper: bool) -> String {
        let out = Bot::fitted(view, &line, whisper);
        if !whisper
            && let Some((l, t)) = &self.vote_line
            && *l == line
            && out.contains(&format!("@{t}"))
        {
            self.declared = Some((view.day, t.clone()));
        }
        out
    }

    /// The target announced today, if it can still be voted for.
    fn declared_target(&self, view: &View) -> Option<String> {
        let (day, t) = self.declared.as_ref()?;
        let alive = view.status.get(t) == Some(&super::packet::Status::Alive);
        (*day == view.day && alive && *t != view.me).then(|| t.clone())
    }

    /// Every packet passes here first (no-reply ones included).
    pub fn observe(&mut self, view: &View, packet: &Packet) {
        match packet.request {
            Request::Initialize => {
                self.suspicion.clear();
                self.fake_results.clear();
                self.fake_seer = view.role == Some(Role::Possessed) && self.rng.random_bool(0.5);
                for n in view.names() {
                    if n != view.me {
                        let jitter = self.rng.random_range(0.0..0.3);
                        self.suspicion.insert(n, jitter);
                    }
                }
            }
            Request::DailyInitialize => {
                self.queue.clear();
                self.said_today = 0;
                self.update_suspicion(view);
            }
            _ => {}
        }
    }

    fn update_suspicion(&mut self, view: &View) {
        // Votes against me make the voter suspicious; agreeing with the
        // crowd makes nobody innocent.
        for v in view.votes.iter().filter(|v| v.day == view.day - 1) {
            if v.target == view.me {
                *self.suspicion.entry(v.agent.clone()).or_default() += 0.6;
            }
        }
        for t in &view.talks {
            if t.day != view.day - 1 {
                continue;
            }
            if t.text.contains(&format!("@{}", view.me)) && t.text.contains("vote") {
                *self.suspicion.entry(t.agent.clone()).or_default() += 0.4;
            }
        }
    }

    /// Claims made in public so far.
    fn claims(&self, view: &View) -> Vec<Claim> {
        let names = view.names();
        view.talks
            .iter()
            .filter_map(|t| parse_claim(t, &names))
            .collect()
    }

    fn alive_others(&self, view: &View) -> Vec<String> {
        view.alive().into_iter().filter(|n| *n != view.me).collect()
    }

    /// Werewolf: who the pack should take (same answer for every wolf
    /// given the same view, so they agree even without whispers).
    fn prey(&self, view: &View) -> Option<String> {
        let wolves = view.wolves();
        let alive: BTreeSet<String> = view.alive().into_iter().collect();
        let candidates: Vec<String> = alive
            .iter()
            .filter(|n| !wolves.contains(*n))
            .cloned()
            .collect();
        // A seer claimant who is still alive is the first prey; then a
        // medium claimant; then whoever accused a wolf; then the first name.
        let claims = self.claims(view);
        for medium in [false, true] {
            if let Some(c) = claims
                .iter()
                .rev()
                .find(|c| c.medium == medium && candidates.contains(&c.speaker))
            {
                return Some(c.speaker.clone());
            }
        }
        for t in view.talks.iter().rev() {
            if candidates.contains(&t.agent)
                && wolves.iter().any(|w| t.text.contains(&format!("@{w}")))
            {
                return Some(t.agent.clone());
            }
        }
        candidates.first().cloned()
    }

    /// The agent this bot wants exiled today.
    fn vote_target(&mut self, view: &View) -> Option<String> {
        let others = self.alive_others(view);
        if others.is_empty() {
            return None;
        }
        let role = view.role.unwrap_or(Role::Villager);
        let claims = self.claims(view);
        match role {
            Role::Werewolf => {
                let wolves = view.wolves();
                // Bandwagon on the most-accused non-wolf, else the prey.
                let mut accused: BTreeMap<String, usize> = BTreeMap::new();
                for t in view.talks.iter().filter(|t| t.day == view.day) {
                    for o in &others {
                        if !wolves.contains(o)
                            && t.text.contains(&format!("@{o}"))
                            && t.text.contains("vote")
                        {
                            *accused.entry(o.clone()).or_default() += 1;
                        }
                    }
                }
                accused
                    .into_iter()
                    .max_by_key(|(n, c)| (*c, std::cmp::Reverse(n.clone())))
                    .map(|(n, _)| n)
                    .or_else(|| self.prey(view))
            }
            Role::Seer => {
                if let Some(j) = view
                    .divines
                    .iter()
                    .rev()
                    .find(|j| j.result == Species::Werewolf && others.contains(&j.target))
                {
                    return Some(j.target.clone());
                }
                // Anyone else claiming seer is lying.
                if let Some(c) = claims
                    .iter()
                    .find(|c| !c.medium && c.speaker != view.me && others.contains(&c.speaker))
                {
                    return Some(c.speaker.clone());
                }
                let cleared: BTreeSet<&String> = view.divines.iter().map(|j| &j.target).collect();
                self.most_suspicious(&others, &cleared)
            }
            Role::Possessed => {
                // Protect the wolves: vote against a real-looking seer, or
                // for whoever a fake result named.
                if let Some(j) = self
                    .fake_results
                    .iter()
                    .rev()
                    .find(|j| others.contains(&j.target))
                {
                    return Some(j.target.clone());
                }
                if let Some(c) = claims
                    .iter()
                    .find(|c| !c.medium && others.contains(&c.speaker))
                {
                    return Some(c.speaker.clone());
                }
                self.most_suspicious(&others, &BTreeSet::new())
            }
            _ => {
                // Trust the first seer claimant's black result; a claimant
                // shown to be a liar by the medium is voted out.
                let seers: Vec<&Claim> = claims.iter().filter(|c| !c.medium).collect();
                let my_medium: Vec<&Judge> = view.mediums.iter().collect();
                for c in &seers {
                    let refuted = my_medium
                        .iter()
                        .any(|j| j.target == c.target && j.result != c.result);
                    if refuted && others.contains(&c.speaker) {
                        return Some(c.speaker.clone());
                    }
                }
                if seers.len() == 1
                    && let Some(c) = seers
                        .iter()
                        .rev()
                        .find(|c| c.result == Species::Werewolf && others.contains(&c.target))
                {
                    return Some(c.target.clone());
                }
                if seers.len() >= 2 {
                    // Two seers: one is lying; the later claimant is the usual liar.
                    if let Some(c) = seers.iter().rev().find(|c| others.contains(&c.speaker)) {
                        if c.result == Species::Werewolf
                            && others.contains(&c.target)
                            && self.rng.random_bool(0.3)
                        {
                            return Some(c.target.clone());
                        }
                        return Some(c.speaker.clone());
                    }
                }
                let cleared: BTreeSet<&String> = seers
                    .iter()
                    .filter(|c| c.result == Species::Human)
                    .map(|c| &c.target)
                    .collect();
                self.most_suspicious(&others, &cleared)
            }
        }
    }

    fn most_suspicious(
        &mut self,
        others: &[String],
        cleared: &BTreeSet<&String>,
    ) -> Option<String> {
        let pool: Vec<&String> = others.iter().filter(|o| !cleared.contains(o)).collect();
        let pool = if pool.is_empty() {
            others.iter().collect()
        } else {
            pool
        };
        let noise: Vec<f64> = pool
            .iter()
            .map(|_| self.rng.random_range(0.0..0.25))
            .collect();
        pool.iter()
            .zip(noise)
            .max_by(|(a, na), (b, nb)| {
                let sa = self.suspicion.get(**a).copied().unwrap_or(0.0) + na;
                let sb = self.suspicion.get(**b).copied().unwrap_or(0.0) + nb;
                sa.total_cmp(&sb)
            })
            .map(|(n, _)| (*n).clone())
    }

    /// Plans today's lines once, at the first talk of the day.
    fn plan(&mut self, view: &View) {
        if self.planned_day == view.day {
            return;
        }
        self.planned_day = view.day;
        self.queue.clear();
        self.vote_line = None;
        let role = view.role.unwrap_or(Role::Villager);
        let mut lines: Vec<String> = Vec::new();
        if view.day == 0 {
            let greet = pick(
                &mut self.rng,
                &[
                    "Good morning, everyone. Let's keep our heads cool today.",
                    "Morning. Someone here is not who they say they are.",
                    "Hello all. I'll be listening closely to every word.",
                    "A quiet village, they said. Let's find the wolf quickly.",
                ],
            );
            lines.push(greet.to_owned());
            if role == Role::Werewolf || role == Role::Possessed {
                lines.push(
                    pick(
                        &mut self.rng,
                        &[
                            "I'm just a villager, trying to help.",
                            "Nothing special about me, I'm afraid.",
                        ],
                    )
                    .to_owned(),
                );
            }
        }
        match role {
            Role::Seer => {
                if let Some(j) = view.divines.last().filter(|j| j.day == view.day - 1) {
                    lines.push(seer_line(&mut self.rng, &j.target, j.result));
                }
            }
            Role::Medium => {
                if let Some(j) = view.mediums.last().filter(|j| j.day == view.day - 1) {
                    let r = j.result.as_str();
                    let l = pick(
                        &mut self.rng,
                        &[
                            "I am the medium. @{t} was {r}.",
                            "Medium here: the one we exiled, @{t}, was {r}.",
                        ],
                    );
                    lines.push(l.replace("{t}", &j.target).replace("{r}", r));
                }
            }
            Role::Possessed if self.fake_seer && view.day >= 1 => {
                let others = self.alive_others(view);
                let fresh: Vec<&String> = others
                    .iter()
                    .filter(|o| !self.fake_results.iter().any(|j| &j.target == *o))
                    .collect();
                if let Some(t) = fresh.choose(&mut self.rng).map(|s| (*s).clone()) {
                    let result = if self.rng.random_bool(0.6) {
                        Species::Werewolf
                    } else {
                        Species::Human
                    };
                    self.fake_results.push(Judge {
                        day: view.day - 1,
                        agent: view.me.clone(),
                        target: t.clone(),
                        result,
                    });
                    lines.push(seer_line(&mut self.rng, &t, result));
                }
            }
            _ => {}
        }
        let mut news: Vec<(String, Option<String>)> = Vec::new();
        if view.day >= 1 {
            for (who, executed) in [
                (&view.executed_today_news, true),
                (&view.attacked_today_news, false),
            ] {
                if let Some(x) = who {
                    let l = pick(&mut self.rng, news_lines(role, executed)).replace("{x}", x);
                    news.push((l, Some(x.clone())));
                }
            }
            if let Some(t) = self.vote_target(view) {
                let l = pick(&mut self.rng, &VOTE_LINES).replace("{t}", &t);
                self.vote_line = Some((l.clone(), t));
                lines.push(l);
            }
        }
        // News first, then claims and votes; spoken in that order.
        let mut queue: Vec<(String, Option<String>)> = news;
        queue.extend(lines.into_iter().map(|l| (l, None)));
        queue.reverse();
        self.queue = queue;
    }

    /// Reaction to being named in today's talk.
    fn defend(&mut self, view: &View) -> Option<String> {
        let accuser = view
            .talks
            .iter()
            .rev()
            .find(|t| {
                t.day == view.day
                    && t.agent != view.me
                    && t.text.contains(&format!("@{}", view.me))
                    && t.text.contains("vote")
            })?
            .agent
            .clone();
        *self.suspicion.entry(accuser.clone()).or_default() += 0.3;
        let l = pick(
            &mut self.rng,
            &[
                "@{a}, you're wrong about me.",
                "Why would @{a} push on me so fast?",
                "@{a}, I'm not the one you want.",
            ],
        );
        Some(l.replace("{a}", &accuser))
    }

    /// The answer to a TALK, within the length rules.
    pub fn talk(&mut self, view: &View) -> String {
        let line = self.talk_line(view);
        self.say(view, line, false)
    }

    fn talk_line(&mut self, view: &View) -> String {
        self.plan(view);
        self.said_today += 1;
        // Nobody repeats a line already said today, and news gets two
        // comments at most: the rest of the village has other things to say.
        let said = said_today(view);
        while let Some((l, topic)) = self.queue.pop() {
            if said.contains(&squeeze(&l)) || said.contains(&squeeze(&Bot::fitted(view, &l, false)))
            {
                continue;
            }
            if let Some(x) = topic {
                let mention = format!("@{x}");
                let comments = view
                    .talks
                    .iter()
                    .filter(|t| t.day == view.day && t.text.contains(&mention))
                    .count();
                if comments >= 2 {
                    continue;
                }
            }
            return l;
        }
        if self.said_today <= 3
            && self.rng.random_bool(0.5)
            && let Some(d) = self.defend(view)
        {
            return d;
        }
        "Over".to_owned()
    }

    /// The answer to a WHISPER (propose or confirm tonight's prey), within
    /// the length rules.
    pub fn whisper(&mut self, view: &View) -> String {
        let line = self.whisper_line(view);
        self.say(view, line, true)
    }

    fn whisper_line(&mut self, view: &View) -> String {
        let mine_today = view
            .whispers
            .iter()
            .filter(|t| t.day == view.day && t.agent == view.me)
            .count();
        if mine_today >= 1 {
            return "Over".to_owned();
        }
        match self.prey(view) {
            Some(p) => {
                let l = pick(
                    &mut self.rng,
                    &[
                        "Let's take @{p} tonight.",
                        "I say we attack @{p}.",
                        "@{p} is the danger. Tonight.",
                    ],
                );
                l.replace("{p}", &p)
            }
            None => "Over".to_owned(),
        }
    }

    /// The vote: the target announced today if any, else the bot's pick.
    pub fn vote(&mut self, view: &View) -> String {
        if let Some(t) = self.declared_target(view) {
            return t;
        }
        self.vote_target(view).unwrap_or_else(|| view.me.clone())
    }

    pub fn divine(&mut self, view: &View) -> String {
        let done: BTreeSet<&String> = view.divines.iter().map(|j| &j.target).collect();
        let others = self.alive_others(view);
        let fresh: Vec<&String> = others.iter().filter(|o| !done.contains(o)).collect();
        let pool: Vec<&String> = if fresh.is_empty() {
            others.iter().collect()
        } else {
            fresh
        };
        pool.choose(&mut self.rng)
            .map(|s| (*s).clone())
            .unwrap_or_else(|| view.me.clone())
    }

    pub fn guard(&mut self, view: &View) -> String {
        let others = self.alive_others(view);
        let claims = self.claims(view);
        if let Some(c) = claims
            .iter()
            .find(|c| !c.medium && others.contains(&c.speaker))
        {
            return c.speaker.clone();
        }
        others
            .choose(&mut self.rng)
            .cloned()
            .unwrap_or_else(|| view.me.clone())
    }

    pub fn attack(&mut self, view: &View) -> String {
        // Follow a pack-mate's proposal from tonight's whispers if any.
        let wolves = view.wolves();
        let alive = view.alive();
        for w in view.whispers.iter().filter(|t| t.day == view.day) {
            if let Some(p) = alive
                .iter()
                .find(|n| !wolves.contains(*n) && w.text.contains(&format!("@{n}")))
            {
                return p.clone();
            }
        }
        self.prey(view).unwrap_or_else(|| view.me.clone())
    }

    /// Group chat: what to post after `packet` (PHASE_START or a broadcast),
    /// or None to stay quiet.
    pub fn chat(&mut self, view: &View, packet: &Packet) -> Option<String> {
        let whisper = matches!(
            packet.request,
            Request::WhisperPhaseStart | Request::WhisperBroadcast
        );
        let remain = packet
            .info
            .as_ref()
            .and_then(|i| i.remain_count)
            .unwrap_or(0);
        if remain <= 0 {
            return None;
        }
        let from_me = packet
            .new_talk
            .as_ref()
            .or(packet.new_whisper.as_ref())
            .is_some_and(|t| t.agent == view.me);
        if from_me {
            return None;
        }
        Some(if whisper {
            self.whisper(view)
        } else {
            self.talk(view)
        })
    }

    /// The reply to a request that needs one.
    pub fn decide(&mut self, view: &View, request: Request) -> String {
        match request {
            Request::Talk => self.talk(view),
            Request::Whisper => self.whisper(view),
            Request::Vote => self.vote(view),
            Request::Divine => self.divine(view),
            Request::Guard => self.guard(view),
            Request::Attack => self.attack(view),
            _ => String::new(),
        }
    }
}

/// How the bot announces its vote (`{t}`: the target).
pub const VOTE_LINES: [&str; 4] = [
    "I will vote for @{t} today.",
    "My vote goes to @{t}; the story doesn't add up.",
    "I suspect @{t}. I'll vote that way.",
    "Let's vote for @{t} unless someone objects.",
];

/// The target of a vote announcement in `text` (one of [`VOTE_LINES`],
/// whole or shortened after the name, as recorded by a server that may
/// re-space around the mention), among `names`.
pub fn announced_vote(text: &str, names: &[String]) -> Option<String> {
    let squeezed = squeeze(text);
    VOTE_LINES.iter().find_map(|l| {
        let (pre, _) = l.split_once("{t}")?;
        let pre = squeeze(pre);
        let rest = squeezed.strip_prefix(&pre)?;
        names
            .iter()
            .filter(|n| rest.starts_with(&squeeze(n)))
            .max_by_key(|n| n.len())
            .cloned()
    })
}

fn seer_line(rng: &mut StdRng, target: &str, result: Species) -> String {
    let r = result.as_str();
    let l = match result {
        Species::Werewolf => pick(
            rng,
            &[
                "I am the seer. I checked @{t}: WEREWOLF!",
                "Seer here. My vision of @{t} says WEREWOLF.",
                "Listen, I'm the seer: @{t} is a WEREWOLF.",
            ],
        ),
        Species::Human => pick(
            rng,
            &[
                "I am the seer. I checked @{t}: {r}.",
                "Seer here. @{t} came back {r}.",
                "As the seer I can tell you @{t} is {r}.",
            ],
        ),
    };
    l.replace("{t}", target).replace("{r}", r)
}
