//! The tactical whisper parser: a player's free text (Chinese or English)
//! compiled into a battle plan of up to eight timed, scoped orders, with
//! the reference's vocabulary and exactly its results. No model, no
//! randomness: the same text, side, tick and world give the same plan.
//!
//! The reference writes it with Python regular expressions; here each
//! pattern is a small hand-written matcher that takes the same match (the
//! same leftmost start, the same greedy or lazy choice) over Python's idea
//! of a digit (any script's decimal digits) and of white space.

use super::Maneuver;
use super::text::{
    Nat, PyInt, any_at, ci_at, ci_char, contains_any, digits_at, is_digit, lit_at,
    lower_for_aliases, prefix_chars, py_strip, skip_space,
};
use super::vocab::match_maneuver;
use crate::json::{Map, Number, Value};
use crate::protocols::tank::{Team, World};
use sha2::{Digest, Sha256};

/// Ticks between a phase and one that says "then" without a time.
pub const DEFAULT_PHASE_TICKS: u64 = 180;

fn is_comma(c: char) -> bool {
    c == ',' || c == '，'
}

fn is_unit_letter_exact(c: char) -> bool {
    matches!(c, 'h' | 'g' | 'H' | 'G')
}

/// Digits from `at`: how many in a row.
fn digit_run(chars: &[char], at: usize) -> usize {
    chars[at.min(chars.len())..]
        .iter()
        .take_while(|&&c| is_digit(c))
        .count()
}

/// The text's executable clauses (at most eight): split at sentence and
/// clause marks and before "then" words, keeping `(x, y)` and unit lists
/// like `h0,h1` whole; a part without a maneuver that carries a duration
/// or a coordinate joins the clause before it.
pub fn split_tactical_clauses(text: &str) -> Vec<String> {
    let c: Vec<char> = text.chars().collect();
    // Digit pairs: `3, 4` becomes `3§4`.
    let mut a: Vec<char> = Vec::with_capacity(c.len());
    let mut i = 0;
    while i < c.len() {
        if is_digit(c[i]) {
            let e1 = i + digit_run(&c, i);
            let j = skip_space(&c, e1);
            if c.get(j).is_some_and(|&x| is_comma(x)) {
                let k = skip_space(&c, j + 1);
                let l = digit_run(&c, k);
                if l > 0 {
                    a.extend_from_slice(&c[i..e1]);
                    a.push('§');
                    a.extend_from_slice(&c[k..k + l]);
                    i = k + l;
                    continue;
                }
            }
            a.extend_from_slice(&c[i..e1]);
            i = e1;
        } else {
            a.push(c[i]);
            i += 1;
        }
    }
    // Unit lists: `h0, h1` becomes `h0、h1`.
    let mut b: Vec<char> = Vec::with_capacity(a.len());
    let mut i = 0;
    while i < a.len() {
        if is_unit_letter_exact(a[i]) {
            let l = digit_run(&a, i + 1);
            if (1..=2).contains(&l) {
                let j = skip_space(&a, i + 1 + l);
                if a.get(j).is_some_and(|&x| is_comma(x)) {
                    let k = skip_space(&a, j + 1);
                    if a.get(k).is_some_and(|&x| is_unit_letter_exact(x))
                        && a.get(k + 1).is_some_and(|&x| is_digit(x))
                    {
                        b.extend_from_slice(&a[i..i + 1 + l]);
                        b.push('、');
                        i = k;
                        continue;
                    }
                }
            }
        }
        b.push(a[i]);
        i += 1;
    }
    // A clause break before each "then" word.
    const THEN: [&str; 6] = ["然后", "随后", "接着", "再让", "再由", "同时让"];
    let mut d: Vec<char> = Vec::with_capacity(b.len() + 8);
    for i in 0..b.len() {
        if any_at(&b, i, &THEN, false).is_some() {
            d.push('；');
        }
        d.push(b[i]);
    }
    let is_sep = |x: char| matches!(x, '；' | ';' | '。' | '\n' | '，' | ',');
    let is_strip = |x: char| matches!(x, ' ' | '，' | ',' | ';' | '；' | '。' | '\t');
    let joined: String = d.into_iter().collect();
    let mut clauses: Vec<String> = Vec::new();
    for part in joined.split(is_sep) {
        if part.trim_matches(is_strip).is_empty() {
            continue;
        }
        let part = part.replace('§', ",");
        let part = part.trim_matches(is_strip);
        if match_maneuver(part).is_some() {
            clauses.push(part.to_string());
            continue;
        }
        if let Some(last) = clauses.last_mut()
            && is_modifier(part)
        {
            last.push('，');
            last.push_str(part);
        }
    }
    clauses.truncate(8);
    clauses
}

