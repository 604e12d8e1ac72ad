//! The community the console talks to: a signed client, and how sessions
//! on it reach their peers.

use crate::identity::KeyPair;
use crate::services::remote::PeerOpts;
use crate::web::Client;
use std::path::Path;

/// The community the console talks to.
#[derive(Clone)]
pub struct Community {
    pub client: Client,
    pub url: String,
    pub embedded: bool,
    pub nickname: String,
    /// Direct loopback reach on the embedded community; relays otherwise
    /// (config.toml's `relay_url`, else n0's), as `palaver host`/`join`.
    pub peer: PeerOpts,
}

impl Community {
    /// A client for `url` with this machine's identity; `relays` are
    /// config.toml's `relay_url` (empty: n0's relays and discovery).
    pub fn connect(
        url: &str,
        embedded: bool,
        nickname: &str,
        data_dir: &Path,
        relays: &[iroh::RelayUrl],
    ) -> Result<Community, String> {
        let keys = KeyPair::load(data_dir).map_err(|e| e.to_string())?;
        Ok(Community::connect_with(url, embedded, nickname, keys)?.with_relays(relays))
    }

    /// A client for `url` with the identity `keys` (n0's relays off the
    /// embedded community; [`Community::with_relays`] names others).
    pub fn connect_with(
        url: &str,
        embedded: bool,
        nickname: &str,
        keys: KeyPair,
    ) -> Result<Community, String> {
        let client = Client::new(url, keys).map_err(|e| e.to_string())?;
        Ok(Community {
            client,
            url: url.to_owned(),
            embedded,
            nickname: nickname.to_owned(),
            peer: peer_opts(embedded, &[]),
        })
    }

    /// The same community, its sessions reaching peers through `relays`.
    pub fn with_relays(mut self, relays: &[iroh::RelayUrl]) -> Community {
        self.peer = peer_opts(self.embedded, relays);
        self
    }
}

/// How sessions on a community reach their peers: direct on loopback for
/// the embedded one (it lives on this machine: relays are not used, as
/// `--direct` overrides `--relay` on the CLI); otherwise `relays`, or n0's
/// relays and discovery when there are none.
pub fn peer_opts(embedded: bool, relays: &[iroh::RelayUrl]) -> PeerOpts {
    if embedded {
        PeerOpts::direct()
    } else {
        PeerOpts {
            relays: relays.to_vec(),
            ..PeerOpts::relay()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::Reach;

    fn relay(s: &str) -> iroh::RelayUrl {
        crate::net::parse_relay_url(s).unwrap()
    }

    #[test]
    fn a_remote_community_uses_the_configured_relays() {
        let relays = [
            relay("http://127.0.0.1:3340"),
            relay("https://relay.example.org"),
        ];
        let dir = tempfile::tempdir().unwrap();
        KeyPair::init(dir.path(), false).unwrap();
        let c = Community::connect("http://127.0.0.1:9", false, "me", dir.path(), &relays).unwrap();
        assert_eq!(c.peer.reach, Reach::Relay);
        assert_eq!(c.peer.relays, relays);
        assert_eq!(c.peer.bind, None);
        // Without any: n0's relays and discovery, as before.
        let c = Community::connect("http://127.0.0.1:9", false, "me", dir.path(), &[]).unwrap();
        assert_eq!(c.peer.reach, Reach::Relay);
        assert!(c.peer.relays.is_empty());
    }

    #[test]
    fn the_embedded_community_stays_direct_whatever_the_relays() {
        let relays = [relay("http://127.0.0.1:3340")];
        let c = Community::connect_with("http://127.0.0.1:9", true, "me", KeyPair::generate())
            .unwrap()
            .with_relays(&relays);
        assert_eq!(c.peer.reach, Reach::Direct);
        assert!(c.peer.relays.is_empty());
        assert_eq!(c.peer.bind, PeerOpts::direct().bind);
    }
}
