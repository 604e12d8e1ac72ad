//! The market screen (F4): GTL jobs with budget, deadline and state; the
//! selected transaction's timeline (each event with its hash) and offers;
//! your principal and balance. Open a job from a form, accept an offer,
//! fund the deal, and watch a provider solve it and the verifier settle.
//!
//! Everything slow runs as a task that reports back with
//! [`Action::Market`]: connecting (the market token), refreshing (about
//! once a second, on ticks) and each message posted.

use super::action::{Action, Shared};
use super::keymap::Context;
use super::panes::dialogs::centered;
use super::screen::{Env, Paint, Screen};
use super::theme::Theme;
use crate::json::Value;
use crate::market::messages::{self, JobRequest};
use crate::market::time::{format_rfc3339_utc, parse_rfc3339_utc, system_ms};
use crate::market::{MarketClient, MarketClientError};
use crossterm::event::KeyCode;
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph, Wrap};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;

/// How often the listing, the balance and the selected transaction are
/// read again.
pub const REFRESH: Duration = Duration::from_secs(1);

/// Longest target the form lets through (the market's default cap).
pub const MAX_TARGET_HEX: usize = 8;

/// What the market showed at one moment (`at_ms`, the local clock when it
/// was read): the raw answers of `GET /api/market?all=1`, the account and
/// `GET /api/gtl/transactions/{id}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Refresh {
    pub principal_id: String,
    pub at_ms: i64,
    /// Every job, newest first.
    pub jobs: Vec<Value>,
    pub balance: i64,
    /// The selected transaction's view (or the newest one's).
    pub view: Option<Value>,
}

/// Reports for this screen.
#[derive(Debug, Clone, PartialEq)]
pub enum MarketMsg {
    /// This identity's market token: the client, or why not.
    Connected(Result<Shared<MarketClient>, String>),
    /// A refresh: what the market shows, or why it could not be read.
    Refreshed(Result<Box<Refresh>, String>),
    /// JOB_OPEN was posted: the new transaction id, or the refusal.
    Opened(Result<String, String>),
    /// Accept or fund ended: a summary, or the refusal.
    Done(Result<String, String>),
}

/// Where the market connection stands.
#[derive(Debug, Clone, PartialEq, Default)]
enum Conn {
    #[default]
    WaitingForCommunity,
    Connecting,
    Failed(String),
    Ready,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pane {
    #[default]
    Jobs,
    Offers,
}

/// One row of the listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: String,
    pub state: String,
    pub budget: i64,
    pub deadline_ms: Option<i64>,
    pub buyer: String,
    pub target: String,
}

/// One event of a transaction's chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at_ms: i64,
    pub kind: String,
    pub state_after: String,
    pub hash: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    pub hash: String,
    pub price: i64,
    pub provider: String,
    pub status: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Deal {
    pub hash: String,
    pub offer_hash: String,
    pub amount: i64,
    pub provider: String,
    pub confirmed: bool,
}

