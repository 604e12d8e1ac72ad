//! The community identity: an Ed25519 key pair in `<data_dir>/key.json`,
//! in the reference's format (`{"public_key":<64 hex>,"private_key":<64
//! hex seed>}`, mode 0600). Signatures are 128 lowercase hex characters
//! over the raw message bytes.

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier};
use std::path::{Path, PathBuf};

/// Why a key could not be loaded or made.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("no identity at {0}: run `palaver init` first")]
    Missing(PathBuf),
    #[error("{}: {msg}", path.display())]
    Invalid { path: PathBuf, msg: String },
    #[error("cannot write {}: {err}", path.display())]
    Write { path: PathBuf, err: std::io::Error },
}

/// An identity key pair.
#[derive(Clone)]
pub struct KeyPair {
    signing: SigningKey,
    /// Lowercase hex of the 32-byte public key.
    pub public_key: String,
}

impl std::fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyPair")
            .field("public_key", &self.public_key)
            .finish_non_exhaustive()
    }
}

/// Exactly `N` bytes from `2N` hex digits (either case).
fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    hex::decode_to_slice(s, &mut out).ok()?;
    Some(out)
}

impl KeyPair {
    /// A new random key pair.
    pub fn generate() -> KeyPair {
        KeyPair::from_seed(rand::random::<[u8; 32]>())
    }

    pub fn from_seed(seed: [u8; 32]) -> KeyPair {
        let signing = SigningKey::from_bytes(&seed);
        let public_key = hex::encode(signing.verifying_key().as_bytes());
        KeyPair {
            signing,
            public_key,
        }
    }

    /// Signs `msg`: 128 lowercase hex characters.
    pub fn sign(&self, msg: &[u8]) -> String {
        hex::encode(self.signing.sign(msg).to_bytes())
    }

    /// The key's X25519 secret for sealed messages: the first 32 bytes of
    /// SHA-512 of the seed (RFC 8032's secret scalar before clamping; the
    /// X25519 multiplication clamps it).
    pub fn agreement_secret(&self) -> [u8; 32] {
        self.signing.to_scalar_bytes()
    }

    /// The private seed as hex (for key.json).
    pub fn private_hex(&self) -> String {
        hex::encode(self.signing.as_bytes())
    }

    /// The key file of a data dir.
    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join("key.json")
    }

    /// Loads key.json (accepting the reference's `peer_id` alias).
    pub fn load(data_dir: &Path) -> Result<KeyPair, KeyError> {
        let path = KeyPair::path(data_dir);
        if !path.exists() {
            return Err(KeyError::Missing(path));
        }
        let invalid = |msg: &str| KeyError::Invalid {
            path: path.clone(),
            msg: msg.to_owned(),
        };
        let v = crate::spec::read_json_file(&path).map_err(|e| invalid(&e.to_string()))?;
        let public = v
            .get("public_key")
            .or_else(|| v.get("peer_id"))
            .and_then(|v| v.as_str())
            .map(str::to_lowercase);
        let private = v
            .get("private_key")
            .and_then(|v| v.as_str())
            .map(str::to_lowercase);
        let seed = private
            .as_deref()
            .and_then(unhex::<32>)
            .ok_or_else(|| invalid("private_key must be 64 hex chars"))?;
        let kp = KeyPair::from_seed(seed);
        match public {
            Some(p) if p == kp.public_key => Ok(kp),
            Some(_) => Err(invalid("public_key does not belong to private_key")),
            None => Err(invalid("public_key must be 64 hex chars")),
        }
    }

    /// Loads key.json, or creates it (always with `force`).
    pub fn init(data_dir: &Path, force: bool) -> Result<(KeyPair, bool), KeyError> {
        if !force && KeyPair::path(data_dir).exists() {
            return KeyPair::load(data_dir).map(|k| (k, false));
        }
        let kp = KeyPair::generate();
        let path = KeyPair::path(data_dir);
        let text = format!(
            r#"{{"public_key":"{}","private_key":"{}"}}"#,
            kp.public_key,
            kp.private_hex()
        );
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(data_dir)?;
            // Created private, then moved into place: never readable by others.
            let tmp = data_dir.join(".key.json.tmp");
            {
                use std::io::Write;
                use std::os::unix::fs::OpenOptionsExt;
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode(0o600)
                    .open(&tmp)?;
                f.write_all(text.as_bytes())?;
                f.sync_all()?;
            }
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|err| KeyError::Write {
            path: path.clone(),
            err,
        })?;
        Ok((kp, true))
    }
}