/// A duration, coordinate or row mention (the parts that belong to the
/// clause before them).
fn is_modifier(part: &str) -> bool {
    let c: Vec<char> = part.chars().collect();
    if contains_any(&c, &["持续", "维持", "坐标", "tick", "帧", "拍"], true) {
        return true;
    }
    (0..c.len()).any(|p| {
        c[p] == '第' && {
            let j = skip_space(&c, p + 1);
            digits_at(&c, j).is_some_and(|(_, e)| c.get(skip_space(&c, e)) == Some(&'行'))
        }
    })
}

/// `[a-z0-9]` under IGNORECASE (the unit ids' look-behind).
fn is_id_neighbour(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '\u{130}' | '\u{131}' | '\u{17f}' | '\u{212a}')
}

/// Every unit id written in the clause (`h3`, `G12`; one or two digits, not
/// inside a longer word or number), lower-cased, in order.
fn unit_mentions(c: &[char]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let letter = ci_char(c[i], 'h') || ci_char(c[i], 'g');
        if letter && (i == 0 || !is_id_neighbour(c[i - 1])) {
            let l = digit_run(c, i + 1);
            if (1..=2).contains(&l) {
                let s: String = c[i..i + 1 + l].iter().collect();
                out.push(lower_for_aliases(&s));
                i += 1 + l;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The side's own units a clause names: `None` when it names none or says
/// "all units" (the whole army); otherwise the named live units, sorted by
/// number. The flag says whether any unit was named at all.
pub fn extract_tactical_units(
    clause: &str,
    role: Option<Team>,
    known_units: &[String],
) -> (Option<Vec<String>>, bool) {
    let c: Vec<char> = clause.chars().collect();
    let prefix = role.map(|t| t.prefix().to_string()).unwrap_or_default();
    let mut explicit: Vec<String> = unit_mentions(&c)
        .into_iter()
        .filter(|m| m.starts_with(&prefix))
        .collect();
    // `3号`, `12号坦克`: numbers of the side's own tanks.
    let mut i = 0;
    while i < c.len() {
        if is_digit(c[i]) {
            let l = digit_run(&c, i);
            if l <= 2 {
                let j = skip_space(&c, i + l);
                if c.get(j) == Some(&'号') && !prefix.is_empty() {
                    explicit.push(format!(
                        "{prefix}{}",
                        Nat::from_digits(&c[i..i + l]).as_str()
                    ));
                }
            }
            i += l;
        } else {
            i += 1;
        }
    }
    let mentioned = !explicit.is_empty();
    if !mentioned
        || contains_any(
            &c,
            &[
                "全军",
                "全体",
                "所有",
                "全部单位",
                "whole army",
                "all units",
            ],
            true,
        )
    {
        return (None, mentioned);
    }
    let mut unique: Vec<String> = Vec::new();
    for id in explicit {
        if (known_units.is_empty() || known_units.contains(&id)) && !unique.contains(&id) {
            unique.push(id);
        }
    }
    let key = |id: &String| {
        let chars: Vec<char> = id.chars().collect();
        (Nat::from_digits(&chars[1..]), chars[0], id.clone())
    };
    unique.sort_by_key(key);
    (Some(unique), true)
}

/// A map cell an order names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub row: PyInt,
    pub col: PyInt,
}

impl Target {
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(2);
        m.insert("row", self.row.to_value());
        m.insert("col", self.col.to_value());
        Value::Object(m)
    }
}

/// `第3行…第4列` at `p`: the match's end, row and column. `cols[m]` is
/// [`col_at`]`(c, m)`, worked out once per clause (the lazy `.*?` tries
/// every position after each row).
fn row_col_at(c: &[char], p: usize, cols: &[Option<(usize, Nat)>]) -> Option<(usize, Nat, Nat)> {
    let firsts: &[usize] = if c.get(p) == Some(&'第') {
        &[p + 1, p]
    } else {
        &[p]
    };
    for &q in firsts {
        let j = skip_space(c, q);
        let Some((row, e1)) = digits_at(c, j) else {
            continue;
        };
        let k = skip_space(c, e1);
        if c.get(k) != Some(&'行') {
            continue;
        }
        let mut m = k + 1;
        loop {
            if let Some(Some((end, col))) = cols.get(m) {
                return Some((*end, row, col.clone()));
            }
            if m >= c.len() || c[m] == '\n' {
                break;
            }
            m += 1;
        }
    }
    None
}

fn col_at(c: &[char], m: usize) -> Option<(usize, Nat)> {
    let starts: &[usize] = if c.get(m) == Some(&'第') {
        &[m + 1, m]
    } else {
        &[m]
    };
    for &q in starts {
        let j = skip_space(c, q);
        let e = j + digit_run(c, j);
        if e > j {
            let k = skip_space(c, e);
            if c.get(k) == Some(&'列') {
                return Some((k + 1, Nat::from_digits(&c[j..e])));
            }
        }
    }
    None
}

/// `坐标 (x, y)` at `p`: the match's end, x and y.
fn xy_at(c: &[char], p: usize) -> Option<(usize, Nat, Nat)> {
    let mut starts = Vec::with_capacity(2);
    if let Some(q) = any_at(c, p, &["坐标", "目标", "position", "coordinate"], true) {
        starts.push(q);
    }
    starts.push(p);
    for q in starts {
        let j = skip_space(c, q);
        let mut opens = Vec::with_capacity(2);
        if matches!(c.get(j), Some('（' | '(')) {
            opens.push(j + 1);
        }
        opens.push(j);
        for b in opens {
            let d = skip_space(c, b);
            let Some((x, e1)) = digits_at(c, d) else {
                continue;
            };
            let s = skip_space(c, e1);
            if !matches!(c.get(s), Some(',' | '，' | '/')) {
                continue;
            }
            let t = skip_space(c, s + 1);
            let Some((y, e2)) = digits_at(c, t) else {
                continue;
            };
            let mut u = skip_space(c, e2);
            if matches!(c.get(u), Some(')' | '）')) {
                u += 1;
            }
            return Some((u, x, y));
        }
    }
    None
}

/// All matches of one pattern, left to right, not overlapping.
fn find_all(
    c: &[char],
    at: impl Fn(&[char], usize) -> Option<(usize, Nat, Nat)>,
) -> Vec<(usize, Nat, Nat)> {
    let mut out = Vec::new();
    let mut p = 0;
    while p <= c.len() {
        match at(c, p) {
            Some((end, a, b)) => {
                out.push((p, a, b));
                p = end.max(p + 1);
            }
            None => p += 1,
        }
    }
    out
}

/// Up to eight cells the clause names (`第3行第4列` as row and column,
/// `(x, y)` as column and row), in the order written, clamped inside the
/// border when the map is known, repeats in a row dropped.
pub fn extract_tactical_targets(clause: &str, rows: i64, cols: i64) -> Vec<Target> {
    let c: Vec<char> = clause.chars().collect();
    let cols_at: Vec<Option<(usize, Nat)>> = (0..=c.len()).map(|m| col_at(&c, m)).collect();
    let mut matches: Vec<(usize, Nat, Nat)> = find_all(&c, |c, p| row_col_at(c, p, &cols_at));
    matches.extend(find_all(&c, xy_at).into_iter().map(|(p, x, y)| (p, y, x)));
    matches.sort();
    let clamp = |n: &Nat, limit: i64| -> PyInt {
        let v = PyInt::from_nat(n);
        if limit > 2 {
            let hi = PyInt::Small(limit - 2);
            let v = if v > hi { hi } else { v };
            v.max(PyInt::Small(1))
        } else {
            v
        }
    };
    let mut targets: Vec<Target> = Vec::new();
    for (_, row, col) in matches.iter().take(8) {
        let t = Target {
            row: clamp(row, rows),
            col: clamp(col, cols),
        };
        if targets.last() != Some(&t) {
            targets.push(t);
        }
    }
    targets
}

/// What makes a phase wait beyond its start tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerKind {
    /// The side has at most `value` tanks left.
    OwnAliveLte,
    /// The enemy has at most `value` tanks left.
    EnemyAliveLte,
    /// The tank itself has at most `value` hp.
    UnitHpLte,
}

