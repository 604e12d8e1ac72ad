//! The live feed of the focused session. Memory stays flat however long the
//! session: at most [`WINDOW`] rows are held, the newest while following,
//! or a page around the scroll position loaded from events.jsonl on demand.

use crate::tui::report::feed::{FeedRow, RowKind};
use crate::tui::theme::{Slot, Theme};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use std::collections::VecDeque;

/// Rows held in memory at most.
pub const WINDOW: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    All,
    Protocol,
    Lifecycle,
}

impl Filter {
    pub fn next(self) -> Filter {
        match self {
            Filter::All => Filter::Protocol,
            Filter::Protocol => Filter::Lifecycle,
            Filter::Lifecycle => Filter::All,
        }
    }
    fn label(self) -> &'static str {
        match self {
            Filter::All => "all",
            Filter::Protocol => "protocol",
            Filter::Lifecycle => "lifecycle",
        }
    }
    fn shows(self, k: RowKind) -> bool {
        match self {
            Filter::All => true,
            Filter::Protocol => matches!(k, RowKind::Sent | RowKind::Received | RowKind::Noise),
            Filter::Lifecycle => matches!(k, RowKind::Lifecycle | RowKind::Noise),
        }
    }
}

/// What the feed pane shows and where it is scrolled.
#[derive(Debug, Clone)]
pub struct Feed {
    /// Events in the file so far.
    pub total: usize,
    /// Index of `rows[0]`.
    pub start: usize,
    pub rows: VecDeque<FeedRow>,
    /// Index of the bottom row shown; `None` follows the newest.
    pub anchor: Option<usize>,
    pub filter: Filter,
    pub fold: bool,
    pub raw: bool,
    pub search: Option<String>,
    /// Matches of `search` (event indices, oldest first).
    pub matches: Vec<usize>,
    /// A page load is in flight (start index asked for).
    pub loading: Option<usize>,
}

impl Default for Feed {
    fn default() -> Self {
        Feed {
            total: 0,
            start: 0,
            rows: VecDeque::new(),
            anchor: None,
            filter: Filter::All,
            fold: true,
            raw: false,
            search: None,
            matches: Vec::new(),
            loading: None,
        }
    }
}

impl Feed {
    fn end(&self) -> usize {
        self.start + self.rows.len()
    }

    /// New events at the end of the file: `rows` are events `first..`; the
    /// watcher may skip older ones on a large first read.
    pub fn append(&mut self, first: usize, rows: Vec<FeedRow>) {
        let n = rows.len();
        let reaches_end = self.end() == self.total;
        self.total = first + n;
        if first != self.end() {
            // A gap (or a replaced file): while following, start over at
            // `first`; while scrolled back, the held page stays.
            if self.anchor.is_some() && !self.rows.is_empty() {
                return;
            }
            self.rows.clear();
            self.start = first;
        } else if !reaches_end {
            return;
        }
        if self.anchor.is_none() || self.rows.len() + n <= WINDOW {
            self.rows.extend(rows);
            while self.rows.len() > WINDOW {
                self.rows.pop_front();
                self.start += 1;
            }
        }
    }

    /// A page loaded from the file replaces the held rows.
    pub fn page(&mut self, start: usize, rows: Vec<FeedRow>) {
        self.loading = None;
        if rows.is_empty() {
            return;
        }
        self.start = start;
        self.rows = rows.into();
    }

    fn row(&self, i: usize) -> Option<&FeedRow> {
        i.checked_sub(self.start).and_then(|j| self.rows.get(j))
    }

    fn bottom(&self) -> usize {
        self.anchor
            .unwrap_or(self.total.saturating_sub(1))
            .min(self.total.saturating_sub(1))
    }

    fn visible(&self, r: &FeedRow) -> bool {
        self.filter.shows(r.kind)
    }

    /// Lines of the view ending at the anchor, bottom-up (index, row,
    /// folded count), at most `height`.
    fn view(&self, height: usize) -> Vec<(usize, &FeedRow, usize)> {
        let mut out: Vec<(usize, &FeedRow, usize)> = Vec::with_capacity(height);
        if self.total == 0 || height == 0 {
            return out;
        }
        let mut i = self.bottom() + 1;
        while i > self.start && out.len() < height {
            i -= 1;
            let Some(r) = self.row(i) else { break };
            if !self.visible(r) {
                continue;
            }
            if self.fold
                && r.kind == RowKind::Noise
                && let Some(last) = out.last_mut()
                && last.1.kind == RowKind::Noise
            {
                last.2 += 1;
                continue;
            }
            out.push((i, r, 1));
        }
        out
    }