/// The selected transaction, from its view.
#[derive(Debug, Clone, PartialEq)]
pub struct Tx {
    pub job: Job,
    pub events: Vec<Event>,
    pub offers: Vec<Offer>,
    pub deal: Option<Deal>,
    /// (label, hash) of the job, the accepted offer, the deal, the
    /// delivery and the verification, as far as they exist.
    pub hashes: Vec<(&'static str, String)>,
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn int(v: Option<&Value>) -> i64 {
    v.and_then(Value::as_i64).unwrap_or(0)
}

/// The first `n` characters of `h`.
fn short(h: &str, n: usize) -> String {
    h.chars().take(n).collect()
}

fn parse_job(v: &Value) -> Option<Job> {
    let id = s(v, "transaction_id");
    if id.is_empty() {
        return None;
    }
    let (_, target) = crate::market::bot::input(v);
    Some(Job {
        id: id.to_owned(),
        state: s(v, "state").to_owned(),
        budget: int(v.get("budget").and_then(|b| b.get("amount"))),
        deadline_ms: parse_rfc3339_utc(s(v, "deadline")),
        buyer: s(v, "buyer_principal").to_owned(),
        target,
    })
}

fn parse_tx(v: &Value) -> Option<Tx> {
    let job = parse_job(v)?;
    let list = |k: &str| {
        v.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let events = list("events")
        .iter()
        .map(|e| Event {
            at_ms: int(e.get("at")),
            kind: s(e, "kind").to_owned(),
            state_after: s(e, "state_after").to_owned(),
            hash: s(e, "event_hash").to_owned(),
        })
        .collect();
    let offers = list("offers")
        .iter()
        .map(|o| Offer {
            hash: s(o, "offer_hash").to_owned(),
            price: int(o.get("price")),
            provider: s(o, "provider_principal").to_owned(),
            status: s(o, "status").to_owned(),
        })
        .collect();
    let deal = v.get("deal").filter(|d| !d.is_null()).map(|d| Deal {
        hash: s(d, "deal_hash").to_owned(),
        offer_hash: s(d, "offer_hash").to_owned(),
        amount: int(d.get("amount")),
        provider: s(d, "provider_principal").to_owned(),
        confirmed: d.get("confirmed").and_then(Value::as_bool) == Some(true),
    });
    let mut hashes = vec![("job", s(v, "job_hash").to_owned())];
    if let Some(d) = &deal {
        hashes.push(("offer", d.offer_hash.clone()));
        hashes.push(("deal", d.hash.clone()));
    }
    for (label, k) in [("delivery", "delivery"), ("verification", "verification")] {
        let h = v.get(k).map(|x| s(x, "hash")).unwrap_or("");
        if !h.is_empty() {
            hashes.push((label, h.to_owned()));
        }
    }
    hashes.retain(|(_, h)| !h.is_empty());
    Some(Tx {
        job,
        events,
        offers,
        deal,
        hashes,
    })
}

/// Time left until `deadline_ms`, seen at `at_ms`.
fn time_left(job: &Job, at_ms: i64) -> String {
    if crate::market::is_terminal(&job.state) {
        return "ended".into();
    }
    let Some(d) = job.deadline_ms else {
        return "?".into();
    };
    let secs = (d - at_ms) / 1000;
    match secs {
        ..=0 => "due".into(),
        1..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        3600..86_400 => format!("{}h{:02}m", secs / 3600, secs / 60 % 60),
        _ => format!("{}d{:02}h", secs / 86_400, secs / 3600 % 24),
    }
}

/// A market refusal as one line: its code and message.
pub fn refusal(e: &MarketClientError) -> String {
    match e {
        MarketClientError::Rejected { code, message, .. } if message.starts_with(code.as_str()) => {
            message.clone()
        }
        MarketClientError::Rejected { code, message, .. } => format!("{code}: {message}"),
        other => other.to_string(),
    }
}

// ------------------------------------------------------------------ form

/// The open-job form: target, budget, deadline; checked as you type.
#[derive(Debug, Clone, PartialEq)]
pub struct JobForm {
    /// target (hex digits), budget (GTU), deadline (minutes from now).
    pub fields: [String; 3],
    pub row: usize,
    /// JOB_OPEN is on its way.
    pub posting: bool,
    /// The market's refusal of the last post.
    pub refused: Option<String>,
}

const FIELDS: [(&str, &str); 3] = [
    ("target", "hex digits the digest starts with"),
    ("budget", "GTU you pay at most"),
    ("deadline", "minutes from now"),
];

/// What a valid form asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct JobAsk {
    pub target: String,
    pub budget: i64,
    pub minutes: i64,
}

impl Default for JobForm {
    fn default() -> Self {
        JobForm {
            fields: ["0000".into(), "10".into(), "10".into()],
            row: 0,
            posting: false,
            refused: None,
        }
    }
}

impl JobForm {
    /// The job the form asks for, or what is wrong with it (every field).
    pub fn check(&self) -> Result<JobAsk, Vec<String>> {
        let mut bad = Vec::new();
        let t = self.fields[0].trim();
        if t.is_empty()
            || t.len() > MAX_TARGET_HEX
            || !t
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            bad.push(format!(
                "target: 1 to {MAX_TARGET_HEX} lowercase hex digits (0-9, a-f)"
            ));
        }
        let budget = self.fields[1]
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|b| *b >= 1);
        if budget.is_none() {
            bad.push("budget: a whole number of GTU, at least 1".into());
        }
        let minutes = self.fields[2]
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|m| (2..=10_080).contains(m));
        if minutes.is_none() {
            bad.push("deadline: whole minutes from now, 2 to 10080".into());
        }
        match (budget, minutes) {
            (Some(budget), Some(minutes)) if bad.is_empty() => Ok(JobAsk {
                target: t.to_owned(),
                budget,
                minutes,
            }),
            _ => Err(bad),
        }
    }

    fn edit(&mut self, c: Option<char>) {
        let f = &mut self.fields[self.row];
        match c {
            Some(c) if !c.is_control() && f.chars().count() < 16 => f.push(c),
            Some(_) => {}
            None => {
                f.pop();
            }
        }
        self.refused = None;
    }

    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let r = centered(area, 70, 10);
        f.render_widget(Clear, r);
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(true))
            .title(Span::styled(
                " Open a job (sha256_nonce.v1) ",
                theme.title(),
            ));
        let inner = b.inner(r);
        f.render_widget(b, r);
        let mut lines = Vec::new();
        for (i, (name, what)) in FIELDS.iter().enumerate() {
            let focused = i == self.row;
            let mut spans = vec![
                Span::styled(
                    format!("{}{name:<10}", if focused { "▸ " } else { "  " }),
                    theme.text(),
                ),
                Span::styled(
                    self.fields[i].clone(),
                    if focused {
                        theme.accent()
                    } else {
                        theme.text()
                    },
                ),
            ];
            if focused {
                spans.push(Span::styled(" ", theme.cursor()));
            }
            spans.push(Span::styled(format!("  {what}"), theme.muted()));
            lines.push(Line::from(spans));
        }
        lines.push(Line::from(""));
        let status = if self.posting {
            Line::from(Span::styled("posting JOB_OPEN…", theme.accent()))
        } else if let Some(r) = &self.refused {
            Line::from(Span::styled(format!("refused: {r}"), theme.fg("error")))
        } else {
            match self.check() {
                Ok(a) => Line::from(Span::styled(
                    format!(
                        "ready: {} GTU for a digest starting {} within {} min",
                        a.budget, a.target, a.minutes
                    ),
                    theme.fg("ok"),
                )),
                Err(e) => Line::from(Span::styled(e.join("; "), theme.fg("error"))),
            }
        };
        lines.push(status);
        lines.push(Line::from(Span::styled(
            "Tab field · type to edit · Enter post JOB_OPEN · Esc cancel",
            theme.muted(),
        )));
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
    }
}

