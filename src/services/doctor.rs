//! `palaver doctor`: what this machine and data dir need for sessions, each
//! checked for real (a key that loads, a server that answers, a library
//! whose files hash to their ids, an iroh endpoint that reaches itself, a
//! Python that can run reference hooks) and each reported with what to do.

use crate::identity::KeyPair;
use crate::library::{Library, Source};
use crate::web::auth::MAX_SKEW;
use crate::web::client::Client;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    /// Works, but something will bite later (or is only needed sometimes).
    Warn,
    Fail,
    /// Not run: an earlier check it depends on failed.
    Skipped,
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
    /// What to do about it (None when nothing is needed).
    pub fix: Option<String>,
}

impl Check {
    fn new(name: &'static str, status: Status, detail: impl Into<String>) -> Check {
        Check {
            name,
            status,
            detail: detail.into(),
            fix: None,
        }
    }

    fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }
}

/// What the doctor looks at.
pub struct Input {
    pub data_dir: PathBuf,
    /// The community server URL, when one is configured.
    pub server: Option<String>,
    /// The Python for reference-SDK hooks (see `protocol::hooks_python`).
    pub hooks_python: String,
    /// This palaver binary, whose `palaver mcp` is tried (none: skipped).
    pub exe: Option<PathBuf>,
}

/// Runs every check, in order.
pub async fn run(input: &Input) -> Vec<Check> {
    let mut out = Vec::new();
    let key = identity(&input.data_dir, &mut out);
    out.push(data_dir(&input.data_dir));
    server_checks(input, key.as_ref(), &mut out).await;
    out.push(library(&input.data_dir));
    out.push(iroh_self().await);
    out.push(hooks_python(&input.hooks_python).await);
    out.push(mcp_stdio(input).await);
    out.push(mcp_http(input).await);
    out
}

/// `palaver mcp` on this data dir: started, initialized, its tools listed.
async fn mcp_stdio(input: &Input) -> Check {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let Some(exe) = &input.exe else {
        return Check::new("mcp", Status::Skipped, "the palaver binary was not found");
    };
    let child = tokio::process::Command::new(exe)
        .arg("--data-dir")
        .arg(&input.data_dir)
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return Check::new(
                "mcp",
                Status::Fail,
                format!("cannot start palaver mcp: {e}"),
            )
            .fix("reinstall palaver");
        }
    };
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Check::new("mcp", Status::Fail, "palaver mcp has no stdin/stdout");
    };
    let talk = async move {
        let hello = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"palaver doctor","version":"1"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            "\n",
        );
        stdin.write_all(hello.as_bytes()).await?;
        stdin.flush().await?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let mut tools = None;
        let mut version = None;
        while let Some(l) = lines.next_line().await? {
            let v: serde_json::Value = serde_json::from_str(&l).map_err(std::io::Error::other)?;
            match v.get("id").and_then(|i| i.as_i64()) {
                Some(1) => version = v["result"]["protocolVersion"].as_str().map(str::to_owned),
                Some(2) => {
                    tools = v["result"]["tools"].as_array().map(Vec::len);
                    break;
                }
                _ => {}
            }
        }
        drop(stdin);
        Ok::<_, std::io::Error>((version, tools))
    };
    let want = super::mcp::tool_count(true);
    match tokio::time::timeout(Duration::from_secs(10), talk).await {
        Ok(Ok((Some(v), Some(n)))) if n == want => Check::new(
            "mcp",
            Status::Ok,
            format!("palaver mcp answers over stdio: {n} tools (MCP {v})"),
        ),
        Ok(Ok((v, n))) => Check::new(
            "mcp",
            Status::Fail,
            format!("palaver mcp answered oddly: protocol {v:?}, {n:?} tools (want {want})"),
        ),
        Ok(Err(e)) => Check::new("mcp", Status::Fail, format!("palaver mcp: {e}")),
        Err(_) => Check::new(
            "mcp",
            Status::Fail,
            "palaver mcp did not answer within 10 s",
        ),
    }
}