    /// Moves the view `n` lines back (up). Returns the page start to load
    /// when the view runs past the rows held.
    pub fn scroll_up(&mut self, n: usize) -> Option<usize> {
        let mut i = self.bottom();
        let mut moved = 0;
        while moved < n && i > self.start {
            i -= 1;
            if self.row(i).is_some_and(|r| self.visible(r)) {
                moved += 1;
            }
        }
        self.anchor = Some(i);
        if moved < n && self.start > 0 && self.loading.is_none() {
            let want = i.saturating_sub(WINDOW / 2);
            self.loading = Some(want);
            return Some(want);
        }
        None
    }

    /// Moves the view `n` lines on (down); back at the end it follows again.
    pub fn scroll_down(&mut self, n: usize) -> Option<usize> {
        let mut i = self.anchor?;
        let mut moved = 0;
        while moved < n && i + 1 < self.end() {
            i += 1;
            if self.row(i).is_some_and(|r| self.visible(r)) {
                moved += 1;
            }
        }
        if i + 1 >= self.total {
            self.anchor = None;
            if self.end() < self.total && self.loading.is_none() {
                let want = self.total.saturating_sub(WINDOW);
                self.loading = Some(want);
                return Some(want);
            }
            return None;
        }
        self.anchor = Some(i);
        if moved < n && self.end() < self.total && self.loading.is_none() {
            let want = i.saturating_sub(WINDOW / 2);
            self.loading = Some(want);
            return Some(want);
        }
        None
    }

    pub fn follow(&mut self) -> Option<usize> {
        self.anchor = None;
        if self.end() < self.total && self.loading.is_none() {
            let want = self.total.saturating_sub(WINDOW);
            self.loading = Some(want);
            return Some(want);
        }
        None
    }

    pub fn top(&mut self) -> Option<usize> {
        self.anchor = Some(0);
        if self.start > 0 && self.loading.is_none() {
            self.loading = Some(0);
            return Some(0);
        }
        None
    }

    /// Jumps to the newest match older than the view (wrapping to the
    /// newest); returns a page to load when it is not held.
    pub fn next_match(&mut self) -> Option<usize> {
        let cur = self.bottom();
        let target = self
            .matches
            .iter()
            .rev()
            .find(|m| **m < cur)
            .or(self.matches.last())
            .copied()?;
        self.anchor = Some(target);
        if (target < self.start || target >= self.end()) && self.loading.is_none() {
            let want = target.saturating_sub(WINDOW / 2);
            self.loading = Some(want);
            return Some(want);
        }
        None
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme, focused: bool, title: &str) {
        let mut status = format!(" {} events · {}", self.total, self.filter.label());
        if self.fold {
            status.push_str(" · folded");
        }
        if self.raw {
            status.push_str(" · raw");
        }
        if let Some(s) = &self.search {
            status.push_str(&format!(" · /{s} ({})", self.matches.len()));
        }
        status.push_str(if self.anchor.is_some() {
            " · scrolled "
        } else {
            " · live "
        });
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border(focused))
            .title(Span::styled(format!(" Feed {title}"), theme.title()))
            .title_bottom(Line::from(Span::styled(status, theme.muted())).right_aligned());
        let inner = block.inner(area);
        f.render_widget(block, area);
        if self.total == 0 {
            f.render_widget(
                Paragraph::new(Span::styled(
                    "No events yet. Attach a session (Sessions pane) or join an invitation.",
                    theme.muted(),
                )),
                inner,
            );
            return;
        }
        let h = inner.height as usize;
        let view = self.view(h);
        let mut lines: Vec<Line> = Vec::with_capacity(h);
        if view.len() < h && self.loading.is_some() {
            lines.push(Line::from(Span::styled(
                "loading older events…",
                theme.muted(),
            )));
        }
        let needle = self.search.as_deref().map(str::to_lowercase);
        let width = inner.width as usize;
        for (i, r, folded) in view.iter().rev() {
            let (arrow, style) = match r.kind {
                RowKind::Sent => ("→", theme.fg(Slot::Sent)),
                RowKind::Received => ("←", theme.fg(Slot::Received)),
                RowKind::Noise => ("·", theme.fg(Slot::System)),
                RowKind::Lifecycle => ("•", theme.fg(Slot::Local)),
            };
            let body: String = if *folded > 1 {
                format!("{folded} system frames")
            } else if self.raw {
                r.raw.to_string()
            } else {
                r.summary.to_string()
            };
            let hit = needle.as_deref().is_some_and(|n| {
                r.summary.to_lowercase().contains(n) || r.raw.to_lowercase().contains(n)
            });
            let mut style = style;
            if hit {
                style = style.add_modifier(Modifier::UNDERLINED);
            }
            if self.anchor == Some(*i) {
                style = style.add_modifier(Modifier::BOLD);
            }
            let room = width.saturating_sub(11);
            let body: String = body.chars().take(room).collect();
            lines.push(Line::from(vec![
                Span::styled(r.time.to_string(), theme.muted()),
                Span::raw(" "),
                Span::styled(arrow, style),
                Span::raw(" "),
                Span::styled(body, style),
            ]));
        }
        f.render_widget(Paragraph::new(lines).style(Style::new()), inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: usize, kind: RowKind) -> FeedRow {
        FeedRow {
            time: "00:00:00".into(),
            kind,
            summary: format!("event {i}").into(),
            raw: format!("{{\"i\":{i}}}").into(),
        }
    }

