//! The layer rule, read off the source: every module under `src/` may use
//! its own layer or lower ones (the table below, ARCHITECTURE.md's
//! "Layers"), and no modules use each other in a cycle — neither top-level
//! modules nor the modules one level inside a top-level module.
//!
//! What counts as a use: each path of a `use crate::…`, `use super::…` or
//! `use self::…` tree (and, in a module that declares `mod x;`, `use x::…`),
//! and each `crate::a::b`, `super::…` or `self::…` path in code. Comments
//! and literals are skipped. A path that names an exported macro
//! (`crate::obj!`) counts as the module defining it; a name a `mod.rs`
//! re-exports from a child (`pub use child::Name`) counts as that child.
//! A `mod.rs` is its module's front door: uses to and from it take no part
//! in the cycle check inside that module.
//!
//! Files, too, use each other in no cycle. There a node is one file's module
//! (a file a `#[path = "…"] mod m;` brings in counts as `m` inside the
//! declaring module, e.g. a `core_tests.rs` as `core::tests`) or a
//! `#[cfg(test)]` module written inline (a child of its file, as if it were in
//! its own file), and an edge is a use from one node to another that is
//! neither its ancestor nor its descendant: a module and its own submodules
//! reaching each other (`super::` up, `child::` down) is how Rust modules are
//! built, so parent↔child edges do not count; a use of a name a parent
//! re-exports from a child counts as a use of that child, so siblings cannot
//! hide a cycle behind their parent. Tests are their own nodes because a test
//! of one file may drive its neighbours (a bidding test playing the bot's
//! calls) without the file's own code depending on them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level modules, bottom layer first.
const LAYERS: &[&[&str]] = &[
    &["json", "fsutil", "paths", "limits", "utc"],
    &["spec", "library", "identity", "sealed", "web"],
    &["engine", "sql"],
    &["session", "protocols"],
    &["net", "community", "market", "werewolf"],
    &["services", "config"],
    &["tui", "cli"],
];