/// The community server's MCP entry at `/mcp`: present (it asks for the
/// market's bearer token), or absent.
async fn mcp_http(input: &Input) -> Check {
    let Some(url) = &input.server else {
        return Check::new("mcp-http", Status::Skipped, "no server");
    };
    let Ok(client) = Client::new(url, KeyPair::generate()) else {
        return Check::new("mcp-http", Status::Skipped, "no usable server URL");
    };
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec();
    let headers = [("Content-Type".to_owned(), "application/json".to_owned())];
    match tokio::time::timeout(
        Duration::from_secs(10),
        client.send("POST", super::mcp::PATH, body, &headers),
    )
    .await
    {
        Ok(Ok((401, v))) if v.get("error").and_then(|e| e.as_str()) == Some("unauthorized") => {
            Check::new(
                "mcp-http",
                Status::Ok,
                format!(
                    "{url}{} answers (with the market's bearer token: palaver market token)",
                    super::mcp::PATH
                ),
            )
        }
        Ok(Ok((404, _))) => Check::new(
            "mcp-http",
            Status::Warn,
            format!(
                "{url} has no MCP entry at {} (no market, or not a palaver server)",
                super::mcp::PATH
            ),
        )
        .fix("use palaver mcp (stdio) instead; it reaches the market over REST"),
        Ok(Ok((status, _))) => Check::new(
            "mcp-http",
            Status::Warn,
            format!(
                "{url}{} answered HTTP {status} without a token: cannot tell",
                super::mcp::PATH
            ),
        ),
        Ok(Err(e)) => Check::new("mcp-http", Status::Warn, e.to_string()),
        Err(_) => Check::new(
            "mcp-http",
            Status::Warn,
            format!("{url} did not answer within 10 s"),
        ),
    }
}

fn identity(dir: &Path, out: &mut Vec<Check>) -> Option<KeyPair> {
    match KeyPair::load(dir) {
        Ok(k) => {
            out.push(Check::new(
                "identity",
                Status::Ok,
                format!("public key {}", k.public_key),
            ));
            Some(k)
        }
        Err(crate::identity::KeyError::Missing(p)) => {
            out.push(
                Check::new(
                    "identity",
                    Status::Fail,
                    format!("no key at {}", p.display()),
                )
                .fix("palaver init"),
            );
            None
        }
        Err(e) => {
            out.push(Check::new("identity", Status::Fail, e.to_string()).fix(
                "restore key.json from a backup, or make a new identity with `palaver init --force` \
                 (a new key is a new agent on the server)",
            ));
            None
        }
    }
}

fn data_dir(dir: &Path) -> Check {
    use std::os::unix::fs::PermissionsExt;
    const NAME: &str = "data dir";
    let meta = match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => m,
        Ok(_) => {
            return Check::new(
                NAME,
                Status::Fail,
                format!("{} is not a directory", dir.display()),
            )
            .fix("move it away and run `palaver init`");
        }
        Err(e) => {
            return Check::new(NAME, Status::Fail, format!("{}: {e}", dir.display()))
                .fix("palaver init");
        }
    };
    let probe = dir.join(".doctor-probe");
    if let Err(e) = std::fs::write(&probe, b"probe").and_then(|()| std::fs::remove_file(&probe)) {
        return Check::new(
            NAME,
            Status::Fail,
            format!("cannot write in {}: {e}", dir.display()),
        )
        .fix(format!("make it writable: chmod u+rwx {}", dir.display()));
    }
    let key = KeyPair::path(dir);
    if let Ok(m) = std::fs::metadata(&key)
        && m.permissions().mode() & 0o077 != 0
    {
        return Check::new(
            NAME,
            Status::Fail,
            format!(
                "{} is readable by others (mode {:o}): anyone on this machine can act as you",
                key.display(),
                m.permissions().mode() & 0o777
            ),
        )
        .fix(format!("chmod 600 {}", key.display()));
    }
    if meta.permissions().mode() & 0o002 != 0 {
        return Check::new(
            NAME,
            Status::Fail,
            format!(
                "{} is writable by everyone (mode {:o})",
                dir.display(),
                meta.permissions().mode() & 0o777
            ),
        )
        .fix(format!("chmod o-w {}", dir.display()));
    }
    Check::new(
        NAME,
        Status::Ok,
        format!("{} is writable and the key is private", dir.display()),
    )
}