// ------------------------------------------------------------------ view

#[derive(Default)]
pub struct MarketView {
    conn: Conn,
    client: Option<Arc<MarketClient>>,
    pub principal: String,
    pub balance: Option<i64>,
    /// When the shown data was read (local clock, ms).
    at_ms: i64,
    pub jobs: Vec<Job>,
    /// The selected transaction id.
    pub selected: Option<String>,
    /// The selected transaction's view.
    pub tx: Option<Tx>,
    pub offer_sel: usize,
    pub focus: Pane,
    pub form: Option<JobForm>,
    /// The last action's outcome (ok?, text).
    pub note: Option<(bool, String)>,
    /// Why the last refresh failed (cleared by the next good one).
    stale: Option<String>,
    /// Transactions where you offered (learned from their views).
    provider_of: HashMap<String, bool>,
    refreshing: bool,
    last_refresh: Option<Instant>,
    refresh_due: bool,
}

fn report(tx: &UnboundedSender<Action>, m: MarketMsg) {
    let _ = tx.send(Action::Market(Box::new(m)));
}

/// Reads the listing, the balance and one transaction's view.
async fn read_market(c: &MarketClient, selected: Option<String>) -> Result<Refresh, String> {
    let e = |e: MarketClientError| e.to_string();
    let jobs = c.market(true).await.map_err(e)?;
    let balance = c.balance().await.map_err(e)?;
    let id = selected
        .filter(|id| jobs.iter().any(|j| s(j, "transaction_id") == id))
        .or_else(|| jobs.first().map(|j| s(j, "transaction_id").to_owned()))
        .filter(|id| !id.is_empty());
    let view = match id {
        Some(id) => Some(c.transaction(&id).await.map_err(e)?),
        None => None,
    };
    Ok(Refresh {
        principal_id: c.principal_id().to_owned(),
        at_ms: system_ms(),
        jobs,
        balance,
        view,
    })
}

impl MarketView {
    pub fn connected(&self) -> bool {
        self.client.is_some()
    }

    fn say(&mut self, env: &Env<'_>, ok: bool, text: String) {
        let _ = env.tx.send(Action::Progress(format!("market: {text}")));
        self.note = Some((ok, text));
    }

    fn connect(&mut self, env: &Env<'_>) {
        let Some(c) = env.community else {
            self.conn = Conn::WaitingForCommunity;
            return;
        };
        self.conn = Conn::Connecting;
        let (url, dir, tx) = (c.url.clone(), env.data_dir.to_owned(), env.tx.clone());
        tokio::spawn(async move {
            let r = match crate::identity::KeyPair::load(&dir) {
                Ok(keys) => MarketClient::connect(&url, keys, None)
                    .await
                    .map(Shared::new)
                    .map_err(|e| format!("market token: {}", refusal(&e))),
                Err(e) => Err(format!("identity: {e}")),
            };
            report(&tx, MarketMsg::Connected(r));
        });
    }

    fn refresh(&mut self, env: &Env<'_>) {
        let Some(c) = self.client.clone() else {
            return;
        };
        self.refreshing = true;
        self.refresh_due = false;
        self.last_refresh = Some(Instant::now());
        let (sel, tx) = (self.selected.clone(), env.tx.clone());
        tokio::spawn(async move {
            let r = read_market(&c, sel).await.map(Box::new);
            report(&tx, MarketMsg::Refreshed(r));
        });
    }

    fn tick(&mut self, env: &Env<'_>) {
        let due = self.refresh_due || self.last_refresh.is_none_or(|t| t.elapsed() >= REFRESH);
        if self.client.is_some() && !self.refreshing && due {
            self.refresh(env);
        }
    }