    #[test]
    fn memory_is_bounded_while_following() {
        let mut f = Feed::default();
        for chunk in 0..100 {
            f.append(
                chunk * 100,
                (0..100)
                    .map(|i| row(chunk * 100 + i, RowKind::Sent))
                    .collect(),
            );
        }
        assert_eq!(f.total, 10_000);
        assert_eq!(f.rows.len(), WINDOW);
        assert_eq!(f.start, 10_000 - WINDOW);
        assert_eq!(&*f.view(3)[0].1.summary, "event 9999");
    }

    #[test]
    fn a_first_batch_that_skipped_old_events_starts_there() {
        let mut f = Feed::default();
        f.append(
            9000,
            (9000..9000 + WINDOW)
                .map(|i| row(i, RowKind::Sent))
                .collect(),
        );
        assert_eq!(
            (f.start, f.total, f.rows.len()),
            (9000, 9000 + WINDOW, WINDOW)
        );
        f.append(9000 + WINDOW, vec![row(1, RowKind::Sent)]);
        assert_eq!((f.start, f.total), (9001, 9001 + WINDOW));
        assert!(
            f.scroll_up(WINDOW + 5).is_some(),
            "older rows come from disk"
        );
    }

    #[test]
    fn scrolling_past_the_held_rows_asks_for_a_page() {
        let mut f = Feed::default();
        f.append(0, (0..10_000).map(|i| row(i, RowKind::Sent)).collect());
        let want = f.scroll_up(WINDOW + 10).expect("a page is needed");
        assert_eq!(f.loading, Some(want));
        f.page(
            want,
            (want..want + WINDOW)
                .map(|i| row(i, RowKind::Sent))
                .collect(),
        );
        assert!(f.loading.is_none());
        assert!(f.view(1)[0].0 >= want);
        // Back down to the end follows again and reloads the newest rows.
        assert!(f.follow().is_some());
        assert_eq!(f.anchor, None);
    }

    #[test]
    fn noise_folds_and_filters_hide() {
        let mut f = Feed::default();
        let mut rows = vec![row(0, RowKind::Sent)];
        rows.extend((1..6).map(|i| row(i, RowKind::Noise)));
        rows.push(row(6, RowKind::Lifecycle));
        f.append(0, rows);
        let v = f.view(10);
        assert_eq!(v.len(), 3);
        assert_eq!(v[1].2, 5);
        f.fold = false;
        assert_eq!(f.view(10).len(), 7);
        f.filter = Filter::Lifecycle;
        f.fold = true;
        assert_eq!(f.view(10).len(), 2);
    }

    #[test]
    fn search_jumps_to_older_matches_and_wraps() {
        let mut f = Feed::default();
        f.append(0, (0..100).map(|i| row(i, RowKind::Sent)).collect());
        f.matches = vec![10, 50, 90];
        assert_eq!(f.next_match(), None);
        assert_eq!(f.anchor, Some(90));
        f.next_match();
        assert_eq!(f.anchor, Some(50));
        f.next_match();
        f.next_match();
        assert_eq!(f.anchor, Some(90));
    }
}