#[test]
fn the_source_keeps_its_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    read_tree(&root, &root, &mut files);
    assert!(files.len() > 50, "read only {} files", files.len());
    let problems = check(&files, LAYERS);
    assert!(
        problems.is_empty(),
        "{} layer problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

fn read_tree(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            read_tree(root, &p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

// ---- tokens ----

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    Sep,
    Open,
    Close,
    Semi,
    Comma,
    /// `!` of a macro call (not `!=`).
    Bang,
    Star,
    Other(char),
}

/// The tokens of `src` that matter here, each with its line; comments,
/// string, char and number literals are dropped.
fn lex(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    // Skips a quoted literal opening at `i` (on the quote) with `hashes`
    // closing hashes; returns the index after it.
    let skip_quoted = |mut i: usize, hashes: usize, raw: bool, line: &mut usize| {
        i += 1;
        while i < c.len() {
            match c[i] {
                '\n' => *line += 1,
                '\\' if !raw => i += 1,
                '"' if (1..=hashes).all(|k| at(i + k) == '#') => return i + 1 + hashes,
                _ => {}
            }
            i += 1;
        }
        i
    };
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_quoted(i, 0, false, &mut line);
        } else if ch == '\'' {
            if at(i + 1) == '\\' {
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                // A lifetime or a label: its name lexes as an identifier.
                i += 1;
            }
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let prefix = matches!(word.as_str(), "b" | "c" | "r" | "br" | "cr");
            if prefix && word.ends_with('r') && (at(i) == '"' || at(i) == '#') {
                let mut hashes = 0;
                while at(i + hashes) == '#' {
                    hashes += 1;
                }
                if at(i + hashes) == '"' {
                    i = skip_quoted(i + hashes, hashes, true, &mut line);
                    continue;
                }
                if word == "r" && hashes == 1 {
                    // A raw identifier, `r#type`: the name follows.
                    i += 1;
                    continue;
                }
            }
            if prefix && !word.ends_with('r') && at(i) == '"' {
                i = skip_quoted(i, 0, false, &mut line);
                continue;
            }
            if word == "b" && at(i) == '\'' {
                i += 1;
                while i < c.len() && c[i] != '\'' {
                    if c[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                continue;
            }
            out.push((Tok::Ident(word), line));
        } else {
            let t = match ch {
                ':' if at(i + 1) == ':' => {
                    i += 1;
                    Tok::Sep
                }
                '{' => Tok::Open,
                '}' => Tok::Close,
                ';' => Tok::Semi,
                ',' => Tok::Comma,
                '!' if at(i + 1) != '=' => Tok::Bang,
                '*' => Tok::Star,
                other => Tok::Other(other),
            };
            out.push((t, line));
            i += 1;
        }
    }
    out
}

// ---- one file ----

/// A path a file uses.
#[derive(Debug)]
struct Use {
    /// The module the path is written in (inline modules included).
    module: Vec<String>,
    path: Vec<String>,
    line: usize,
    /// Written in a `use` tree (where `child::…` is a relative path).
    in_use: bool,
}

#[derive(Debug, Default)]
struct Scan {
    uses: Vec<Use>,
    /// `pub use child::Name` in the file's own module: Name → child.
    reexports: BTreeMap<String, String>,
    /// Names of `#[macro_export]` macros defined here.
    macros: Vec<String>,
    /// Modules declared in this file (`mod x;`, `mod x { … }`).
    declared: BTreeSet<Vec<String>>,
    /// Inline modules under `#[cfg(test)]` (`#[cfg(test)] mod tests { … }`).
    test_modules: BTreeSet<Vec<String>>,
}

fn ident(t: Option<&(Tok, usize)>) -> Option<&str> {
    match t {
        Some((Tok::Ident(s), _)) => Some(s),
        _ => None,
    }
}

/// The leaves of a use tree starting at `toks[*i]`, each with its line.
fn use_tree(
    toks: &[(Tok, usize)],
    i: &mut usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, usize, Option<String>)>,
) {
    let mut path = prefix.to_vec();
    let line = toks.get(*i).map_or(0, |t| t.1);
    loop {
        match toks.get(*i) {
            Some((Tok::Ident(s), _)) => {
                if s == "self"
                    && !path.is_empty()
                    && !matches!(toks.get(*i + 1), Some((Tok::Sep, _)))
                {
                    *i += 1;
                } else {
                    path.push(s.clone());
                    *i += 1;
                }
                if let Some((Tok::Sep, _)) = toks.get(*i) {
                    *i += 1;
                    continue;
                }
                let alias = if ident(toks.get(*i)) == Some("as") {
                    *i += 2;
                    ident(toks.get(*i - 1)).map(str::to_owned)
                } else {
                    None
                };
                out.push((path, line, alias));
                return;
            }
            Some((Tok::Open, _)) => {
                *i += 1;
                while *i < toks.len() {
                    match toks[*i].0 {
                        Tok::Close => {
                            *i += 1;
                            return;
                        }
                        Tok::Comma => *i += 1,
                        _ => use_tree(toks, i, &path, out),
                    }
                }
                return;
            }
            Some((Tok::Star, _)) => {
                *i += 1;
                out.push((path, line, Some("*".into())));
                return;
            }
            _ => {
                out.push((path, line, None));
                return;
            }
        }
    }
}

/// Whether the item ending `toks` (an item's keyword is next) carries
/// `#[cfg(test)]` among its attributes (`pub` and other attributes may
/// stand between).
fn under_cfg_test(toks: &[(Tok, usize)]) -> bool {
    let mut i = toks.len();
    while i > 0 && matches!(&toks[i - 1].0, Tok::Ident(w) if w == "pub") {
        i -= 1;
    }
    // Each attribute ends `]`: walk back over `#[…]` groups.
    while i > 0 && toks[i - 1].0 == Tok::Other(']') {
        let end = i - 1;
        let Some(start) = (0..end)
            .rev()
            .find(|&k| toks[k].0 == Tok::Other('[') && k > 0 && toks[k - 1].0 == Tok::Other('#'))
        else {
            return false;
        };
        let words: Vec<&str> = toks[start + 1..end]
            .iter()
            .filter_map(|t| match &t.0 {
                Tok::Ident(w) => Some(w.as_str()),
                _ => None,
            })
            .collect();
        if words == ["cfg", "test"] {
            return true;
        }
        i = start - 1;
    }
    false
}

fn scan(file_module: &[String], src: &str) -> Scan {
    let toks = lex(src);
    let mut s = Scan::default();
    let mut depth = 0usize;
    // Inline modules open at a brace depth.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let module_at = |inline: &[(String, usize)]| {
        let mut m = file_module.to_vec();
        m.extend(inline.iter().map(|(n, _)| n.clone()));
        m
    };
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Open => depth += 1,
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(w) if w == "mod" => {
                if let Some(name) = ident(toks.get(i + 1)) {
                    let mut m = module_at(&inline);
                    m.push(name.to_owned());
                    s.declared.insert(m.clone());
                    if let Some((Tok::Open, _)) = toks.get(i + 2) {
                        if under_cfg_test(&toks[..i]) {
                            s.test_modules.insert(m);
                        }
                        inline.push((name.to_owned(), depth + 1));
                    }
                    i += 2;
                    continue;
                }
            }
            Tok::Ident(w) if w == "macro_rules" => {
                if let (Some((Tok::Bang, _)), Some(name)) =
                    (toks.get(i + 1), ident(toks.get(i + 2)))
                {
                    let exported = toks[i.saturating_sub(12)..i]
                        .iter()
                        .any(|t| t.0 == Tok::Ident("macro_export".into()));
                    if exported {
                        s.macros.push(name.to_owned());
                    }
                }
            }
            Tok::Ident(w) if w == "use" => {
                let public = toks[i.saturating_sub(6)..i]
                    .iter()
                    .rev()
                    .take_while(|t| !matches!(t.0, Tok::Semi | Tok::Open | Tok::Close))
                    .any(|t| t.0 == Tok::Ident("pub".into()));
                let line = toks[i].1;
                i += 1;
                let mut leaves = Vec::new();
                use_tree(&toks, &mut i, &[], &mut leaves);
                let module = module_at(&inline);
                for (path, _, alias) in leaves {
                    if path.is_empty() {
                        continue;
                    }
                    if public && inline.is_empty() && alias.as_deref() != Some("*") {
                        let rel = if path[0] == "self" {
                            &path[1..]
                        } else {
                            &path[..]
                        };
                        if rel.len() >= 2 {
                            let name = alias.clone().unwrap_or_else(|| rel[rel.len() - 1].clone());
                            s.reexports.insert(name, rel[0].clone());
                        }
                    }
                    s.uses.push(Use {
                        module: module.clone(),
                        path,
                        line,
                        in_use: true,
                    });
                }
                continue;
            }
            Tok::Ident(w)
                if matches!(w.as_str(), "crate" | "super" | "self")
                    && toks.get(i + 1).is_some_and(|t| t.0 == Tok::Sep)
                    && !(i > 0 && toks[i - 1].0 == Tok::Sep) =>
            {
                let line = toks[i].1;
                let mut path = vec![w.clone()];
                let mut j = i + 1;
                while let (Some((Tok::Sep, _)), Some(name)) = (toks.get(j), ident(toks.get(j + 1)))
                {
                    path.push(name.to_owned());
                    j += 2;
                }
                s.uses.push(Use {
                    module: module_at(&inline),
                    path,
                    line,
                    in_use: false,
                });
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    s
}

// ---- the whole tree ----

/// `a/b.rs` → `[a, b]`; `a/mod.rs` → `[a]`; `lib.rs` → `[]`.
fn module_of(file: &str) -> Vec<String> {
    let mut m: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(m.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        m.pop();
    }
    m
}

/// Files brought in by `#[path = "…"] mod m;` (relative to the declaring
/// file's directory) → the module they are: the declaring module's `m`.
fn path_modules(files: &[(String, String)]) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for (file, src) in files {
        let dir = file.rfind('/').map_or("", |i| &file[..=i]);
        let mut rest = src.as_str();
        while let Some(at) = rest.find("#[path = \"") {
            rest = &rest[at + 10..];
            let Some(end) = rest.find('"') else { break };
            let target = format!("{dir}{}", &rest[..end]);
            rest = &rest[end..];
            // The next `mod name` after the attribute (other attributes and
            // `pub` may stand between).
            let Some(m) = rest.find("mod ") else { break };
            let name: String = rest[m + 4..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let mut module = module_of(file);
            module.push(name);
            out.insert(target, module);
        }
    }
    out
}

/// The node a module counts as at `depth` (1: top level, 2: one inside).
fn node(m: &[String], depth: usize) -> String {
    m[..m.len().min(depth)].join("::")
}

/// Every problem, one line each, naming file and line.
fn check(files: &[(String, String)], layers: &[&[&str]]) -> Vec<String> {
    let mut problems = Vec::new();
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(n, l)| l.iter().map(move |m| (*m, n)))
        .collect();
    let by_path = path_modules(files);
    let scans: Vec<(String, Vec<String>, Scan)> = files
        .iter()
        .filter(|(f, _)| f != "main.rs")
        .map(|(f, src)| {
            let m = by_path.get(f).cloned().unwrap_or_else(|| module_of(f));
            let s = scan(&m, src);
            (f.clone(), m, s)
        })
        .collect();
    let mut modules: BTreeSet<Vec<String>> = scans.iter().map(|(_, m, _)| m.clone()).collect();
    let mut reexports = BTreeMap::new();
    let mut macros = BTreeMap::new();
    for (_, m, s) in &scans {
        modules.extend(s.declared.iter().cloned());
        reexports.insert(m.clone(), s.reexports.clone());
        for name in &s.macros {
            macros.insert(name.clone(), m.clone());
        }
    }
    let tops: BTreeSet<&str> = modules
        .iter()
        .filter(|m| !m.is_empty())
        .map(|m| m[0].as_str())
        .collect();
    for t in &tops {
        if !layer_of.contains_key(t) {
            problems.push(format!("src/{t}: module `{t}` is in no layer of the table"));
        }
    }
    for t in layer_of.keys() {
        if !tops.contains(t) {
            problems.push(format!("the layer table names `{t}`, which is no module"));
        }
    }
    // The file graph's nodes: the modules that are files (the crate root
    // excluded) and the inline test modules.
    let file_nodes: BTreeSet<&[String]> = scans
        .iter()
        .flat_map(|(_, m, s)| {
            std::iter::once(m.as_slice()).chain(s.test_modules.iter().map(Vec::as_slice))
        })
        .filter(|m| !m.is_empty())
        .collect();
    let file_node = |m: &[String]| {
        (1..=m.len())
            .rev()
            .map(|n| m[..n].to_vec())
            .find(|p| file_nodes.contains(p.as_slice()))
    };
    // (depth, from, to) → first place seen; depth 0 is the file graph.
    let mut edges: BTreeMap<(usize, String, String), String> = BTreeMap::new();
    for (file, file_module, s) in &scans {
        if file_module.is_empty() {
            continue;
        }
        for u in &s.uses {
            let Some(target) = resolve(u, &modules, &reexports, &macros) else {
                if u.path[0] == "crate" {
                    problems.push(format!(
                        "src/{file}:{}: `{}` names no module",
                        u.line,
                        u.path.join("::")
                    ));
                }
                continue;
            };
            let place = format!("src/{file}:{}", u.line);
            // The nodes holding the use and the target (an inline module that
            // is not a test is part of its file).
            if let (Some(from), Some(to)) = (file_node(&u.module), file_node(&target))
                && !to.starts_with(&from)
                && !from.starts_with(&to)
            {
                edges
                    .entry((0, from.join("::"), to.join("::")))
                    .or_insert_with(|| place.clone());
            }
            let (from, to) = (node(file_module, 1), node(&target, 1));
            if from != to {
                if let (Some(a), Some(b)) = (layer_of.get(from.as_str()), layer_of.get(to.as_str()))
                    && b > a
                {
                    problems.push(format!(
                        "{place}: `{from}` (layer {a}) uses `{}` (layer {b}), a higher layer",
                        u.path.join("::")
                    ));
                }
                edges.entry((1, from, to)).or_insert(place);
            } else if file_module.len() >= 2 && target.len() >= 2 {
                let (from, to) = (node(file_module, 2), node(&target, 2));
                if from != to {
                    edges.entry((2, from, to)).or_insert(place);
                }
            }
        }
    }
    for depth in [1, 2, 0] {
        let graph: BTreeMap<String, BTreeSet<String>> = edges
            .keys()
            .filter(|(d, _, _)| *d == depth)
            .fold(BTreeMap::new(), |mut g, (_, a, b)| {
                g.entry(a.clone()).or_default().insert(b.clone());
                g
            });
        for cycle in cycles(&graph) {
            let members: BTreeSet<&String> = cycle.iter().collect();
            let inside: Vec<String> = edges
                .iter()
                .filter(|((d, a, b), _)| *d == depth && members.contains(a) && members.contains(b))
                .map(|((_, a, b), place)| format!("{a} -> {b} ({place})"))
                .collect();
            let what = if depth == 0 { "files" } else { "modules" };
            problems.push(format!(
                "cycle among {what} {}: {}",
                cycle.join(", "),
                inside.join("; ")
            ));
        }
    }
    problems
}

