//! The market screen (F4): GTL jobs with budget, deadline and state; the
//! selected transaction's timeline (each event with its hash) and offers;
//! your principal and balance. Open a job from a form, accept an offer,
//! fund the deal, and watch a provider solve it and the verifier settle.
//!
//! Everything slow is a [`MarketTask`] whose outcome comes back as a
//! [`MarketReport`]: connecting (the market token), refreshing (about
//! once a second, on ticks) and each message posted.

pub mod form;
pub mod model;
mod view;

use crate::market::MarketClient;
use crate::tui::command::Command;
use crate::tui::effect::{Effect, Effects, MarketTask, Task};
use crate::tui::keymap::Context;
use crate::tui::msg::Msg;
use crate::tui::note::Note;
use crate::tui::report::Report;
use crate::tui::report::market::{MarketReport, Refresh};
use crate::tui::screen::{Env, Paint, Screen};
use crossterm::event::KeyCode;
use form::{FIELDS, JobForm};
use model::{Job, Tx, parse_job, parse_tx};
use ratatui::Frame;
use ratatui::layout::Rect;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the listing, the balance and the selected transaction are
/// read again.
pub const REFRESH: Duration = Duration::from_secs(1);

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
    pub note: Option<Note>,
    /// Why the last refresh failed (cleared by the next good one).
    stale: Option<String>,
    /// Transactions where you offered (learned from their views).
    provider_of: HashMap<String, bool>,
    refreshing: bool,
    last_refresh: Option<Instant>,
    refresh_due: bool,
}

impl MarketView {
    pub fn connected(&self) -> bool {
        self.client.is_some()
    }

    /// Notes `text` here and in the status bar.
    fn say(&mut self, fx: &mut Effects, ok: bool, text: String) {
        fx.push(Effect::Task(Task::Progress(format!("market: {text}"))));
        self.note = Some(Note::new(ok, text));
    }

    fn connect(&mut self, env: &Env<'_>, fx: &mut Effects) {
        let Some(c) = env.community else {
            self.conn = Conn::WaitingForCommunity;
            return;
        };
        self.conn = Conn::Connecting;
        fx.push(
            MarketTask::Connect {
                url: c.url.clone(),
                data_dir: env.data_dir.to_owned(),
            }
            .into(),
        );
    }

    fn refresh(&mut self, fx: &mut Effects) {
        let Some(c) = self.client.clone() else {
            return;
        };
        self.refreshing = true;
        self.refresh_due = false;
        self.last_refresh = Some(Instant::now());
        fx.push(
            MarketTask::Refresh {
                client: c,
                selected: self.selected.clone(),
            }
            .into(),
        );
    }

    fn tick(&mut self, fx: &mut Effects) {
        let due = self.refresh_due || self.last_refresh.is_none_or(|t| t.elapsed() >= REFRESH);
        if self.client.is_some() && !self.refreshing && due {
            self.refresh(fx);
        }
    }

