//! `palaver skill install|check|path` as a process, always with `--dir` into a
//! temporary directory (never the real home): install then check, an edit
//! noticed, `--force`, the AGENTS.md block replaced with the user's text
//! around it kept byte for byte, `--json`, and each agent's path.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_palaver");

fn palaver(data: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--data-dir")
        .arg(data.join("data"))
        .args(args)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", data.join("home"))
        .output()
        .unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_of(o: &Output) -> serde_json::Value {
    let text = out(o);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn install_then_check_is_current_and_an_edit_is_modified() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("claude");
    let file = dir.join("skills/palaver/SKILL.md");

    let o = palaver(t.path(), &["skill", "check", "--dir", s(&dir)]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert_eq!(out(&o), "missing\n");

    let o = palaver(t.path(), &["skill", "install", "--dir", s(&dir)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains(s(&file)), "{}", out(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("---\nname: palaver\ndescription: "),
        "{text}"
    );
    for tool in [
        "market_open_job",
        "session_decide",
        "session_window",
        "browse",
    ] {
        assert!(text.contains(tool), "no {tool}");
    }
    assert!(text.contains("claude mcp add palaver -- palaver mcp"));

    let o = palaver(t.path(), &["skill", "check", "--dir", s(&dir)]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "current\n");

    // Installing again writes nothing.
    let o = palaver(t.path(), &["skill", "install", "--dir", s(&dir)]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).starts_with("already current"), "{}", out(&o));

    std::fs::write(&file, text.replace("palaver is a", "palaver is my")).unwrap();
    let o = palaver(t.path(), &["skill", "check", "--dir", s(&dir)]);
    assert_ne!(o.status.code(), Some(0));
    assert_eq!(out(&o), "modified\n");
}

#[test]
fn install_refuses_an_edited_copy_without_force() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("oc");
    let file = dir.join("skills/palaver/SKILL.md");
    let args = ["skill", "install", "--agent", "opencode", "--dir", s(&dir)];
    assert!(palaver(t.path(), &args).status.success());
    let edited = std::fs::read_to_string(&file).unwrap() + "my own line\n";
    std::fs::write(&file, &edited).unwrap();

    let o = palaver(t.path(), &args);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("--force"), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);

    let mut forced = args.to_vec();
    forced.push("--force");
    let o = palaver(t.path(), &forced);
    assert!(o.status.success(), "{}", err(&o));
    let check = ["skill", "check", "--agent", "opencode", "--dir", s(&dir)];
    let o = palaver(t.path(), &check);
    assert!(o.status.success(), "{}", out(&o));
    assert_eq!(out(&o), "current\n");

    // Someone else's file at palaver's path is not palaver's to replace either.
    std::fs::write(&file, "---\nname: palaver\n---\nnot ours\n").unwrap();
    let o = palaver(t.path(), &check);
    assert_eq!(out(&o), "modified\n");
    assert_eq!(palaver(t.path(), &args).status.code(), Some(1));
}

#[test]
fn the_agents_md_block_is_replaced_and_the_users_text_kept_byte_for_byte() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("codex");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("AGENTS.md");
    let before = "# My rules\r\n\r\n- tabs, not spaces  \n- ünïcödé stays\n\n";
    let after = "\n## Later notes\nno newline at the end";
    std::fs::write(&file, before).unwrap();
    let install = ["skill", "install", "--agent", "codex", "--dir", s(&dir)];
    let check = ["skill", "check", "--agent", "codex", "--dir", s(&dir)];

    assert_eq!(out(&palaver(t.path(), &check)), "missing\n");
    let o = palaver(t.path(), &install);
    assert!(o.status.success(), "{}", err(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(before), "{text}");
    assert!(text[before.len()..].starts_with("<!-- palaver skill v1 begin -->\n"));
    assert!(
        !text.contains("name: palaver"),
        "front matter belongs to SKILL.md only"
    );
    let block = text[before.len()..].to_string();

    // The user appends text after the block and the block goes stale (an
    // older palaver's, intact): install replaces the block alone.
    let old = "<!-- palaver skill v0 begin -->\nold words\n";
    let digest = {
        use sha2::Digest;
        hex::encode(&sha2::Sha256::digest(old.as_bytes())[..8])
    };
    let stale = format!("{before}{old}<!-- palaver skill v0 end sha256:{digest} -->{after}");
    std::fs::write(&file, &stale).unwrap();
    let o = palaver(t.path(), &check);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(out(&o), "outdated (installed v0, this palaver writes v1)\n");

    let o = palaver(t.path(), &install);
    assert!(o.status.success(), "{}", err(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text,
        format!("{before}{}{after}", block.trim_end_matches('\n'))
    );
    assert_eq!(out(&palaver(t.path(), &check)), "current\n");

    // An edit inside the block: modified, and install leaves it alone.
    let edited = text.replace("palaver is a", "palaver is one");
    std::fs::write(&file, &edited).unwrap();
    assert_eq!(out(&palaver(t.path(), &check)), "modified\n");
    assert_eq!(palaver(t.path(), &install).status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);
    let mut forced = install.to_vec();
    forced.push("--force");
    assert!(palaver(t.path(), &forced).status.success());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);

    // A begin marker with no end: nowhere safe to cut, even with --force.
    let half = format!("{before}<!-- palaver skill v1 begin -->\nhalf a block\n");
    std::fs::write(&file, &half).unwrap();
    assert_eq!(out(&palaver(t.path(), &check)), "modified\n");
    let o = palaver(t.path(), &forced);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains(s(&file)), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), half);
}