/// The module a path refers to, or None for a path outside the crate.
fn resolve(
    u: &Use,
    modules: &BTreeSet<Vec<String>>,
    reexports: &BTreeMap<Vec<String>, BTreeMap<String, String>>,
    macros: &BTreeMap<String, Vec<String>>,
) -> Option<Vec<String>> {
    let mut abs: Vec<String> = match u.path[0].as_str() {
        "crate" => Vec::new(),
        "super" | "self" => u.module.clone(),
        first => {
            let mut child = u.module.clone();
            child.push(first.to_owned());
            if !(u.in_use && modules.contains(&child)) {
                return None;
            }
            u.module.clone()
        }
    };
    let mut rest = &u.path[..];
    if rest[0] == "crate" || rest[0] == "self" {
        rest = &rest[1..];
    }
    while rest.first().is_some_and(|s| s == "super") {
        abs.pop();
        rest = &rest[1..];
    }
    abs.extend(rest.iter().cloned());
    let mut known = abs.len();
    while known > 0 && !modules.contains(&abs[..known].to_vec()) {
        known -= 1;
    }
    if known == 0 {
        return abs.first().and_then(|name| macros.get(name)).cloned();
    }
    let mut target = abs[..known].to_vec();
    if let Some(child) = abs
        .get(known)
        .and_then(|item| reexports.get(&target)?.get(item))
    {
        target.push(child.clone());
    }
    Some(target)
}

