//! human-chat-v1 (free mode): the hooks only record what is said; they
//! never interpret it. The engine does the join/ready handshake and the
//! `chat`/`end` frames; outgoing text comes from the session's chat source.

use super::{last_event, str_field};
use crate::engine::{Ctx, Dir, HookError, Hooks, HostMetadata, Role};
use crate::json::{Map, Value};
use crate::obj;
use async_trait::async_trait;

/// Messages kept in the snapshot (the details log keeps all of them).
const RETAINED: usize = 200;

#[derive(Default)]
pub struct HumanChat {
    last_recv_seq: i64,
    messages: Vec<Value>,
}

impl HumanChat {
    fn append(&mut self, ctx: &Ctx, source: &str, seq: i64, text: &str) {
        self.messages.push(Value::Object(
            obj! { "seq" => seq, "from" => source, "text" => text },
        ));
        if self.messages.len() > RETAINED {
            let drop = self.messages.len() - RETAINED;
            self.messages.drain(..drop);
        }
        let preview: String = text.chars().take(60).collect();
        ctx.sink.snapshot(obj! {
            "messages" => self.messages.clone(),
            "last_event" => last_event(format!("{source}: {preview}"), obj! { "from" => source, "seq" => seq, "text" => text }),
        });
    }
}

#[async_trait]
impl Hooks for HumanChat {
    fn decision_schema(&self) -> Option<Map> {
        Some(obj! { "match_key" => "seq", "value_field" => "text", "free_text" => true })
    }

    fn host_metadata(&self) -> HostMetadata {
        HostMetadata {
            display_name: "Human Chat".into(),
            tags: "chat".into(),
            invite_type: "chat".into(),
            default_options: Map::new(),
        }
    }

    async fn init(&mut self, ctx: &Ctx) -> Result<(), HookError> {
        let peer = if ctx.role == Role::Host {
            "guest"
        } else {
            "host"
        };
        ctx.sink.snapshot(
            obj! { "phase" => "chatting", "messages" => Vec::<Value>::new(), "peer_role" => peer },
        );
        Ok(())
    }

    async fn on_message(&mut self, ctx: &Ctx, msg: &Map) {
        if str_field(msg, "action") != "chat" {
            return;
        }
        // Repeated or out-of-order sequence numbers are ignored.
        let Some(seq) = msg
            .get("seq")
            .and_then(Value::as_i64)
            .filter(|s| *s > self.last_recv_seq)
        else {
            return;
        };
        self.last_recv_seq = seq;
        let text = str_field(msg, "text").to_owned();
        self.append(ctx, "peer", seq, &text);
        ctx.sink
            .detail(obj! { "direction" => "recv", "seq" => seq, "text" => text });
    }

    async fn on_send(&mut self, ctx: &Ctx, msg: &Map) {
        let Some(seq) = msg.get("seq").and_then(Value::as_i64) else {
            return;
        };
        let text = str_field(msg, "text").to_owned();
        self.append(ctx, "self", seq, &text);
        ctx.sink
            .detail(obj! { "direction" => "sent", "seq" => seq, "text" => text });
    }

    async fn on_end(&mut self, ctx: &Ctx) {
        ctx.sink.snapshot(
            obj! { "phase" => "ended", "last_event" => last_event("Chat ended", Map::new()) },
        );
    }

    fn display(&self, msg: &Map, dir: Dir) -> Option<String> {
        match str_field(msg, "action") {
            "chat" => Some(format!(
                "{} {}",
                if dir == Dir::Sent { "you:" } else { "peer:" },
                str_field(msg, "text")
            )),
            "end" => Some("Chat ended".into()),
            _ => None,
        }
    }
}