    fn refreshed(&mut self, r: Refresh) {
        self.principal = r.principal_id;
        self.balance = Some(r.balance);
        self.at_ms = r.at_ms;
        self.jobs = r.jobs.iter().filter_map(parse_job).collect();
        if !self
            .selected
            .as_ref()
            .is_some_and(|id| self.jobs.iter().any(|j| &j.id == id))
        {
            self.selected = self.jobs.first().map(|j| j.id.clone());
            self.offer_sel = 0;
        }
        let tx = r.view.as_ref().and_then(parse_tx);
        match tx {
            Some(t) if Some(&t.job.id) == self.selected.as_ref() => {
                let me = &self.principal;
                let mine = t.offers.iter().any(|o| &o.provider == me)
                    || t.deal.as_ref().is_some_and(|d| &d.provider == me);
                self.provider_of.insert(t.job.id.clone(), mine);
                self.offer_sel = self.offer_sel.min(t.offers.len().saturating_sub(1));
                self.tx = Some(t);
            }
            // The selection moved while this was read: read again.
            _ => {
                if self.tx.as_ref().map(|t| &t.job.id) != self.selected.as_ref() {
                    self.tx = None;
                }
                self.refresh_due = self.selected.is_some();
            }
        }
    }

    fn select(&mut self, i: usize) {
        let Some(j) = self.jobs.get(i) else {
            return;
        };
        if self.selected.as_ref() != Some(&j.id) {
            self.selected = Some(j.id.clone());
            self.offer_sel = 0;
            self.refresh_due = true;
            if self.tx.as_ref().map(|t| &t.job.id) != self.selected.as_ref() {
                self.tx = None;
            }
        }
    }

    fn selected_index(&self) -> Option<usize> {
        let id = self.selected.as_ref()?;
        self.jobs.iter().position(|j| &j.id == id)
    }