/// The strongly connected components of more than one node (Tarjan).
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        for w in t.g.get(v).into_iter().flatten() {
            if !t.index.contains_key(w.as_str()) {
                visit(t, w);
                let lw = t.low[w.as_str()];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.stack.contains(&w.as_str()) {
                let iw = t.index[w.as_str()];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                comp.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

// ---- the checker on small trees ----

fn tree(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(f, s)| (f.to_string(), s.to_string()))
        .collect()
}

const TWO: &[&[&str]] = &[&["low"], &["high"]];

#[test]
fn an_upward_use_is_reported_with_file_and_line() {
    let t = tree(&[
        ("lib.rs", "pub mod low;\npub mod high;"),
        ("low.rs", "//! doc\n\nuse crate::high::Thing;\n"),
        ("high.rs", "pub struct Thing;"),
    ]);
    let p = check(&t, TWO);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].starts_with("src/low.rs:3: `low` (layer 0) uses `crate::high::Thing` (layer 1)"),
        "{p:?}"
    );
    // The same path in code, in a group, or through `$crate` in a macro.
    for src in [
        "fn f() { let _ = crate::high::Thing; }",
        "use crate::{high::Thing};",
        "macro_rules! m { () => { $crate::high::Thing } }",
    ] {
        let t = tree(&[("low.rs", src), ("high.rs", "")]);
        assert_eq!(check(&t, TWO).len(), 1, "{src}");
    }
    // Downward is fine.
    let t = tree(&[
        ("low.rs", ""),
        ("high.rs", "use crate::low;\nfn f() { crate::low::g() }"),
    ]);
    assert_eq!(check(&t, TWO), Vec::<String>::new());
}

