//! Running one turn: spawning the agent CLI in its own process group,
//! feeding it the prompt, reading its output under size, time and cancel
//! limits, and finding the executable on PATH.

use super::config::{AgentKind, Placeholders, build_argv};
use super::output::{CodexEvent, codex_event};
use super::{Coach, CoachError};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The most bytes one reply may hold before further lines are dropped.
const MAX_REPLY_BYTES: usize = 1 << 20;
/// The most bytes of one line of the agent's output (stdout or stderr)
/// kept; the rest of a longer line is read and dropped.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The most bytes the agent may write to stdout in one turn; past this it
/// is stopped and the turn fails ([`CoachError::TooMuchOutput`]).
pub const MAX_STDOUT_BYTES: usize = 64 << 20;
/// The most bytes of the agent's stderr kept for an error message (the
/// rest is read and dropped).
const MAX_STDERR_KEPT: usize = 64 << 10;
/// How long the end of stdout and of stderr is awaited once the agent has
/// exited (a process it left behind outside its group may hold them open).
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

impl Coach {
    pub(super) async fn run_once(
        &self,
        prompt: &str,
        resume: Option<String>,
        on_line: &mut (dyn FnMut(&str) + Send),
        cancel: std::pin::Pin<&mut (dyn Future<Output = ()> + Send)>,
    ) -> Result<String, CoachError> {
        let template = if resume.is_some() {
            &self.config.resume_command
        } else {
            &self.config.new_command
        };
        let session_id = match &resume {
            Some(id) => id.clone(),
            None if template.contains("{session_id}") => {
                let id = new_uuid();
                self.save_session(&id)?;
                id
            }
            None => String::new(),
        };
        let output_file = self.dir.join("last-message.md");
        // A stale reply must not be read as this turn's; absent is fine.
        let _ = std::fs::remove_file(&output_file);
        let skill_file = self.instructions_path().to_string_lossy().into_owned();
        let skill_text = self.instructions();
        let out_s = output_file.to_string_lossy().into_owned();
        let argv = build_argv(
            template,
            &Placeholders {
                session_id: &session_id,
                prompt,
                coach_skill_text: Some(&skill_text),
                coach_skill_file: Some(&skill_file),
                coach_output_file: Some(&out_s),
            },
        )
        .map_err(CoachError::Template)?;
        let Some(binary) = argv.first() else {
            return Err(CoachError::Template("the command is empty".into()));
        };
        let Some(exe) = which(binary) else {
            return Err(CoachError::Missing {
                binary: binary.clone(),
                agent: self.config.agent.name(),
            });
        };
        let stdin_prompt = !template.contains("{prompt}");
        let codex_json =
            self.config.agent == AgentKind::Codex && argv.iter().any(|a| a == "--json");
        let mut cmd = tokio::process::Command::new(&exe);
        cmd.args(&argv[1..])
            .current_dir(self.workspace())
            .stdin(if stdin_prompt {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CoachError::Missing {
                    binary: binary.clone(),
                    agent: self.config.agent.name(),
                });
            }
            Err(e) => return Err(e.into()),
        };
        let pgid = child.id();
        let guard = GroupGuard(pgid);
        if let Some(mut stdin) = child.stdin.take() {
            let p = prompt.as_bytes().to_vec();
            tokio::spawn(async move {
                let _ = stdin.write_all(&p).await;
                let _ = stdin.shutdown().await;
            });
        }
        let stderr = child.stderr.take().map(|e| {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut r = BufReader::new(e);
                let mut line = Vec::new();
                while let Ok(n) =
                    read_line_capped(&mut r, &mut line, MAX_LINE_BYTES, usize::MAX).await
                {
                    if n == 0 {
                        break;
                    }
                    if buf.len() < MAX_STDERR_KEPT {
                        let room = MAX_STDERR_KEPT - buf.len();
                        buf.extend_from_slice(&line[..line.len().min(room)]);
                    }
                    line.clear();
                }
                String::from_utf8_lossy(&buf).trim().to_owned()
            })
        });
        let Some(stdout) = child.stdout.take() else {
            return Err(CoachError::Io("no stdout".into()));
        };
        let mut lines = BufReader::new(stdout);
        let mut collected: Vec<String> = Vec::new();
        let mut size = 0usize;
        let mut total = 0usize;
        let mut discovered: Option<String> = None;
        let mut structured_errors: Vec<String> = Vec::new();
        let read_all = async {
            let mut raw = Vec::new();
            loop {
                raw.clear();
                let budget = MAX_STDOUT_BYTES + 1 - total;
                match read_line_capped(&mut lines, &mut raw, MAX_LINE_BYTES, budget).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => total += n,
                }
                if total > MAX_STDOUT_BYTES {
                    return Err(CoachError::TooMuchOutput(MAX_STDOUT_BYTES));
                }
                let line = String::from_utf8_lossy(&raw);
                let line = line.trim_end_matches(['\n', '\r']);
                let chunk = if codex_json {
                    match codex_event(line) {
                        CodexEvent::Thread(id) => {
                            discovered = Some(id);
                            continue;
                        }
                        CodexEvent::Error(e) => {
                            structured_errors.push(e);
                            continue;
                        }
                        CodexEvent::Text(t) => t,
                        CodexEvent::Other => continue,
                    }
                } else {
                    line.to_owned()
                };
                if size > MAX_REPLY_BYTES {
                    continue;
                }
                size += chunk.len() + 1;
                on_line(&chunk);
                collected.push(chunk);
            }
            Ok::<(), CoachError>(())
        };
        // Stdout to its end and the agent's exit. Once the agent has
        // exited, its output is in the pipe: read on for at most
        // OUTPUT_GRACE (a process it left outside its group may hold
        // stdout open for ever).
        let read = async {
            tokio::pin!(read_all);
            let exited = tokio::select! {
                r = &mut read_all => {
                    r?;
                    None
                }
                s = child.wait() => Some(s?),
            };
            match exited {
                None => child.wait().await.map_err(CoachError::from),
                Some(status) => {
                    if let Ok(r) = tokio::time::timeout(OUTPUT_GRACE, &mut read_all).await {
                        r?;
                    }
                    Ok(status)
                }
            }
        };
        let status = tokio::select! {
            s = read => s?,
            _ = tokio::time::sleep(self.config.timeout) => {
                drop(guard);
                return Err(CoachError::Timeout(self.config.timeout));
            }
            _ = cancel => {
                drop(guard);
                return Err(CoachError::Cancelled);
            }
        };
        // The CLI is done; anything it left in its group goes with it.
        drop(guard);
        let err = match stderr {
            Some(h) => {
                let abort = h.abort_handle();
                match tokio::time::timeout(OUTPUT_GRACE, h).await {
                    Ok(r) => r.unwrap_or_default(),
                    Err(_) => {
                        abort.abort();
                        String::new()
                    }
                }
            }
            None => String::new(),
        };
        if !status.success() {
            let code = status
                .code()
                .map(|c| format!("status {c}"))
                .unwrap_or_else(|| "a signal".into());
            let stderr = if err.is_empty() {
                structured_errors.join("\n")
            } else {
                err
            };
            return Err(CoachError::Failed { code, stderr });
        }
        let mut reply = String::new();
        if codex_json {
            reply = std::fs::read_to_string(&output_file)
                .unwrap_or_default()
                .trim()
                .to_owned();
        }
        // Read already; the next turn removes it before it runs anyway.
        let _ = std::fs::remove_file(&output_file);
        if reply.is_empty() {
            reply = collected.join("\n").trim().to_owned();
        }
        if reply.is_empty() {
            let why = if err.is_empty() {
                structured_errors.join("\n")
            } else {
                err
            };
            return Err(CoachError::Empty(why));
        }
        if let Some(id) = discovered {
            self.save_session(&id)?;
        }
        Ok(reply)
    }
}

/// Reads one line (up to and including its `\n`) from `r` into `line`,
/// keeping at most `keep` bytes of it and dropping the rest; stops early
/// after `budget` bytes. Returns the bytes read (0 at the end of input).
/// Nothing is allocated past `keep`, however long the line.
async fn read_line_capped<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    line: &mut Vec<u8>,
    keep: usize,
    budget: usize,
) -> std::io::Result<usize> {
    let mut read = 0usize;
    while read < budget {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            break;
        }
        let (n, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let n = n.min(budget - read);
        let room = keep.saturating_sub(line.len());
        line.extend_from_slice(&buf[..n.min(room)]);
        r.consume(n);
        read += n;
        if end {
            break;
        }
    }
    Ok(read)
}

/// Kills the turn's process group when dropped (timeout, cancel, the end of
/// the turn, the future dropped).
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The executable `name` stands for: a path as given, else the first match
/// on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_exe = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if name.is_empty() {
        return None;
    }
    if name.contains('/') {
        // Absolute, so the turn's working directory does not change it.
        let p = std::fs::canonicalize(name).ok()?;
        return is_exe(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_exe(p))
}

fn new_uuid() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}