impl TriggerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TriggerKind::OwnAliveLte => "own_alive_lte",
            TriggerKind::EnemyAliveLte => "enemy_alive_lte",
            TriggerKind::UnitHpLte => "unit_hp_lte",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trigger {
    pub kind: TriggerKind,
    pub value: u64,
}

/// One phase of a whispered plan, as the commander reads it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanOrder {
    /// `phase-01`, `phase-02`, …
    pub id: String,
    pub kind: Maneuver,
    pub start_tick: PyInt,
    /// The clause it came from (first 200 characters).
    pub source_clause: String,
    /// The units it is for (none: the whole army).
    pub unit_ids: Option<Vec<String>>,
    /// For a patrol, the cells in turn.
    pub waypoints: Option<Vec<Target>>,
    pub target: Option<Target>,
    pub target_unit_id: Option<String>,
    pub expires_tick: Option<PyInt>,
    pub trigger: Option<Trigger>,
}

impl PlanOrder {
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("id", Value::from(self.id.as_str()));
        m.insert("kind", Value::from(self.kind.as_str()));
        m.insert("start_tick", self.start_tick.to_value());
        m.insert("source_clause", Value::from(self.source_clause.as_str()));
        if let Some(ids) = &self.unit_ids {
            m.insert(
                "unit_ids",
                Value::Array(ids.iter().map(|s| Value::from(s.as_str())).collect()),
            );
        }
        if let Some(w) = &self.waypoints {
            m.insert(
                "waypoints",
                Value::Array(w.iter().map(Target::to_value).collect()),
            );
        } else if let Some(t) = &self.target {
            m.insert("target", t.to_value());
        }
        if let Some(u) = &self.target_unit_id {
            m.insert("target_unit_id", Value::from(u.as_str()));
        }
        if let Some(e) = &self.expires_tick {
            m.insert("expires_tick", e.to_value());
        }
        if let Some(t) = &self.trigger {
            let mut tm = Map::with_capacity(2);
            tm.insert("type", Value::from(t.kind.as_str()));
            tm.insert("value", Value::Number(Number::Int(t.value as i64)));
            m.insert("trigger", Value::Object(tm));
        }
        Value::Object(m)
    }
}