#[test]
fn comments_and_literals_are_not_uses() {
    let t = tree(&[
        (
            "low.rs",
            "// use crate::high::A;\n/* crate::high::B /* nested */ crate::high::C */\n\
             const S: &str = \"crate::high::D\";\nconst R: &str = r#\"crate::high::E\"#;\n\
             const C: char = '\"'; const Q: u8 = b'\\''; fn f<'a>(x: &'a str) -> bool { x != \"\" }\n",
        ),
        ("high.rs", ""),
    ]);
    assert_eq!(check(&t, TWO), Vec::<String>::new());
}

#[test]
fn a_cycle_between_top_level_modules_is_reported() {
    let same: &[&[&str]] = &[&["a", "b", "c"]];
    let t = tree(&[
        ("a/mod.rs", "pub mod x;"),
        ("a/x.rs", "use crate::b::Y;"),
        ("b.rs", "pub fn y() { crate::c::z() }"),
        ("c.rs", "pub fn z() { crate::a::x::f() }"),
    ]);
    let p = check(&t, same);
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(
        p[0].starts_with("cycle among modules a, b, c: a -> b (src/a/x.rs:1)"),
        "{p:?}"
    );
    // The same cycle between the files.
    assert_eq!(
        p[1],
        "cycle among files a::x, b, c: a::x -> b (src/a/x.rs:1); b -> c (src/b.rs:1); \
         c -> a::x (src/c.rs:1)"
    );
}

