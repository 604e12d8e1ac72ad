//! A session's RSA key on its way: a spare from the pool (`spares`) or one
//! generated on its own thread. Above both the key (`keys`) and the pool,
//! which stores and takes keys.

use super::CryptoError;
use super::keys::RsaKey;
use super::spares;

/// A session RSA key being generated on its own thread (RSA-2048 key
/// generation takes a few hundred milliseconds): started while the side
/// waits for its peer, taken when the match needs it.
pub struct PendingKey {
    rx: tokio::sync::oneshot::Receiver<Result<RsaKey, CryptoError>>,
}

impl PendingKey {
    /// Starts generating a key now.
    pub fn start() -> PendingKey {
        PendingKey::start_in(None)
    }

    /// Takes a spare key from the pool of `data_dir` (see
    /// [`super::spares`]), else starts generating one; either way a refill
    /// of the pool is requested. Never waits for the pool.
    pub fn start_in(data_dir: Option<&std::path::Path>) -> PendingKey {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let data_dir = data_dir.map(std::path::Path::to_path_buf);
        let spawned = std::thread::Builder::new()
            .name("rsa-keygen".into())
            .spawn(move || {
                let key = spares::take(data_dir.as_deref(), 1).map(|mut keys| keys.remove(0));
                let _ = tx.send(key);
                if let Some(dir) = &data_dir {
                    spares::request_refill(dir);
                }
            });
        if let Err(e) = spawned {
            // No thread: the receiver sees the error instead of waiting.
            let (tx, rx2) = tokio::sync::oneshot::channel();
            let _ = tx.send(Err(CryptoError::Rsa(format!(
                "cannot start RSA key generation: {e}"
            ))));
            return PendingKey { rx: rx2 };
        }
        PendingKey { rx }
    }

    /// A key generated already.
    pub fn ready(key: RsaKey) -> PendingKey {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let _ = tx.send(Ok(key));
        PendingKey { rx }
    }

    /// The key, once generated.
    pub async fn wait(self) -> Result<RsaKey, CryptoError> {
        self.rx
            .await
            .unwrap_or_else(|_| Err(CryptoError::Rsa("RSA key generation stopped".into())))
    }
}