/// A whispered battle plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TacticalPlan {
    /// `whisper-<tick>-<10 hex digits of sha256(tick, NUL, text)>`.
    pub id: String,
    pub issued_at_tick: i64,
    /// The whisper's first 500 characters.
    pub source_text: String,
    pub orders: Vec<PlanOrder>,
    /// Why clauses were dropped or scheduled (at most eight).
    pub assumptions: Vec<String>,
}

/// What a whisper becomes: the side's new default maneuver and plan.
#[derive(Debug, Clone, PartialEq)]
pub struct WhisperIntent {
    /// The first unscoped, untriggered phase that starts at once, else
    /// assault.
    pub maneuver: Maneuver,
    pub plan: TacticalPlan,
    pub raw_text: String,
    /// 0.96, or 0.9 when a clause was dropped or scheduled by assumption.
    pub confidence: f64,
}

impl WhisperIntent {
    /// The patch merged into strategy.json: `{mode, maneuver, order, plan}`.
    pub fn strategy_patch(&self) -> Value {
        let p = &self.plan;
        let mut plan = Map::new();
        plan.insert("version", Value::from(1i64));
        plan.insert("id", Value::from(p.id.as_str()));
        plan.insert("issued_at_tick", Value::from(p.issued_at_tick));
        plan.insert("source_text", Value::from(p.source_text.as_str()));
        plan.insert(
            "orders",
            Value::Array(p.orders.iter().map(PlanOrder::to_value).collect()),
        );
        plan.insert(
            "assumptions",
            Value::Array(
                p.assumptions
                    .iter()
                    .map(|s| Value::from(s.as_str()))
                    .collect(),
            ),
        );
        let mut m = Map::new();
        m.insert("mode", Value::from("tactical_plan"));
        m.insert("maneuver", Value::from(self.maneuver.as_str()));
        m.insert("order", Value::Null);
        m.insert("plan", Value::Object(plan));
        Value::Object(m)
    }

    /// The whole intent as the reference's hook returns it.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("scope", Value::from("persist"));
        m.insert("target_policy", Value::from("persist"));
        m.insert("value", Value::Null);
        m.insert("policy", Value::Null);
        m.insert("strategy_patch", self.strategy_patch());
        m.insert("raw_text", Value::from(self.raw_text.as_str()));
        m.insert("confidence", Value::Number(Number::Float(self.confidence)));
        Value::Object(m)
    }
}

