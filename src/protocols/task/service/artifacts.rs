//! The artifact transfer of the task service: offers answered with what
//! the host still needs, chunks stored and acknowledged, each file verified
//! before a task's inputs are unpacked, and results pulled back by chunk.

use super::super::store::{Artifact, now_ms};
use super::super::transfer::{self, FileEntry};
use super::*;
use crate::json::{Map, Number, Value};
use crate::obj;
use std::path::PathBuf;

impl TaskService {
    pub(super) fn staging(&self, source: &str, task_id: &str, artifact_id: &str) -> PathBuf {
        self.store.task_root(source, task_id).join("in").join(
            // Artifact ids are spec ids; one that is not a single safe path
            // component (`..`, `.`) gets a directory of its own name's hash.
            match transfer::safe_rel_path(artifact_id) {
                Ok(p) if !p.is_empty() && !p.contains('/') => p,
                _ => crate::json::canonical::sha256_hex(artifact_id.as_bytes()),
            },
        )
    }

    pub(super) fn files_answer(
        a: &Artifact,
        complete: impl Fn(&FileEntry, &[u64]) -> bool,
    ) -> Vec<Value> {
        a.files
            .iter()
            .map(|f| {
                let mut got = a.received_for(&f.path).to_vec();
                got.sort_unstable();
                let done = complete(f, &got);
                Value::Object(obj! {
                    "path" => f.path.as_str(),
                    "received_chunks" => got.into_iter().map(Value::from).collect::<Vec<_>>(),
                    "complete" => done,
                })
            })
            .collect()
    }

    pub(super) fn on_artifact_offer(&mut self, msg: &Map, source: &str) -> Answer {
        let task = self.require(msg, source)?;
        let artifact_id = s(msg, "artifact_id");
        let kind = msg
            .get("artifact_kind")
            .map(Value::py_str)
            .unwrap_or_else(|| "input".into());
        let files = match msg.get("files") {
            Some(Value::Array(f)) if !f.is_empty() => f,
            _ => {
                return Err(ServiceError::new(
                    Code::Internal,
                    "artifact files must be a non-empty array",
                ));
            }
        };
        if files.len() > transfer::MAX_MANIFEST_FILES {
            return Err(ServiceError::new(Code::Internal, "manifest page too large"));
        }
        let mut normalized: Vec<FileEntry> = Vec::with_capacity(files.len());
        let mut total: u128 = 0;
        for entry in files {
            let unsafe_ = |why: &str| ServiceError::new(Code::PathUnsafe, why.to_owned());
            let Some(e) = entry.as_object() else {
                return Err(unsafe_("entry must be an object"));
            };
            let path = transfer::safe_rel_path(&s(e, "path")).map_err(|r| unsafe_(r.0))?;
            if normalized.iter().any(|n| n.path == path) {
                return Err(unsafe_("duplicate path in manifest"));
            }
            let size = match e.get("size") {
                Some(Value::Number(Number::Int(i))) if *i >= 0 => *i as u64,
                // Past 64 bits: a size no disk has.
                Some(Value::Number(Number::BigInt(b))) if !b.starts_with('-') => {
                    return Err(ServiceError::new(
                        Code::StorageFull,
                        "file size beyond 64 bits",
                    ));
                }
                _ => return Err(unsafe_("bad size")),
            };
            let Some(sha) = e.get("sha256").and_then(Value::as_str) else {
                return Err(unsafe_("bad sha256"));
            };
            total += u128::from(size);
            normalized.push(FileEntry {
                path,
                size,
                sha256: sha.to_owned(),
            });
        }
        let free = self.free_space();
        if free < total.saturating_add(MIN_FREE_BYTES) {
            return Err(ServiceError::new(
                Code::StorageFull,
                format!("free={free} need={total}"),
            ));
        }
        let existing = self
            .store
            .get_artifact(source, &task.task_id, &artifact_id)?;
        if let Some(old) = existing
            .filter(|a| a.files == normalized && matches!(a.state.as_str(), "partial" | "complete"))
        {
            // A re-offer after a reconnect: what arrived is kept, so the
            // guest sends only the missing chunks.
            self.store.append_event(
                source,
                &task.task_id,
                "artifact_reoffered",
                &format!("artifact {artifact_id} offered again; received chunks kept"),
            )?;
            if old.state == "complete" {
                self.maybe_inputs_ready(source, &task.task_id)?;
            }
            return Ok(obj! {
                "action" => "artifact_ack", "task_id" => task.task_id.as_str(),
                "artifact_id" => artifact_id.as_str(), "artifact_state" => old.state.as_str(),
                "files" => Self::files_answer(&old, |f, got| transfer::chunk_count(f.size) <= got.len() as u64),
            });
        }
        let staging = self.staging(source, &task.task_id, &artifact_id);
        // Empty files get no chunks: they exist at once, so the file check
        // can pass.
        for f in normalized.iter().filter(|f| f.size == 0) {
            let target = staging.join(&f.path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
            }
            if std::fs::symlink_metadata(&target).is_err() {
                std::fs::write(&target, b"")?;
            }
        }
        let n = normalized.len();
        let a =
            self.store
                .upsert_artifact(source, &task.task_id, &artifact_id, &kind, normalized)?;
        self.store.append_event(
            source,
            &task.task_id,
            "artifact_offered",
            &format!("artifact {artifact_id} offered with {n} files"),
        )?;
        Ok(obj! {
            "action" => "artifact_ack", "task_id" => task.task_id.as_str(),
            "artifact_id" => artifact_id.as_str(), "artifact_state" => "partial",
            "files" => Self::files_answer(&a, |_, _| false),
        })
    }