async fn server_checks(input: &Input, key: Option<&KeyPair>, out: &mut Vec<Check>) {
    let Some(url) = &input.server else {
        out.push(
            Check::new("server", Status::Warn, "no community server configured").fix(
                "pass --server http://HOST:PORT, set PALAVER_SERVER or `server` in config.toml \
                 (or run one: palaver serve); the console without one runs its own",
            ),
        );
        for name in ["registered", "clock"] {
            out.push(Check::new(name, Status::Skipped, "no server"));
        }
        return;
    };
    // Without an identity a throwaway key still asks the public routes.
    let keys = key.cloned().unwrap_or_else(KeyPair::generate);
    let client = match Client::new(url, keys) {
        Ok(c) => c,
        Err(e) => {
            out.push(Check::new("server", Status::Fail, e.to_string()).fix(
                "use a URL such as http://127.0.0.1:8700 (--server, PALAVER_SERVER, config.toml)",
            ));
            for name in ["registered", "clock"] {
                out.push(Check::new(name, Status::Skipped, "no usable server URL"));
            }
            return;
        }
    };
    let start = Instant::now();
    let reach = tokio::time::timeout(
        Duration::from_secs(10),
        client.call("GET", "/api/v1/auth/challenge", None, &[200]),
    )
    .await;
    match reach {
        Ok(Ok(_)) => out.push(Check::new(
            "server",
            Status::Ok,
            format!("{url} answers ({} ms)", start.elapsed().as_millis()),
        )),
        Ok(Err(e)) => {
            out.push(
                Check::new("server", Status::Fail, e.to_string()).fix(format!(
                    "check that {url} is a palaver or aigenora community server and is running"
                )),
            );
            for name in ["registered", "clock"] {
                out.push(Check::new(name, Status::Skipped, "server not reachable"));
            }
            return;
        }
        Err(_) => {
            out.push(
                Check::new(
                    "server",
                    Status::Fail,
                    format!("{url} did not answer within 10 s"),
                )
                .fix("check the URL, the network, and that the server is running"),
            );
            for name in ["registered", "clock"] {
                out.push(Check::new(name, Status::Skipped, "server not reachable"));
            }
            return;
        }
    }
    out.push(match key {
        None => Check::new("registered", Status::Skipped, "no identity"),
        Some(k) => {
            let path = format!("/api/v1/agents/{}/stats", k.public_key);
            match client.raw("GET", &path, None).await {
                Ok((200, v)) => Check::new(
                    "registered",
                    Status::Ok,
                    format!(
                        "registered as {} (agent_id {})",
                        v.get("nickname").and_then(|n| n.as_str()).unwrap_or("?"),
                        v.get("agent_id").and_then(|n| n.as_str()).unwrap_or("?")
                    ),
                ),
                Ok((404, _)) => {
                    Check::new("registered", Status::Fail, "this key is not registered")
                        .fix("palaver register --nickname NAME")
                }
                Ok((status, _)) => Check::new(
                    "registered",
                    Status::Warn,
                    format!("the server answered HTTP {status} to {path}: cannot tell"),
                ),
                Err(e) => Check::new("registered", Status::Fail, e.to_string()),
            }
        }
    });
    out.push(match client.server_time("/api/v1/auth/challenge").await {
        Ok(Some(server)) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0);
            clock(server - now)
        }
        Ok(None) => Check::new(
            "clock",
            Status::Warn,
            "the server sends no Date header: skew unknown",
        ),
        Err(e) => Check::new("clock", Status::Fail, e.to_string()),
    });
}

/// The verdict on a clock `skew` (server minus local, seconds).
pub fn clock(skew: i64) -> Check {
    let detail = format!(
        "the server's clock is {}{}s {} this machine's",
        if skew == 0 { "" } else { "about " },
        skew.abs(),
        if skew < 0 { "behind" } else { "ahead of" }
    );
    if skew.abs() > MAX_SKEW {
        Check::new(
            "clock",
            Status::Fail,
            format!("{detail}: signed requests are refused beyond {MAX_SKEW}s"),
        )
        .fix("set this machine's clock (e.g. enable NTP: timedatectl set-ntp true)")
    } else if skew.abs() > 30 {
        Check::new("clock", Status::Warn, detail)
            .fix("set this machine's clock (e.g. enable NTP); beyond 300 s requests are refused")
    } else {
        Check::new("clock", Status::Ok, detail)
    }
}

fn library(dir: &Path) -> Check {
    const NAME: &str = "library";
    let lib = match Library::open(Some(dir)) {
        Ok(l) => l,
        Err(e) => {
            return Check::new(NAME, Status::Fail, e.to_string()).fix(format!(
                "repair or remove {}; `palaver init` writes the bundled index again",
                dir.join("protocols").join("index.json").display()
            ));
        }
    };
    let mut installed = 0usize;
    let mut bad = Vec::new();
    for e in lib.entries() {
        let Source::Installed(path) = &e.source else {
            continue;
        };
        installed += 1;
        match crate::spec::Spec::load(path) {
            Ok(s) if s.protocol_id() == e.protocol_id => {}
            Ok(s) => bad.push(format!(
                "{} hashes to {}, not {} as the index says",
                path.display(),
                s.protocol_id(),
                e.protocol_id
            )),
            Err(err) => bad.push(format!("{}: {err}", e.alias)),
        }
    }
    if bad.is_empty() {
        Check::new(
            NAME,
            Status::Ok,
            format!(
                "{} protocols ({} bundled, {installed} installed files, each hashing to its id)",
                lib.entries().len(),
                lib.entries().len() - installed
            ),
        )
    } else {
        Check::new(NAME, Status::Fail, bad.join("; ")).fix(
            "a changed spec is a different protocol: restore the file, or remove the protocol's \
             directory and fetch it again (palaver protocol fetch <protocol_id>)",
        )
    }
}