/// Verifies a hex signature by a hex public key over `msg`.
///
/// Each thread remembers the last few keys it read (a key is a point to
/// decompress) and the last few short messages it accepted with their key
/// and signature: the same signature checked again (every replica of a room
/// run in one process checks the same checkpoint certificate) is answered
/// from memory. Only exact repeats are: any other byte verifies afresh.
pub fn verify(public_key_hex: &str, msg: &[u8], signature_hex: &str) -> bool {
    let (Some(pk), Some(sig)) = (unhex::<32>(public_key_hex), unhex::<64>(signature_hex)) else {
        return false;
    };
    let remember = msg.len() <= MAX_REMEMBERED_MESSAGE;
    if remember && seen::accepted(&pk, &sig, msg) {
        return true;
    }
    let Some(vk) = seen::key(&pk) else {
        return false;
    };
    let ok = vk.verify(msg, &Signature::from_bytes(&sig)).is_ok();
    if ok && remember {
        seen::accept(pk, sig, msg);
    }
    ok
}

/// The longest message whose accepted signature [`verify`] remembers.
const MAX_REMEMBERED_MESSAGE: usize = 1024;

/// What [`verify`] remembers, per thread.
mod seen {
    use ed25519_dalek::VerifyingKey;
    use std::cell::RefCell;

    /// Keys and accepted signatures remembered (the oldest goes first).
    const SLOTS: usize = 8;

    struct Accepted {
        key: [u8; 32],
        sig: [u8; 64],
        msg: Box<[u8]>,
    }

    thread_local! {
        static KEYS: RefCell<Vec<([u8; 32], VerifyingKey)>> = const { RefCell::new(Vec::new()) };
        static ACCEPTED: RefCell<Vec<Accepted>> = const { RefCell::new(Vec::new()) };
    }

    /// Keeps `item` among the last [`SLOTS`].
    fn push<T>(list: &mut Vec<T>, item: T) {
        if list.len() >= SLOTS {
            list.remove(0);
        }
        list.push(item);
    }

    /// The key, decompressed (`None`: no point on the curve).
    pub(super) fn key(pk: &[u8; 32]) -> Option<VerifyingKey> {
        KEYS.with_borrow_mut(|keys| {
            if let Some((_, vk)) = keys.iter().find(|(k, _)| k == pk) {
                return Some(*vk);
            }
            let vk = VerifyingKey::from_bytes(pk).ok()?;
            push(keys, (*pk, vk));
            Some(vk)
        })
    }

    pub(super) fn accepted(key: &[u8; 32], sig: &[u8; 64], msg: &[u8]) -> bool {
        ACCEPTED.with_borrow(|list| {
            list.iter()
                .any(|a| &a.sig == sig && &a.key == key && *a.msg == *msg)
        })
    }

    pub(super) fn accept(key: [u8; 32], sig: [u8; 64], msg: &[u8]) {
        ACCEPTED.with_borrow_mut(|list| {
            push(
                list,
                Accepted {
                    key,
                    sig,
                    msg: msg.into(),
                },
            )
        });
    }
}

/// Is this 64 lowercase hex characters?
pub fn is_key_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc8032_test_vector_1() {
        let seed = unhex::<32>("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
            .unwrap();
        let kp = KeyPair::from_seed(seed);
        assert_eq!(
            kp.public_key,
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
        );
        assert_eq!(
            kp.sign(b""),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        );
        assert!(verify(&kp.public_key, b"", &kp.sign(b"")));
        assert!(!verify(&kp.public_key, b"x", &kp.sign(b"")));
    }

    #[test]
    fn a_remembered_signature_answers_only_its_exact_repeat() {
        let kp = KeyPair::generate();
        let other = KeyPair::generate();
        let sig = kp.sign(b"certificate");
        for _ in 0..3 {
            assert!(verify(&kp.public_key, b"certificate", &sig));
        }
        assert!(!verify(&kp.public_key, b"certificatE", &sig));
        assert!(!verify(&other.public_key, b"certificate", &sig));
        let mut bad = sig.clone().into_bytes();
        bad[0] = if bad[0] == b'0' { b'1' } else { b'0' };
        assert!(!verify(
            &kp.public_key,
            b"certificate",
            std::str::from_utf8(&bad).unwrap()
        ));
        // Pushed out by newer ones, it verifies afresh, the same way.
        for i in 0..20 {
            let m = format!("m{i}");
            assert!(verify(&kp.public_key, m.as_bytes(), &kp.sign(m.as_bytes())));
        }
        assert!(verify(&kp.public_key, b"certificate", &sig));
        assert!(!verify(&"00".repeat(32), b"certificate", &sig));
    }

    #[test]
    fn key_file_round_trips_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let (a, created) = KeyPair::init(d.path(), false).unwrap();
        assert!(created);
        let (b, created) = KeyPair::init(d.path(), false).unwrap();
        assert!(!created);
        assert_eq!(a.public_key, b.public_key);
        let mode = std::fs::metadata(KeyPair::path(d.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let (c, _) = KeyPair::init(d.path(), true).unwrap();
        assert_ne!(a.public_key, c.public_key);
    }
}