    pub(super) fn on_artifact_put(&mut self, msg: &Map, source: &str) -> Answer {
        let task = self.require(msg, source)?;
        let artifact_id = s(msg, "artifact_id");
        let Some(mut art) = self
            .store
            .get_artifact(source, &task.task_id, &artifact_id)?
        else {
            return Err(ServiceError::new(Code::ArtifactUnknown, "unknown artifact"));
        };
        let chunks = match msg.get("chunks") {
            Some(Value::Array(c)) if !c.is_empty() => c,
            _ => {
                return Err(ServiceError::new(
                    Code::Internal,
                    "chunks must be a non-empty array",
                ));
            }
        };
        if chunks.len() > transfer::MAX_BATCH_CHUNKS {
            return Err(ServiceError::new(Code::Internal, "chunk batch too large"));
        }
        let staging = self.staging(source, &task.task_id, &artifact_id);
        for c in chunks {
            let chunk = transfer::validate_chunk(c, &art.files)
                .map_err(|r| ServiceError::new(Code::PathUnsafe, r.0))?;
            transfer::write_chunk(&staging, &chunk.path, chunk.offset, &chunk.raw)
                .map_err(|e| ServiceError::new(Code::PathUnsafe, format!("write: {e}")))?;
            let idx = chunk.offset / transfer::CHUNK_SIZE;
            match art.received.iter_mut().find(|(p, _)| *p == chunk.path) {
                Some((_, list)) if !list.contains(&idx) => list.push(idx),
                Some(_) => {}
                None => art.received.push((chunk.path, vec![idx])),
            }
        }
        let mut state = "partial";
        let mut all_complete = true;
        let mut answer = Vec::with_capacity(art.files.len());
        for f in &art.files {
            let mut got = art.received_for(&f.path).to_vec();
            got.sort_unstable();
            let mut complete = got.len() as u64 >= transfer::chunk_count(f.size);
            if complete && !transfer::verify_staged(&staging, f) {
                state = "verified_failed";
                complete = false;
                self.store.append_event(
                    source,
                    &task.task_id,
                    "artifact_corrupt",
                    &format!("file {} does not match its sha256", f.path),
                )?;
            }
            all_complete &= complete;
            answer.push(Value::Object(obj! {
                "path" => f.path.as_str(),
                "received_chunks" => got.into_iter().map(Value::from).collect::<Vec<_>>(),
                "complete" => complete,
            }));
        }
        if all_complete && state != "verified_failed" {
            state = "complete";
        }
        art.state = state.to_owned();
        art.updated_at = now_ms();
        self.store.put_artifact(source, &task.task_id, &art)?;
        if state == "complete" {
            self.store.append_event(
                source,
                &task.task_id,
                "artifact_complete",
                &format!("artifact {artifact_id} received and verified"),
            )?;
            self.maybe_inputs_ready(source, &task.task_id)?;
        }
        Ok(obj! {
            "action" => "artifact_ack", "task_id" => task.task_id.as_str(),
            "artifact_id" => artifact_id.as_str(), "artifact_state" => state, "files" => answer,
        })
    }