async fn iroh_self() -> Check {
    const NAME: &str = "iroh";
    let start = Instant::now();
    let attempt = async {
        let a = crate::net::bind(crate::net::Reach::Direct, None)
            .await
            .map_err(|e| format!("cannot bind an endpoint: {e}"))?;
        let b = crate::net::bind(crate::net::Reach::Direct, None)
            .await
            .map_err(|e| format!("cannot bind a second endpoint: {e}"))?;
        let ticket = crate::net::ticket(&a).await;
        let accept = crate::net::accept(&a, Duration::from_secs(10), &|_| {});
        let dial = async {
            let (link, ch) = crate::net::connect(&b, &ticket).await?;
            // The accepting side sees the stream once something is written.
            ch.tx
                .send_raw("{\"doctor\":1}".into())
                .await
                .map_err(|e| crate::net::NetError::Accept(e.to_string()))?;
            Ok::<_, crate::net::NetError>((link, ch))
        };
        let (accepted, dialled) = tokio::join!(accept, dial);
        let (_in_link, mut inbound) =
            accepted.map_err(|e| format!("the endpoint could not accept itself: {e}"))?;
        let _out = dialled.map_err(|e| format!("could not dial its own ticket: {e}"))?;
        let line = inbound
            .rx
            .recv_raw()
            .await
            .map_err(|e| format!("nothing arrived over its own connection: {e}"))?;
        if line.trim() != "{\"doctor\":1}" {
            return Err(format!("its own connection delivered {line:?}"));
        }
        crate::net::close(a).await;
        crate::net::close(b).await;
        Ok::<(), String>(())
    };
    match tokio::time::timeout(Duration::from_secs(15), attempt).await {
        Ok(Ok(())) => Check::new(
            NAME,
            Status::Ok,
            format!(
                "an endpoint bound and reached itself over loopback in {} ms",
                start.elapsed().as_millis()
            ),
        ),
        Ok(Err(e)) => Check::new(NAME, Status::Fail, e).fix(
            "check that UDP on loopback is allowed (a firewall, a sandbox without networking)",
        ),
        Err(_) => Check::new(NAME, Status::Fail, "no connection to itself within 15 s").fix(
            "check that UDP on loopback is allowed (a firewall, a sandbox without networking)",
        ),
    }
}

async fn hooks_python(python: &str) -> Check {
    const NAME: &str = "hooks python";
    let fix = format!(
        "only needed for hooks.py written for the reference client: python3 -m venv ~/.venvs/aigenora && \
         ~/.venvs/aigenora/bin/pip install aigenora==0.1.4, then hooks_python = \"…/bin/python\" in \
         config.toml (or PALAVER_HOOKS_PYTHON); now: {python}"
    );
    let run = tokio::process::Command::new(python)
        .args([
            "-c",
            "import importlib.metadata as m, aigenora; print(m.version('aigenora'))",
        ])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(20), run).await {
        Ok(Ok(o)) if o.status.success() => {
            let version = String::from_utf8_lossy(&o.stdout).trim().to_owned();
            if version == "0.1.4" {
                Check::new(NAME, Status::Ok, format!("{python} has aigenora {version}"))
            } else {
                Check::new(
                    NAME,
                    Status::Warn,
                    format!("{python} has aigenora {version}; the bridge is made for 0.1.4"),
                )
                .fix(fix)
            }
        }
        Ok(Ok(_)) => Check::new(
            NAME,
            Status::Warn,
            format!("{python} has no aigenora package"),
        )
        .fix(fix),
        Ok(Err(e)) => Check::new(NAME, Status::Warn, format!("cannot run {python}: {e}")).fix(fix),
        Err(_) => Check::new(
            NAME,
            Status::Warn,
            format!("{python} did not answer within 20 s"),
        )
        .fix(fix),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_verdicts_follow_the_servers_window() {
        assert_eq!(clock(0).status, Status::Ok);
        assert_eq!(clock(-12).status, Status::Ok);
        assert!(
            clock(-12).detail.contains("12s behind"),
            "{}",
            clock(-12).detail
        );
        assert_eq!(clock(45).status, Status::Warn);
        assert_eq!(clock(MAX_SKEW).status, Status::Warn);
        assert_eq!(clock(MAX_SKEW + 1).status, Status::Fail);
        assert!(clock(-4000).fix.is_some());
    }
}