    fn role(&self, j: &Job) -> &'static str {
        if !self.principal.is_empty() && j.buyer == self.principal {
            "buyer"
        } else if self.provider_of.get(&j.id) == Some(&true) {
            "provider"
        } else {
            "—"
        }
    }

    fn client_or_say(&mut self, env: &Env<'_>) -> Option<Arc<MarketClient>> {
        if self.client.is_none() {
            let why = match &self.conn {
                Conn::Failed(e) => format!("not connected to the market ({e})"),
                _ => "not connected to the market yet".into(),
            };
            self.say(env, false, why);
        }
        self.client.clone()
    }

    fn submit_form(&mut self, env: &Env<'_>) {
        let Some(form) = self.form.as_ref() else {
            return;
        };
        if form.posting {
            return;
        }
        let ask = match form.check() {
            Ok(a) => a,
            // The form shows what is wrong.
            Err(_) => return,
        };
        let Some(c) = self.client_or_say(env) else {
            return;
        };
        if let Some(f) = self.form.as_mut() {
            f.posting = true;
        }
        let tx = env.tx.clone();
        tokio::spawn(async move {
            let txid = format!("job_{}", crate::canonical::hex(&rand::random::<[u8; 6]>()));
            let prefix = format!("palaver|{txid}");
            let msg = messages::job_open(&JobRequest {
                transaction_id: &txid,
                prefix: &prefix,
                target: &ask.target,
                budget: ask.budget,
                deadline_ms: system_ms() + ask.minutes * 60_000,
                principal_id: c.principal_id(),
                agent_id: c.agent_id(),
            });
            let r = c.post(msg).await.map(|_| txid).map_err(|e| refusal(&e));
            report(&tx, MarketMsg::Opened(r));
        });
    }

    fn accept(&mut self, env: &Env<'_>) {
        let Some(t) = self.tx.as_ref() else {
            return self.say(env, false, "no transaction selected".into());
        };
        let Some(o) = t.offers.get(self.offer_sel) else {
            return self.say(env, false, format!("{} has no offers yet", t.job.id));
        };
        let (txid, offer) = (t.job.id.clone(), o.hash.clone());
        let Some(c) = self.client_or_say(env) else {
            return;
        };
        let tx = env.tx.clone();
        tokio::spawn(async move {
            let r = async {
                let view = c.transaction(&txid).await.map_err(|e| refusal(&e))?;
                let deal = messages::deal_for(&view, &offer)?;
                let v = c
                    .post(messages::deal_lock(&txid, deal))
                    .await
                    .map_err(|e| refusal(&e))?;
                Ok(format!(
                    "{txid}: deal locked on offer {} ({}); waiting for the provider's confirm",
                    short(&offer, 12),
                    s(&v, "state")
                ))
            }
            .await
            .map_err(|e: String| format!("accepting {txid} refused: {e}"));
            report(&tx, MarketMsg::Done(r));
        });
    }

    fn fund(&mut self, env: &Env<'_>) {
        let Some(t) = self.tx.as_ref() else {
            return self.say(env, false, "no transaction selected".into());
        };
        if t.deal.is_none() {
            let id = t.job.id.clone();
            return self.say(
                env,
                false,
                format!("{id} has no deal to fund: accept an offer first"),
            );
        }
        let txid = t.job.id.clone();
        let Some(c) = self.client_or_say(env) else {
            return;
        };
        let tx = env.tx.clone();
        tokio::spawn(async move {
            let r = async {
                // The amount and hash of the deal as the market has it now.
                let view = c.transaction(&txid).await.map_err(|e| refusal(&e))?;
                let deal = view
                    .get("deal")
                    .filter(|d| !d.is_null())
                    .ok_or_else(|| "no deal locked".to_owned())?;
                let amount = int(deal.get("amount"));
                let v = c
                    .post(messages::fund(&txid, s(deal, "deal_hash"), amount))
                    .await
                    .map_err(|e| refusal(&e))?;
                Ok(format!(
                    "{txid}: funded {amount} GTU ({}), balance {}",
                    s(&v, "state"),
                    v.get("balance").map(Value::py_str).unwrap_or_default()
                ))
            }
            .await
            .map_err(|e: String| format!("funding {txid} refused: {e}"));
            report(&tx, MarketMsg::Done(r));
        });
    }

    fn form_action(&mut self, a: Action, env: &Env<'_>) {
        let Some(form) = self.form.as_mut() else {
            return;
        };
        match a {
            Action::Back => self.form = None,
            Action::Submit | Action::Activate => self.submit_form(env),
            Action::FocusNext | Action::Down => form.row = (form.row + 1) % FIELDS.len(),
            Action::FocusPrev | Action::Up => {
                form.row = (form.row + FIELDS.len() - 1) % FIELDS.len()
            }
            Action::Input(k) => match k.code {
                KeyCode::Char(c) => form.edit(Some(c)),
                KeyCode::Backspace => form.edit(None),
                _ => {}
            },
            Action::Paste(p) => {
                for c in p.lines().next().unwrap_or("").chars() {
                    form.edit(Some(c));
                }
            }
            _ => {}
        }
    }

    fn message(&mut self, m: MarketMsg, env: &Env<'_>) {
        match m {
            MarketMsg::Connected(Ok(c)) => {
                self.principal = c.0.principal_id().to_owned();
                self.client = Some(c.0);
                self.conn = Conn::Ready;
                self.refresh_due = true;
            }
            MarketMsg::Connected(Err(e)) => self.conn = Conn::Failed(e),
            MarketMsg::Refreshed(r) => {
                self.refreshing = false;
                match r {
                    Ok(r) => {
                        self.stale = None;
                        self.refreshed(*r)
                    }
                    Err(e) => self.stale = Some(e),
                }
            }
            MarketMsg::Opened(Ok(txid)) => {
                self.form = None;
                self.selected = Some(txid.clone());
                self.tx = None;
                self.focus = Pane::Jobs;
                self.offer_sel = 0;
                self.refresh_due = true;
                self.say(env, true, format!("{txid}: JOB_OPEN posted"));
            }
            MarketMsg::Opened(Err(e)) => {
                if let Some(f) = self.form.as_mut() {
                    f.posting = false;
                    f.refused = Some(e.clone());
                }
                self.say(env, false, format!("JOB_OPEN refused: {e}"));
            }
            MarketMsg::Done(r) => {
                self.refresh_due = true;
                match r {
                    Ok(line) => self.say(env, true, line),
                    Err(e) => self.say(env, false, e),
                }
            }
        }
    }

    // ---------------------------------------------------------- drawing

    fn draw_jobs(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let theme = p.theme;
        let focused = self.focus == Pane::Jobs && self.form.is_none();
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(focused))
            .title(Span::styled(
                format!(" Jobs ({}) ", self.jobs.len()),
                theme.title(),
            ));
        if self.jobs.is_empty() {
            let (style, msg) = match &self.conn {
                Conn::WaitingForCommunity => {
                    (theme.muted(), "Waiting for the community…".to_owned())
                }
                Conn::Connecting => (theme.muted(), "Connecting to the market…".to_owned()),
                Conn::Failed(e) => (theme.fg("error"), format!("Market unavailable: {e}")),
                Conn::Ready => {
                    let k = p
                        .keymap
                        .key_for(Context::Market, &Action::OpenJob)
                        .unwrap_or_else(|| "open_job".into());
                    (
                        theme.muted(),
                        format!("No jobs on this market yet. Press {k} to open one."),
                    )
                }
            };
            f.render_widget(
                Paragraph::new(Span::styled(msg, style))
                    .wrap(Wrap { trim: true })
                    .block(b),
                area,
            );
            return;
        }
        let w = area.width.saturating_sub(2) as usize;
        let one_line = w >= 54;
        let idw = w.saturating_sub(2 + 38).clamp(8, 24);
        let sel = self.selected_index();
        let items: Vec<ListItem> = self
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| {
                let mark = if Some(i) == sel { "› " } else { "  " };
                let left = time_left(j, self.at_ms);
                let role = self.role(j);
                let state_style = state_style(theme, &j.state);
                if one_line {
                    ListItem::new(Line::from(vec![
                        Span::styled(format!("{mark}{:<idw$} ", short(&j.id, idw)), theme.text()),
                        Span::styled(format!("{:<11}", j.state), state_style),
                        Span::styled(
                            format!(" {:>5} GTU {left:>7} {role}", j.budget),
                            theme.text(),
                        ),
                    ]))
                } else {
                    ListItem::new(vec![
                        Line::from(vec![
                            Span::styled(
                                format!("{mark}{} ", short(&j.id, w.saturating_sub(14))),
                                theme.text(),
                            ),
                            Span::styled(j.state.clone(), state_style),
                        ]),
                        Line::from(Span::styled(
                            short(&format!("  {} GTU · {left} · {role}", j.budget), w),
                            theme.muted(),
                        )),
                    ])
                }
            })
            .collect();
        let mut st = ListState::default().with_selected(sel);
        f.render_stateful_widget(
            List::new(items).block(b).highlight_style(if focused {
                theme.selected()
            } else {
                Style::new().add_modifier(Modifier::BOLD)
            }),
            area,
            &mut st,
        );
    }

    fn draw_header(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let theme = p.theme;
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(false))
            .title(Span::styled(" Market ", theme.title()));
        let who = match (&self.conn, self.principal.is_empty()) {
            (Conn::Failed(e), true) => {
                Line::from(Span::styled(format!("unavailable: {e}"), theme.fg("error")))
            }
            (_, true) => Line::from(Span::styled("not connected yet", theme.muted())),
            (_, false) => Line::from(vec![
                Span::styled("you ", theme.muted()),
                Span::styled(self.principal.clone(), theme.accent()),
                Span::styled(" · balance ", theme.muted()),
                Span::styled(
                    self.balance
                        .map_or_else(|| "…".to_owned(), |b| format!("{b} GTU")),
                    theme.text(),
                ),
            ]),
        };
        let note = match (&self.stale, &self.note) {
            (Some(e), _) => Line::from(Span::styled(
                format!("cannot read the market: {e}"),
                theme.fg("error"),
            )),
            (None, note) => match note {
                Some((true, t)) => Line::from(Span::styled(t.clone(), theme.fg("ok"))),
                Some((false, t)) => Line::from(Span::styled(t.clone(), theme.fg("error"))),
                None => Line::from(""),
            },
        };
        f.render_widget(
            Paragraph::new(vec![who, note])
                .wrap(Wrap { trim: true })
                .block(b),
            area,
        );
    }

    fn draw_timeline(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let theme = p.theme;
        let title = match &self.tx {
            Some(t) => format!(" {} · {} ", t.job.id, t.job.state),
            None => " Transaction ".to_owned(),
        };
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(false))
            .title(Span::styled(title, theme.title()));
        let inner = b.inner(area);
        f.render_widget(b, area);
        let w = inner.width as usize;
        let Some(t) = &self.tx else {
            let msg = match &self.selected {
                Some(id) => format!("reading {id}…"),
                None => "No transaction selected.".to_owned(),
            };
            f.render_widget(Paragraph::new(Span::styled(msg, theme.muted())), inner);
            return;
        };
        let mut head = vec![Line::from(Span::styled(
            short(
                &format!(
                    "{} GTU · target {} · buyer {} · {}",
                    t.job.budget,
                    t.job.target,
                    if t.job.buyer == self.principal {
                        "you"
                    } else {
                        &t.job.buyer
                    },
                    match time_left(&t.job, self.at_ms).as_str() {
                        "ended" => "ended".to_owned(),
                        l => format!("{l} left"),
                    }
                ),
                w,
            ),
            theme.muted(),
        ))];
        // The hashes, packed into lines.
        let mut line: Vec<Span> = Vec::new();
        let mut used = 0;
        let hw = if w >= 100 { 16 } else { 10 };
        for (label, h) in &t.hashes {
            let len = label.chars().count() + 1 + hw + 2;
            if used > 0 && used + len > w {
                head.push(Line::from(std::mem::take(&mut line)));
                used = 0;
            }
            line.push(Span::styled(format!("{label} "), theme.muted()));
            line.push(Span::styled(format!("{}  ", short(h, hw)), theme.accent()));
            used += len;
        }
        if !line.is_empty() {
            head.push(Line::from(line));
        }
        let ew = w.saturating_sub(8 + 1 + 13 + 1 + 11 + 1).clamp(6, 16);
        let events: Vec<Line> = t
            .events
            .iter()
            .map(|e| {
                let at = format_rfc3339_utc(e.at_ms);
                Line::from(vec![
                    Span::styled(format!("{} ", at.get(11..19).unwrap_or("")), theme.muted()),
                    Span::styled(format!("{:<13} ", e.kind), theme.text()),
                    Span::styled(
                        format!("{:<11} ", e.state_after),
                        state_style(theme, &e.state_after),
                    ),
                    Span::styled(short(&e.hash, ew), theme.accent()),
                ])
            })
            .collect();
        // The newest events stay in view when the chain is long.
        let room = (inner.height as usize).saturating_sub(head.len());
        let skip = events.len().saturating_sub(room);
        let mut lines = head;
        lines.extend(events.into_iter().skip(skip));
        f.render_widget(Paragraph::new(lines), inner);
    }

    fn draw_offers(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let theme = p.theme;
        let focused = self.focus == Pane::Offers && self.form.is_none();
        let offers = self.tx.as_ref().map(|t| t.offers.as_slice()).unwrap_or(&[]);
        let b = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(focused))
            .title(Span::styled(
                format!(" Offers ({}) ", offers.len()),
                theme.title(),
            ));
        if offers.is_empty() {
            let msg = if self.tx.is_some() {
                "No offers yet: providers offer within their price."
            } else {
                ""
            };
            f.render_widget(
                Paragraph::new(Span::styled(msg, theme.muted())).block(b),
                area,
            );
            return;
        }
        let w = area.width.saturating_sub(2) as usize;
        let (hw, pw) = if w >= 70 { (16, 16) } else { (6, 8) };
        let accepted = self
            .tx
            .as_ref()
            .and_then(|t| t.deal.as_ref())
            .map(|d| d.offer_hash.as_str());
        let items: Vec<ListItem> = offers
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let mark = if i == self.offer_sel { "› " } else { "  " };
                let status = if accepted == Some(o.hash.as_str()) && o.status == "live" {
                    "locked"
                } else {
                    o.status.as_str()
                };
                ListItem::new(Line::from(Span::styled(
                    short(
                        &format!(
                            "{mark}{:>5} GTU  {status:<10}  {:<pw$}  {}",
                            o.price,
                            short(&o.provider, pw),
                            short(&o.hash, hw)
                        ),
                        w,
                    ),
                    theme.text(),
                )))
            })
            .collect();
        let mut st = ListState::default().with_selected(Some(self.offer_sel));
        f.render_stateful_widget(
            List::new(items).block(b).highlight_style(if focused {
                theme.selected()
            } else {
                Style::new().add_modifier(Modifier::BOLD)
            }),
            area,
            &mut st,
        );
    }
}