    /// Once every declared input artifact is in and verified, unpacks them
    /// into the workspace and queues the task.
    pub(super) fn maybe_inputs_ready(
        &mut self,
        source: &str,
        task_id: &str,
    ) -> Result<(), ServiceError> {
        let Some(task) = self.store.get_task(source, task_id)? else {
            return Ok(());
        };
        if !matches!(task.state.as_str(), "received" | "waiting_inputs") {
            return Ok(());
        }
        let inputs: Vec<Artifact> = self
            .store
            .list_artifacts(source, task_id)?
            .into_iter()
            .filter(|a| a.artifact_kind == "input")
            .collect();
        if inputs.is_empty() {
            return Ok(());
        }
        if let Some(declared) = &task.input_manifest {
            let declared_ids: Vec<String> = declared
                .get("artifacts")
                .and_then(Value::as_array)
                .map(|arts| {
                    arts.iter()
                        .filter_map(Value::as_object)
                        .map(|a| {
                            a.get("artifact_id")
                                .map(Value::py_str)
                                .unwrap_or_else(|| "None".into())
                        })
                        .collect()
                })
                .unwrap_or_default();
            if !declared_ids
                .iter()
                .all(|id| inputs.iter().any(|a| &a.artifact_id == id))
            {
                return Ok(());
            }
        }
        if inputs.iter().any(|a| a.state != "complete") {
            return Ok(());
        }
        let workspace = self.store.task_root(source, task_id).join("workspace");
        for a in &inputs {
            let staging = self.staging(source, task_id, &a.artifact_id);
            for f in &a.files {
                let dest = workspace.join(&f.path);
                if let Some(parent) = dest.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                if let Ok(m) = std::fs::symlink_metadata(&dest)
                    && !m.is_dir()
                {
                    std::fs::remove_file(&dest)?;
                }
                std::fs::copy(staging.join(&f.path), &dest)?;
            }
        }
        self.store.transition(
            source,
            task_id,
            "queued",
            Some(("inputs_ready", "every input artifact verified and unpacked")),
            |_| {},
        )?;
        Ok(())
    }

    pub(super) fn on_artifact_pull(&mut self, msg: &Map, source: &str) -> Answer {
        let task = self.require(msg, source)?;
        let artifact_id = msg
            .get("artifact_id")
            .map(Value::py_str)
            .unwrap_or_else(|| "result".into());
        let cursor = msg
            .get("cursor")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let root = self.store.task_root(source, &task.task_id);
        let (files, root) = if artifact_id == "result" {
            let Some(manifest) = task.result_manifest.as_ref() else {
                return Err(ServiceError::new(
                    Code::ArtifactIncomplete,
                    "no result manifest yet",
                ));
            };
            let files = manifest
                .get("files")
                .and_then(Value::as_array)
                .map(|f| f.iter().filter_map(FileEntry::from_value).collect())
                .unwrap_or_default();
            (files, root.join("out"))
        } else {
            let Some(a) = self
                .store
                .get_artifact(source, &task.task_id, &artifact_id)?
            else {
                return Err(ServiceError::new(Code::ArtifactUnknown, "unknown artifact"));
            };
            if a.state != "complete" {
                return Err(ServiceError::new(
                    Code::ArtifactIncomplete,
                    "artifact not verified",
                ));
            }
            (a.files, self.staging(source, &task.task_id, &artifact_id))
        };
        let paths = match msg.get("paths") {
            Some(Value::Array(p)) if !p.is_empty() => p,
            _ => {
                return Err(ServiceError::new(
                    Code::Internal,
                    "pull paths must be a non-empty array",
                ));
            }
        };
        let mut batch: Vec<Value> = Vec::new();
        let mut new_cursor = cursor.clone();
        let mut done = true;
        for p in paths {
            let safe = transfer::safe_rel_path(&p.py_str())
                .map_err(|r| ServiceError::new(Code::PathUnsafe, r.0))?;
            let Some(entry) = files.iter().find(|f| f.path == safe) else {
                return Err(ServiceError::new(
                    Code::PathUnsafe,
                    "path not in the artifact manifest",
                ));
            };
            let start = match cursor.get(&safe) {
                None => 0,
                Some(v) => match crate::protocols::as_int(v) {
                    Some(i) => u64::try_from(i).unwrap_or(0),
                    None => return Err(ServiceError::new(Code::Internal, "cursor is no integer")),
                },
            };
            let total = transfer::chunk_count(entry.size);
            let mut idx = start;
            while idx < total && batch.len() < transfer::PULL_BATCH_CHUNKS {
                match transfer::encode_chunk(&root, entry, idx)? {
                    Some(c) => batch.push(Value::Object(c)),
                    None => break,
                }
                idx += 1;
            }
            new_cursor.insert(safe.as_str(), Value::from(idx));
            if idx < total {
                done = false;
            }
        }
        Ok(obj! {
            "action" => "artifact_data", "task_id" => task.task_id.as_str(),
            "artifact_id" => artifact_id.as_str(), "chunks" => batch,
            "cursor" => new_cursor, "done" => done,
        })
    }
}