    fn refreshed(&mut self, r: Refresh) {
        self.principal = r.principal_id;
        self.balance = Some(r.balance);
        self.at_ms = r.at_ms;
        self.jobs = r.jobs.iter().map(parse_job).collect();
        if !self
            .selected
            .as_ref()
            .is_some_and(|id| self.jobs.iter().any(|j| &j.id == id))
        {
            self.selected = self.jobs.first().map(|j| j.id.clone());
            self.offer_sel = 0;
        }
        let tx = r.view.as_ref().map(parse_tx);
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

    fn client_or_say(&mut self, fx: &mut Effects) -> Option<Arc<MarketClient>> {
        if self.client.is_none() {
            let why = match &self.conn {
                Conn::Failed(e) => format!("not connected to the market ({e})"),
                _ => "not connected to the market yet".into(),
            };
            self.say(fx, false, why);
        }
        self.client.clone()
    }

    fn submit_form(&mut self, fx: &mut Effects) {
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
        let Some(c) = self.client_or_say(fx) else {
            return;
        };
        if let Some(f) = self.form.as_mut() {
            f.posting = true;
        }
        fx.push(
            MarketTask::Open {
                client: c,
                target: ask.target,
                budget: ask.budget,
                minutes: ask.minutes,
            }
            .into(),
        );
    }

    fn accept(&mut self, fx: &mut Effects) {
        let Some(t) = self.tx.as_ref() else {
            return self.say(fx, false, "no transaction selected".into());
        };
        let Some(o) = t.offers.get(self.offer_sel) else {
            let why = format!("{} has no offers yet", t.job.id);
            return self.say(fx, false, why);
        };
        let (txid, offer) = (t.job.id.clone(), o.hash.clone());
        let Some(client) = self.client_or_say(fx) else {
            return;
        };
        fx.push(
            MarketTask::Accept {
                client,
                txid,
                offer,
            }
            .into(),
        );
    }

    fn fund(&mut self, fx: &mut Effects) {
        let Some(t) = self.tx.as_ref() else {
            return self.say(fx, false, "no transaction selected".into());
        };
        if t.deal.is_none() {
            let id = t.job.id.clone();
            return self.say(
                fx,
                false,
                format!("{id} has no deal to fund: accept an offer first"),
            );
        }
        let txid = t.job.id.clone();
        let Some(client) = self.client_or_say(fx) else {
            return;
        };
        fx.push(MarketTask::Fund { client, txid }.into());
    }

    fn form_msg(&mut self, m: Msg, fx: &mut Effects) {
        let Some(form) = self.form.as_mut() else {
            return;
        };
        match m {
            Msg::Command(Command::Back) => self.form = None,
            Msg::Command(Command::Submit | Command::Activate) => self.submit_form(fx),
            Msg::Command(Command::FocusNext | Command::Down) => {
                form.row = (form.row + 1) % FIELDS.len()
            }
            Msg::Command(Command::FocusPrev | Command::Up) => {
                form.row = (form.row + FIELDS.len() - 1) % FIELDS.len()
            }
            Msg::Input(k) => match k.code {
                KeyCode::Char(c) => form.edit(Some(c)),
                KeyCode::Backspace => form.edit(None),
                _ => {}
            },
            Msg::Paste(p) => {
                for c in p.lines().next().unwrap_or("").chars() {
                    form.edit(Some(c));
                }
            }
            _ => {}
        }
    }

    fn report(&mut self, m: MarketReport, fx: &mut Effects) {
        match m {
            MarketReport::Connected(Ok(c)) => {
                self.principal = c.principal_id().to_owned();
                self.client = Some(c);
                self.conn = Conn::Ready;
                self.refresh_due = true;
            }
            MarketReport::Connected(Err(e)) => self.conn = Conn::Failed(e),
            MarketReport::Refreshed(r) => {
                self.refreshing = false;
                match r {
                    Ok(r) => {
                        self.stale = None;
                        self.refreshed(*r)
                    }
                    Err(e) => self.stale = Some(e),
                }
            }
            MarketReport::Opened(Ok(txid)) => {
                self.form = None;
                self.selected = Some(txid.clone());
                self.tx = None;
                self.focus = Pane::Jobs;
                self.offer_sel = 0;
                self.refresh_due = true;
                self.say(fx, true, format!("{txid}: JOB_OPEN posted"));
            }
            MarketReport::Opened(Err(e)) => {
                if let Some(f) = self.form.as_mut() {
                    f.posting = false;
                    f.refused = Some(e.clone());
                }
                self.say(fx, false, format!("JOB_OPEN refused: {e}"));
            }
            MarketReport::Done(r) => {
                self.refresh_due = true;
                match r {
                    Ok(line) => self.say(fx, true, line),
                    Err(e) => self.say(fx, false, e),
                }
            }
        }
    }

    /// Moves the selection of the focused pane.
    fn scroll(&mut self, c: Command, env: &Env<'_>) {
        let page = usize::from(env.size.1 / 3).max(1);
        let step = |i: usize, n: usize, len: usize, down: bool| {
            if down {
                (i + n).min(len.saturating_sub(1))
            } else {
                i.saturating_sub(n)
            }
        };
        let (n, down) = match c {
            Command::Up => (1, false),
            Command::Down => (1, true),
            Command::PageUp => (page, false),
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

    fn update(&mut self, m: Msg, env: &Env<'_>) -> Effects {
        let mut fx = Effects::new();
        match m {
            Msg::Report(Report::Market(r)) => self.report(*r, &mut fx),
            Msg::Tick => self.tick(&mut fx),
            m if self.form.is_some() => self.form_msg(m, &mut fx),
            Msg::Command(c) => match c {
                Command::Up | Command::Down | Command::PageUp | Command::PageDown => {
                    self.scroll(c, env)
                }
                Command::FocusNext | Command::FocusPrev => {
                    self.focus = match self.focus {
                        Pane::Jobs => Pane::Offers,
                        Pane::Offers => Pane::Jobs,
                    }
                }
                Command::Activate if self.focus == Pane::Jobs => self.focus = Pane::Offers,
                Command::Back => self.focus = Pane::Jobs,
                Command::OpenJob => {
                    self.form = Some(JobForm::default());
                }
                Command::AcceptOffer => self.accept(&mut fx),
                Command::Fund => self.fund(&mut fx),
                Command::Refresh => {
                    if matches!(self.conn, Conn::Failed(_)) {
                        self.connect(env, &mut fx);
                    } else {
                        self.refresh_due = true;
                        self.tick(&mut fx);
                    }
                }
                _ => {}
            },
            _ => {}
        }
        fx
    }

    fn draw(&self, f: &mut Frame, area: Rect, p: &Paint<'_>) {
        self.draw_body(f, area, p);
    }

    fn hints(&self) -> Vec<Command> {
        if self.form.is_some() {
            return vec![Command::Submit, Command::FocusNext, Command::Back];
        }
        vec![
            Command::OpenJob,
            Command::AcceptOffer,
            Command::Fund,
            Command::FocusNext,
            Command::Refresh,
            Command::ViewSessions,
            Command::Help,
            Command::Quit,
        ]
    }

    fn community_ready(&mut self, env: &Env<'_>) -> Effects {
        let mut fx = Effects::new();
        self.connect(env, &mut fx);
        fx
    }
}
