//! The sessions screen's ties to the community's social side: "message
//! this agent" (the selected invitation's host, the selected or attached
//! session's peer), the hosts' ELO and karma beside their rating (asked a
//! few at a time, kept a few minutes per key), and the host form's
//! protocol picker.

use super::{Focus, Modal, SessionsView, say};
use crate::json::Value;
use crate::tui::command::Command;
use crate::tui::effect::{Effect, Effects, SessionTask};
use crate::tui::msg::Msg;
use crate::tui::panes::dialogs::{HostForm, edit_line};
use crate::tui::panes::lists;
use crate::tui::panes::picker::Picker;
use crate::tui::report::social::{PickerReport, Reputation};
use crate::tui::screen::Env;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// How long a host's ELO and karma are reused.
pub const REPUTATION_TTL: Duration = Duration::from_secs(300);
/// Hosts asked per refresh of the invitations (every 2 s): three requests
/// each, so with the list and the hosts' stats a refresh stays well under
/// a community's per-key rate limit (20 a second); a long list fills in
/// over a few refreshes.
const REPUTATION_PER_REFRESH: usize = 2;
/// Hosts remembered at most.
const REPUTATION_KEYS: usize = 1024;

/// Hosts' ELO and karma as last told, and the hosts being asked.
#[derive(Debug, Default)]
pub struct ReputationCache {
    known: HashMap<String, (Instant, Reputation)>,
    asking: BTreeSet<String>,
}

impl ReputationCache {
    pub fn get(&self, key: &str) -> Option<Reputation> {
        self.known.get(key).map(|(_, r)| *r)
    }

    /// Whether `key` is being asked now.
    pub fn asking(&self, key: &str) -> bool {
        self.asking.contains(key)
    }

    /// Keys of `hosts` to ask now (never asked, or longer ago than the
    /// TTL), marked as being asked.
    fn due(&mut self, hosts: impl Iterator<Item = String>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for k in hosts {
            let fresh = self
                .known
                .get(&k)
                .is_some_and(|(at, _)| at.elapsed() < REPUTATION_TTL);
            if fresh || self.asking.contains(&k) || out.contains(&k) {
                continue;
            }
            out.push(k);
            if out.len() >= REPUTATION_PER_REFRESH {
                break;
            }
        }
        self.asking.extend(out.iter().cloned());
        out
    }

    fn told(&mut self, l: Vec<(String, Reputation)>) {
        let now = Instant::now();
        for (k, r) in l {
            self.asking.remove(&k);
            if self.known.len() >= REPUTATION_KEYS && !self.known.contains_key(&k) {
                // Forget the oldest.
                if let Some(old) = self
                    .known
                    .iter()
                    .min_by_key(|(_, (at, _))| *at)
                    .map(|(k, _)| k.clone())
                {
                    self.known.remove(&old);
                }
            }
            self.known.insert(k, (now, r));
        }
    }
}

impl SessionsView {
    /// After the invitations arrived: the reputations known shown, the
    /// missing ones asked.
    pub(super) fn ask_reputation(&mut self, env: &Env<'_>, fx: &mut Effects) {
        self.show_reputation();
        let Some(c) = env.community else {
            return;
        };
        let hosts = self
            .invitations
            .iter()
            .filter(|i| !i.public_key.is_empty() && i.public_key != env.me)
            // Stats that carry the figures need no request of their own.
            .filter(|i| i.host.as_ref().is_none_or(|h| h.reputation.is_none()))
            .map(|i| i.public_key.clone());
        let keys = self.reputation.due(hosts);
        if !keys.is_empty() {
            fx.push(
                SessionTask::Reputation {
                    client: c.client.clone(),
                    keys,
                }
                .into(),
            );
        }
    }

    pub(super) fn reputation_told(&mut self, l: Vec<(String, Reputation)>) {
        self.reputation.told(l);
        self.show_reputation();
    }

    fn show_reputation(&mut self) {
        for i in &mut self.invitations {
            i.reputation = i
                .host
                .as_ref()
                .and_then(|h| h.reputation)
                .or_else(|| self.reputation.get(&i.public_key));
        }
    }

    /// "Message this agent": the selected invitation's host, the selected
    /// session's peer, or the attached session's.
    pub(super) fn message_agent(&mut self, env: &Env<'_>, fx: &mut Effects) {
        let target = match self.focus {
            Focus::Invitations => match self.selected_invitation() {
                Some(i) => Some((i.public_key, i.nickname)),
                None => return say(fx, false, "no invitation selected"),
            },
            Focus::Sessions => lists::filter_sessions(&self.rows, &self.ses_cur.query)
                .get(self.ses_cur.selected)
                .map(|s| (s.peer.clone(), String::new())),
            Focus::Feed | Focus::Prompt => self.attached.as_ref().map(|a| {
                let peer = a
                    .session
                    .get("peer_public_key")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                (peer, String::new())
            }),
        };
        let Some((key, nick)) = target.filter(|(k, _)| !k.is_empty()) else {
            return say(fx, false, "this session has no peer to write to (yet)");
        };
        if key == env.me {
            return say(fx, false, "that is you");
        }
        let nickname = if nick.is_empty() {
            self.nicks.get(&key).cloned().unwrap_or_default()
        } else {
            nick
        };
        fx.push(Effect::MessageAgent { key, nickname });
    }