/// Who whispers and when: the side (none: unknown), the tick (0: the
/// world's) and the world the side sees (none: no map, no units known).
#[derive(Debug, Clone, Copy, Default)]
pub struct WhisperContext<'a> {
    pub role: Option<Team>,
    pub tick: i64,
    pub world: Option<&'a World>,
}

/// The first match of `prefix \s* (\d+) \s* unit` anywhere in `c`.
fn number_between(c: &[char], prefixes: &[&str], units: &[&str]) -> Option<Nat> {
    (0..c.len()).find_map(|p| {
        let q = any_at(c, p, prefixes, true)?;
        let (n, e) = digits_at(c, skip_space(c, q))?;
        any_at(c, skip_space(c, e), units, true).map(|_| n)
    })
}

/// `12 ticks later`, `30帧后`: the number.
fn relative_delay(c: &[char]) -> Option<Nat> {
    let mut p = 0;
    while p < c.len() {
        if !is_digit(c[p]) {
            p += 1;
            continue;
        }
        let (n, e) = digits_at(c, p)?;
        let j = skip_space(c, e);
        for unit in ["tick", "ticks", "帧", "拍", "刻"] {
            if let Some(u) = ci_at(c, j, unit)
                && any_at(c, skip_space(c, u), &["后", "之后", "later"], true).is_some()
            {
                return Some(n);
            }
        }
        p = e;
    }
    None
}

/// `敌方只剩2辆` (enemy) or `剩余3` (own): the trigger.
fn alive_trigger(c: &[char]) -> Option<Trigger> {
    let rest = |q: usize| -> Option<Nat> {
        let mut starts = Vec::with_capacity(2);
        if let Some(r) = lit_at(c, q, "兵力") {
            starts.push(r);
        }
        starts.push(q);
        starts.into_iter().find_map(|r| {
            let k = any_at(c, r, &["只剩", "剩余", "低于", "少于", "不超过"], false)?;
            digits_at(c, skip_space(c, k)).map(|(n, _)| n)
        })
    };
    (0..c.len()).find_map(|p| {
        if let Some(q) = any_at(c, p, &["敌方", "敌军", "对方"], false)
            && let Some(n) = rest(skip_space(c, q))
        {
            return Some(Trigger {
                kind: TriggerKind::EnemyAliveLte,
                value: n.min_u64(32),
            });
        }
        rest(p).map(|n| Trigger {
            kind: TriggerKind::OwnAliveLte,
            value: n.min_u64(32),
        })
    })
}

/// `血量低于2`, `hp<=1`: the trigger.
fn hp_trigger(c: &[char]) -> Option<Trigger> {
    (0..c.len()).find_map(|p| {
        let q = any_at(c, p, &["血量", "生命", "hp"], true)?;
        let j = skip_space(c, q);
        let mut ks = Vec::with_capacity(2);
        if let Some(k) = any_at(c, j, &["低于", "少于", "不超过"], false) {
            ks.push(k);
        } else if c.get(j) == Some(&'<') {
            if c.get(j + 1) == Some(&'=') {
                ks.push(j + 2);
            }
            ks.push(j + 1);
        }
        ks.into_iter().find_map(|k| {
            digits_at(c, skip_space(c, k)).map(|(n, _)| Trigger {
                kind: TriggerKind::UnitHpLte,
                value: n.min_u64(99),
            })
        })
    })
}