/// Lines `text` takes when word-wrapped to `width` columns.
fn wrapped_lines(text: &str, width: usize) -> usize {
    let (mut lines, mut used) = (1, 0);
    for w in text.split_whitespace() {
        let n = w.chars().count();
        if used > 0 && used + 1 + n > width {
            lines += 1 + (n.saturating_sub(1)) / width.max(1);
            used = n % width.max(1);
        } else {
            used += n + usize::from(used > 0);
        }
    }
    lines
}

fn state_style(theme: &Theme, state: &str) -> Style {
    match state {
        "SETTLED" | "VERIFIED" => theme.fg("ok"),
        "REJECTED" | "REFUNDED" | "CLOSED" => theme.fg("error"),
        "FUNDED" | "DELIVERED" | "DEAL_LOCKED" => theme.fg("warn"),
        _ => theme.accent(),
    }
}

impl Screen for MarketView {
    fn title(&self) -> &'static str {
        "Market"
    }

    fn context(&self) -> Context {
        if self.form.is_some() {
            Context::Text
        } else {
            Context::Market
        }
    }

    fn update(&mut self, a: Action, env: &Env<'_>) {
        if let Action::Market(m) = a {
            return self.message(*m, env);
        }
        if let Action::Tick = a {
            return self.tick(env);
        }
        if self.form.is_some() {
            return self.form_action(a, env);
        }
        match a {
            Action::Up | Action::Down | Action::PageUp | Action::PageDown => {
                let page = usize::from(env.size.1 / 3).max(1);
                let step = |i: usize, n: usize, len: usize, down: bool| {
                    if down {
                        (i + n).min(len.saturating_sub(1))
                    } else {
                        i.saturating_sub(n)
                    }
                };
                let (n, down) = match a {
                    Action::Up => (1, false),
                    Action::Down => (1, true),
                    Action::PageUp => (page, false),
                    _ => (page, true),
                };
                match self.focus {
                    Pane::Jobs => {
                        let i = self.selected_index().unwrap_or(0);
                        self.select(step(i, n, self.jobs.len(), down));
                    }
                    Pane::Offers => {
                        let len = self.tx.as_ref().map_or(0, |t| t.offers.len());
                        self.offer_sel = step(self.offer_sel, n, len, down);
                    }
                }
            }
            Action::FocusNext | Action::FocusPrev => {
                self.focus = match self.focus {
                    Pane::Jobs => Pane::Offers,
                    Pane::Offers => Pane::Jobs,
                }
            }
            Action::Activate if self.focus == Pane::Jobs => self.focus = Pane::Offers,
            Action::Back => self.focus = Pane::Jobs,
            Action::OpenJob => {
                self.form = Some(JobForm::default());
            }
            Action::AcceptOffer => self.accept(env),
            Action::Fund => self.fund(env),
            Action::Refresh => {
                if matches!(self.conn, Conn::Failed(_)) {
                    self.connect(env);
                } else {
                    self.refresh_due = true;
                    self.tick(env);
                }
            }
            _ => {}
        }
    }

    fn draw(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        let left_w = if area.width >= 120 {
            62
        } else {
            (area.width * 9 / 20).max(24)
        };
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([
                Constraint::Length(left_w.min(area.width / 2)),
                Constraint::Min(20),
            ])
            .split(area);
        self.draw_jobs(f, cols[0], p);
        let offers_h = self.tx.as_ref().map_or(1, |t| t.offers.len().clamp(1, 6)) as u16 + 2;
        // The header grows with a long note (a refusal with its fields).
        let inner_w = usize::from(cols[1].width.saturating_sub(2)).max(1);
        let note_lines = match (&self.stale, &self.note) {
            (Some(e), _) => wrapped_lines(&format!("cannot read the market: {e}"), inner_w),
            (None, Some((_, t))) => wrapped_lines(t, inner_w),
            (None, None) => 1,
        }
        .clamp(1, 4);
        let right = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(3 + note_lines as u16),
                Constraint::Min(5),
                Constraint::Length(offers_h),
            ])
            .split(cols[1]);
        self.draw_header(f, right[0], p);
        self.draw_timeline(f, right[1], p);
        self.draw_offers(f, right[2], p);
        if let Some(form) = &self.form {
            form.draw(f, area, p.theme);
        }
    }

    fn hints(&self) -> Vec<Action> {
        if self.form.is_some() {
            return vec![Action::Submit, Action::FocusNext, Action::Back];
        }
        vec![
            Action::OpenJob,
            Action::AcceptOffer,
            Action::Fund,
            Action::FocusNext,
            Action::Refresh,
            Action::ViewSessions,
            Action::Help,
            Action::Quit,
        ]
    }

    fn community_ready(&mut self, env: &Env<'_>) {
        self.connect(env);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_checks_every_field() {
        let mut f = JobForm::default();
        assert!(f.check().is_ok());
        f.fields = ["00zz".into(), "0".into(), "1".into()];
        let e = f.check().unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
        f.fields = ["0".repeat(MAX_TARGET_HEX + 1), "5".into(), "10081".into()];
        assert_eq!(f.check().unwrap_err().len(), 2);
        f.fields = ["0a".into(), " 7 ".into(), "2".into()];
        assert_eq!(
            f.check(),
            Ok(JobAsk {
                target: "0a".into(),
                budget: 7,
                minutes: 2
            })
        );
        // Typing never panics, whatever it is.
        for c in ['é', '\u{7}', '界', 'x'] {
            f.edit(Some(c));
        }
        for _ in 0..40 {
            f.edit(None);
        }
        assert!(f.fields[0].is_empty());
    }

    #[test]
    fn wrapping_counts_words_that_do_not_fit() {
        assert_eq!(wrapped_lines("", 10), 1);
        assert_eq!(wrapped_lines("abc def", 7), 1);
        assert_eq!(wrapped_lines("abc defg", 7), 2);
        assert_eq!(wrapped_lines("a bbbbbbbbbbbbbbbbbbbb", 10), 3);
        assert_eq!(wrapped_lines("a b", 0), 2);
    }

    #[test]
    fn time_left_reads_like_a_clock() {
        let j = |state: &str| Job {
            id: "t".into(),
            state: state.into(),
            budget: 1,
            deadline_ms: Some(1_000_000_000),
            buyer: String::new(),
            target: "00".into(),
        };
        let at = |secs: i64| 1_000_000_000 - secs * 1000;
        assert_eq!(time_left(&j("JOB_OPEN"), at(45)), "45s");
        assert_eq!(time_left(&j("JOB_OPEN"), at(545)), "9m05s");
        assert_eq!(time_left(&j("FUNDED"), at(7_260)), "2h01m");
        assert_eq!(time_left(&j("FUNDED"), at(90_000)), "1d01h");
        assert_eq!(time_left(&j("FUNDED"), at(-5)), "due");
        assert_eq!(time_left(&j("SETTLED"), at(45)), "ended");
    }

    #[test]
    fn views_without_the_expected_fields_parse_to_nothing_or_defaults() {
        assert_eq!(parse_tx(&Value::Null), None);
        let v = Value::Object(
            crate::obj! { "transaction_id" => "t1", "offers" => 3, "deal" => Value::Null },
        );
        let t = parse_tx(&v).unwrap();
        assert!(t.offers.is_empty() && t.deal.is_none() && t.hashes.is_empty());
    }
}