    /// The host form's picker opens over it, listing the directory.
    pub(super) fn open_picker(&mut self, form: HostForm, env: &Env<'_>, fx: &mut Effects) {
        let mut p = Picker::default();
        self.search(&mut p, env, None, fx);
        self.modal = Some(Modal::Pick(Box::new(form), Box::new(p)));
    }

    fn search(&self, p: &mut Picker, env: &Env<'_>, cursor: Option<String>, fx: &mut Effects) {
        let Some(c) = env.community else {
            p.error = Some("the community is not reachable yet".into());
            return;
        };
        p.searching = true;
        p.error = None;
        fx.push(
            SessionTask::Discover {
                client: c.client.clone(),
                data_dir: env.data_dir.to_owned(),
                query: p.query.trim().to_owned(),
                cursor,
            }
            .into(),
        );
    }

    /// Keys while the picker is open; what stays open.
    pub(super) fn picker_msg(
        &mut self,
        form: Box<HostForm>,
        mut p: Box<Picker>,
        m: Msg,
        env: &Env<'_>,
        fx: &mut Effects,
    ) -> Option<Modal> {
        match m {
            Msg::Command(Command::Back) => return Some(Modal::Host(*form)),
            Msg::Command(Command::Up) => p.up(1),
            Msg::Command(Command::Down) => p.down(1),
            Msg::Command(Command::PageUp) => p.up(10),
            Msg::Command(Command::PageDown) => p.down(10),
            Msg::Command(Command::NextPage) => match p.next_cursor.clone() {
                Some(c) if !p.searching => self.search(&mut p, env, Some(c), fx),
                Some(_) => {}
                None => p.error = Some("that was the directory's last page".into()),
            },
            Msg::Command(Command::Submit) if p.installing.is_none() => {
                if p.wants_search() || p.picks.is_empty() {
                    self.search(&mut p, env, None, fx);
                } else if let Some(pick) = p.selected().cloned() {
                    return self.take(form, p, pick, env, fx);
                }
            }
            Msg::Input(k) => edit_line(&mut p.query, &k),
            Msg::Paste(s) => p.query.push_str(s.lines().next().unwrap_or("")),
            _ => {}
        }
        Some(Modal::Pick(form, p))
    }

    /// Takes a protocol: one the form lists already is selected at once;
    /// any other is made ready (fetched and installed when not here).
    fn take(
        &mut self,
        mut form: Box<HostForm>,
        mut p: Box<Picker>,
        pick: crate::tui::report::social::Pick,
        env: &Env<'_>,
        fx: &mut Effects,
    ) -> Option<Modal> {
        if let Some(alias) = &pick.local
            && form.select_protocol(alias, None)
        {
            form.picked = Some(format!("{alias}: picked from the community's directory"));
            return Some(Modal::Host(*form));
        }
        let Some(c) = env.community else {
            p.error = Some("the community is not reachable yet".into());
            return Some(Modal::Pick(form, p));
        };
        p.installing = Some(pick.listed.protocol_id.clone());
        p.error = None;
        fx.push(
            SessionTask::Install {
                client: c.client.clone(),
                data_dir: env.data_dir.to_owned(),
                protocol_id: pick.listed.protocol_id,
            }
            .into(),
        );
        Some(Modal::Pick(form, p))
    }

    pub(super) fn picker_report(&mut self, r: PickerReport, fx: &mut Effects) {
        let Some(Modal::Pick(form, mut p)) = self.modal.take() else {
            return;
        };
        match r {
            PickerReport::Found { query, more, found } => {
                p.found(query, more, found);
                self.modal = Some(Modal::Pick(form, p));
            }
            PickerReport::Installed(Err((id, e))) => {
                if p.installing.as_deref() == Some(id.as_str()) {
                    p.installing = None;
                    p.error = Some(format!("not installed: {e}"));
                }
                self.modal = Some(Modal::Pick(form, p));
            }
            PickerReport::Installed(Ok(ready)) => {
                if p.installing.as_deref() != Some(ready.protocol_id.as_str()) {
                    self.modal = Some(Modal::Pick(form, p));
                    return;
                }
                let mut form = form;
                let alias = ready.alias.clone();
                form.select_protocol(&alias, Some(*ready.spec));
                form.picked = Some(ready.how.clone());
                say(fx, true, ready.how);
                self.modal = Some(Modal::Host(*form));
            }
        }
    }
}