/// Compile a whisper into a plan; `None` when no clause is an order (or
/// the text is blank). At most the first 2,000 characters are read.
pub fn parse_tactical_whisper(text: &str, ctx: &WhisperContext<'_>) -> Option<WhisperIntent> {
    if py_strip(text).is_empty() {
        return None;
    }
    let current = if ctx.tick != 0 {
        ctx.tick
    } else {
        ctx.world.map_or(0, |w| w.tick)
    };
    let (rows, cols) = ctx
        .world
        .map_or((0, 0), |w| (w.grid.rows as i64, w.grid.cols as i64));
    let live = |own: bool| -> Vec<String> {
        ctx.world
            .map(|w| {
                w.tanks
                    .iter()
                    .filter(|t| (Some(t.team()) == ctx.role) == own && t.hp > 0)
                    .map(|t| t.id.to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let known_units = live(true);
    let known_enemies = live(false);
    let enemy_prefix = ctx
        .role
        .map(|t| t.other().prefix().to_string())
        .unwrap_or_default();
    let mut orders: Vec<PlanOrder> = Vec::new();
    let mut assumptions: Vec<String> = Vec::new();
    for clause in split_tactical_clauses(prefix_chars(text, 2000)) {
        let Some(mut maneuver) = match_maneuver(&clause) else {
            continue;
        };
        let c: Vec<char> = clause.chars().collect();
        let short = prefix_chars(&clause, 80);
        let (unit_ids, mentioned) = extract_tactical_units(&clause, ctx.role, &known_units);
        if mentioned && unit_ids.as_ref().is_some_and(Vec::is_empty) {
            assumptions.push(format!("Ignored an invalid local unit scope: {short}"));
            continue;
        }
        let targets = extract_tactical_targets(&clause, rows, cols);
        if maneuver == Maneuver::MoveTo && targets.is_empty() {
            assumptions.push(format!("Ignored move order without a coordinate: {short}"));
            continue;
        }
        if maneuver == Maneuver::Patrol && targets.len() < 2 {
            assumptions.push(format!(
                "Ignored patrol order without two coordinates: {short}"
            ));
            continue;
        }
        let target_unit_id = unit_mentions(&c).into_iter().find(|m| {
            m.starts_with(&enemy_prefix) && (known_enemies.is_empty() || known_enemies.contains(m))
        });
        if target_unit_id.is_some()
            && maneuver == Maneuver::Assault
            && contains_any(
                &c,
                &["attack", "target", "charge", "攻击", "攻打", "冲向", "追击"],
                true,
            )
        {
            maneuver = Maneuver::AttackUnit;
        }
        if maneuver == Maneuver::AttackUnit && target_unit_id.is_none() {
            assumptions.push(format!(
                "Ignored attack order without a live enemy unit: {short}"
            ));
            continue;
        }
        let mut start = PyInt::Small(current);
        if let Some(n) = relative_delay(&c) {
            start = PyInt::Small(current).add(n.min_u64(100_000));
        } else if let Some(n) = number_between(&c, &["第", "到", "at"], &["tick", "帧", "拍", "刻"])
        {
            start = PyInt::Small(current).max(PyInt::from_nat(&n));
        } else if let Some(previous) = orders.last()
            && any_at(&c, 0, &["然后", "随后", "接着", "再"], false).is_some()
        {
            start = match &previous.expires_tick {
                Some(e) if *e != PyInt::Small(0) => e.clone(),
                _ => previous.start_tick.add(DEFAULT_PHASE_TICKS),
            };
            assumptions.push(format!(
                "Scheduled '{}' {DEFAULT_PHASE_TICKS} ticks after the previous phase.",
                prefix_chars(&clause, 24)
            ));
        }
        let duration = number_between(
            &c,
            &["持续", "维持", "for"],
            &["tick", "ticks", "帧", "拍", "刻"],
        );
        let mut trigger = alive_trigger(&c);
        if let Some(t) = hp_trigger(&c) {
            trigger = Some(t);
        }
        let (waypoints, target) = if maneuver == Maneuver::Patrol {
            (Some(targets.iter().take(8).cloned().collect()), None)
        } else {
            (None, targets.first().cloned())
        };
        let expires_tick = duration.map(|d| start.add(d.min_u64(100_000)));
        orders.push(PlanOrder {
            id: format!("phase-{:02}", orders.len() + 1),
            kind: maneuver,
            start_tick: start,
            source_clause: prefix_chars(&clause, 200).to_string(),
            unit_ids: unit_ids.map(|mut u| {
                u.truncate(32);
                u
            }),
            waypoints,
            target,
            target_unit_id,
            expires_tick,
            trigger,
        });
    }
    if orders.is_empty() {
        return None;
    }
    let digest = Sha256::digest(format!("{current}\0{text}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let maneuver = orders
        .iter()
        .find(|o| {
            o.unit_ids.is_none() && o.start_tick <= PyInt::Small(current) && o.trigger.is_none()
        })
        .map_or(Maneuver::Assault, |o| o.kind);
    let confidence = if assumptions.is_empty() { 0.96 } else { 0.9 };
    assumptions.truncate(8);
    Some(WhisperIntent {
        maneuver,
        plan: TacticalPlan {
            id: format!("whisper-{current}-{}", &hex[..10]),
            issued_at_tick: current,
            source_text: prefix_chars(text, 500).to_string(),
            orders,
            assumptions,
        },
        raw_text: text.to_string(),
        confidence,
    })
}