#[test]
fn json_output_parses_for_every_subcommand() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("c");
    let d = s(&dir);

    let v = json_of(&palaver(
        t.path(),
        &["skill", "check", "--dir", d, "--json"],
    ));
    assert_eq!(v["status"], "missing");
    assert_eq!(v["installed_version"], serde_json::Value::Null);
    assert_eq!(v["agent"], "claude-code");

    let v = json_of(&palaver(
        t.path(),
        &["skill", "install", "--dir", d, "--json"],
    ));
    assert_eq!(v["action"], "written");
    assert_eq!(v["before"], "missing");
    assert_eq!(v["layout"], "skill");
    let version = v["version"].as_u64().unwrap();

    let v = json_of(&palaver(
        t.path(),
        &["--json", "skill", "check", "--dir", d],
    ));
    assert_eq!(v["status"], "current");
    assert_eq!(v["installed_version"].as_u64(), Some(version));

    let v = json_of(&palaver(t.path(), &["skill", "path", "--dir", d, "--json"]));
    assert_eq!(v["path"], s(&dir.join("skills/palaver/SKILL.md")));

    let v = json_of(&palaver(
        t.path(),
        &["skill", "install", "--dir", d, "--json"],
    ));
    assert_eq!(v["action"], "unchanged");
}

#[test]
fn path_per_agent_and_their_directory_overrides() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    let path = |agent: &str, env: &[(&str, &Path)]| {
        let mut c = Command::new(BIN);
        c.args(["skill", "path", "--agent", agent])
            .env("PALAVER_DATA_DIR", t.path().join("data"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env("HOME", &home);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", err(&o));
        out(&o).trim_end().to_string()
    };
    let want = |p: &Path| s(p).to_string();
    assert_eq!(
        path("claude-code", &[]),
        want(&home.join(".claude/skills/palaver/SKILL.md"))
    );
    assert_eq!(path("codex", &[]), want(&home.join(".codex/AGENTS.md")));
    assert_eq!(
        path("opencode", &[]),
        want(&home.join(".config/opencode/skills/palaver/SKILL.md"))
    );

    let other = t.path().join("other");
    assert_eq!(
        path("claude-code", &[("CLAUDE_CONFIG_DIR", &other)]),
        want(&other.join("skills/palaver/SKILL.md"))
    );
    assert_eq!(
        path("codex", &[("CODEX_HOME", &other)]),
        want(&other.join("AGENTS.md"))
    );
    assert_eq!(
        path("opencode", &[("XDG_CONFIG_HOME", &other)]),
        want(&other.join("opencode/skills/palaver/SKILL.md"))
    );

    // --dir wins over both, and the default agent is claude-code.
    let o = palaver(t.path(), &["skill", "path", "--dir", "/x/y"]);
    assert_eq!(out(&o), "/x/y/skills/palaver/SKILL.md\n");
    assert!(!home.exists(), "path wrote under the home directory");
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let t = tempfile::tempdir().unwrap();
    let o = palaver(t.path(), &["skill", "check", "--agent", "vim"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("claude-code, codex, opencode"),
        "{}",
        err(&o)
    );

    // A directory where the file should be: the error names the path.
    let dir = t.path().join("d");
    let file = dir.join("AGENTS.md");
    std::fs::create_dir_all(&file).unwrap();
    let o = palaver(
        t.path(),
        &["skill", "check", "--agent", "codex", "--dir", s(&dir)],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains(s(&file)), "{}", err(&o));
    assert!(!err(&o).contains("panicked"), "{}", err(&o));

    // Not UTF-8: refused, untouched.
    std::fs::remove_dir(&file).unwrap();
    std::fs::write(&file, b"\xff\xfe rules").unwrap();
    let o = palaver(
        t.path(),
        &["skill", "install", "--agent", "codex", "--dir", s(&dir)],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("not UTF-8"), "{}", err(&o));
    assert_eq!(std::fs::read(&file).unwrap(), b"\xff\xfe rules");
}

#[test]
fn install_writes_through_a_symlinked_agents_md() {
    let t = tempfile::tempdir().unwrap();
    let dots = t.path().join("dotfiles");
    std::fs::create_dir_all(&dots).unwrap();
    std::fs::write(dots.join("AGENTS.md"), "mine\n").unwrap();
    let dir = t.path().join("codex");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(dots.join("AGENTS.md"), dir.join("AGENTS.md")).unwrap();

    let o = palaver(
        t.path(),
        &["skill", "install", "--agent", "codex", "--dir", s(&dir)],
    );
    assert!(o.status.success(), "{}", err(&o));
    let link = std::fs::symlink_metadata(dir.join("AGENTS.md")).unwrap();
    assert!(
        link.file_type().is_symlink(),
        "the link was replaced by a file"
    );
    let text = std::fs::read_to_string(dots.join("AGENTS.md")).unwrap();
    assert!(
        text.starts_with("mine\n\n<!-- palaver skill v1 begin -->\n"),
        "{text}"
    );
    let o = palaver(
        t.path(),
        &["skill", "check", "--agent", "codex", "--dir", s(&dir)],
    );
    assert_eq!(out(&o), "current\n");
}

/// The skill names every tool `palaver mcp` lists, so an agent taught by
/// it can find each one.
#[test]
fn the_skill_names_every_mcp_tool() {
    let text = include_str!("../assets/skill/palaver.md");
    for name in palaver::services::mcp::tool_names() {
        assert!(
            text.contains(&format!("`{name}`")),
            "the skill does not name `{name}`"
        );
    }
}