#[test]
fn a_cycle_inside_a_module_is_reported_through_super_and_reexports() {
    let one: &[&[&str]] = &[&["t"]];
    // t::x uses t::y by its re-exported name; t::y reaches t::x from its
    // tests module, two `super`s up.
    let t = tree(&[
        (
            "t/mod.rs",
            "mod x;\nmod y;\npub use y::Y;\npub use self::x::X as Ex;",
        ),
        ("t/x.rs", "use super::Y;\npub struct X;"),
        (
            "t/y.rs",
            "pub struct Y;\n#[cfg(test)]\nmod tests {\n    use super::super::x::X;\n}",
        ),
    ]);
    let p = check(&t, one);
    assert_eq!(
        p,
        [
            "cycle among modules t::x, t::y: t::x -> t::y (src/t/x.rs:1); t::y -> t::x (src/t/y.rs:4)"
        ]
    );
    // (The file graph takes y's tests module for a node of its own, so it
    // sees no cycle here.)
    // The front door itself is no part of a cycle.
    let t = tree(&[
        ("t/mod.rs", "mod x;\npub struct Root;\nuse x::X;"),
        ("t/x.rs", "use super::Root;\npub struct X;"),
    ]);
    assert_eq!(check(&t, one), Vec::<String>::new());
}

#[test]
fn a_cycle_between_files_deep_inside_a_module_is_reported() {
    let one: &[&[&str]] = &[&["t"]];
    // t::g::a and t::g::b are one node at depth 2 (t::g): only the file
    // graph sees them use each other, here one way through the parent's
    // re-export.
    let planted = |a_uses_b: &str| {
        tree(&[
            ("t/mod.rs", "pub mod g;"),
            (
                "t/g/mod.rs",
                "pub mod a;\npub mod b;\npub use a::A;\npub use b::B;\nfn f() { a::g(); b::h(); }",
            ),
            (
                "t/g/a.rs",
                &format!(
                    "{a_uses_b}\npub struct A;\nfn g() {{ super::f() }}\n\
                     #[cfg(test)]\n#[path = \"a_tests.rs\"]\nmod tests;"
                ),
            ),
            ("t/g/a_tests.rs", "use super::A;\nuse super::super::b::B;"),
            (
                "t/g/b.rs",
                "pub struct B;\nfn h() { let _ = crate::t::g::a::A; }",
            ),
        ])
    };
    assert_eq!(
        check(&planted("use super::B;"), one),
        [
            "cycle among files t::g::a, t::g::b: t::g::a -> t::g::b (src/t/g/a.rs:1); \
          t::g::b -> t::g::a (src/t/g/b.rs:2)"
        ]
    );
    // An inline module that is no test is part of its file.
    assert_eq!(
        check(&planted("pub mod m {\n    use super::super::B;\n}"), one),
        [
            "cycle among files t::g::a, t::g::b: t::g::a -> t::g::b (src/t/g/a.rs:2); \
          t::g::b -> t::g::a (src/t/g/b.rs:2)"
        ]
    );
    // Without it: a parent and its children reaching each other, and a's
    // tests (brought in by `#[path]`, or inline under `#[cfg(test)]`) using
    // b, are no cycle.
    let fine =
        planted("#[cfg(test)]\n#[allow(unused)]\nmod more {\n    use super::super::b::B;\n}");
    assert_eq!(check(&fine, one), Vec::<String>::new());
    assert_eq!(
        path_modules(&fine).get("t/g/a_tests.rs"),
        Some(&vec!["t".into(), "g".into(), "a".into(), "tests".into()])
    );
}

#[test]
fn a_macro_counts_as_the_module_that_exports_it() {
    let t = tree(&[
        (
            "low.rs",
            "fn f() { let _ = crate::obj!{}; }\nuse crate::obj;",
        ),
        (
            "high.rs",
            "#[macro_export]\n/// doc\nmacro_rules! obj { () => {} }",
        ),
    ]);
    let p = check(&t, TWO);
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(
        p[0].starts_with("src/low.rs:1: `low` (layer 0) uses `crate::obj`"),
        "{p:?}"
    );
    assert!(p[1].starts_with("src/low.rs:2:"), "{p:?}");
}

#[test]
fn the_table_and_the_modules_must_match() {
    let t = tree(&[("low.rs", ""), ("stray.rs", "use crate::nowhere::X;")]);
    let p = check(&t, TWO);
    assert!(
        p.contains(&"src/stray: module `stray` is in no layer of the table".to_owned()),
        "{p:?}"
    );
    assert!(
        p.contains(&"the layer table names `high`, which is no module".to_owned()),
        "{p:?}"
    );
    assert!(
        p.contains(&"src/stray.rs:1: `crate::nowhere::X` names no module".to_owned()),
        "{p:?}"
    );
}
