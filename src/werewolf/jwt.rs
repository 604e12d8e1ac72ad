//! HS256 JSON Web Tokens as the reference server uses them: a PLAYER token
//! carries `{"role":"PLAYER","team":"…"}`, a spectator token
//! `{"role":"RECEIVER"}`. `exp`, when present, is honoured.

use super::WolfError;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC accepts keys of any length, so new_from_slice cannot fail.
    let mut m = HmacSha256::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

/// Signs `claims` with HS256.
pub fn sign(secret: &str, claims: &Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let input = format!("{header}.{payload}");
    let sig = URL_SAFE_NO_PAD.encode(mac(secret.as_bytes(), input.as_bytes()));
    format!("{input}.{sig}")
}

/// A PLAYER token for `team`.
pub fn player_token(secret: &str, team: &str) -> String {
    sign(secret, &json!({"role": "PLAYER", "team": team}))
}

/// A RECEIVER (spectator) token.
pub fn receiver_token(secret: &str) -> String {
    sign(secret, &json!({"role": "RECEIVER"}))
}

/// Verifies signature (HS256 only), `exp` and returns the claims.
pub fn verify(secret: &str, token: &str, now_s: i64) -> Result<Value, WolfError> {
    let bad = |m: &str| WolfError::Auth(m.to_owned());
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("malformed token"));
    };
    let header: Value = URL_SAFE_NO_PAD
        .decode(h)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| bad("malformed token header"))?;
    if header.get("alg").and_then(Value::as_str) != Some("HS256") {
        return Err(bad("only HS256 tokens are accepted"));
    }
    let sig = URL_SAFE_NO_PAD
        .decode(s)
        .map_err(|_| bad("malformed signature"))?;
    let mut m = HmacSha256::new_from_slice(secret.as_bytes()).map_err(|_| bad("bad secret"))?;
    m.update(format!("{h}.{p}").as_bytes());
    m.verify_slice(&sig).map_err(|_| bad("invalid signature"))?;
    let claims: Value = URL_SAFE_NO_PAD
        .decode(p)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| bad("malformed claims"))?;
    if let Some(exp) = claims.get("exp").and_then(Value::as_i64)
        && exp < now_s
    {
        return Err(bad("token expired"));
    }
    Ok(claims)
}

/// Checks a PLAYER token for `team`.
pub fn check_player(secret: &str, token: &str, team: &str, now_s: i64) -> Result<(), WolfError> {
    let c = verify(secret, token, now_s)?;
    if c.get("role").and_then(Value::as_str) != Some("PLAYER") {
        return Err(WolfError::Auth("not a PLAYER token".into()));
    }
    if c.get("team").and_then(Value::as_str) != Some(team) {
        return Err(WolfError::Auth(format!("token is not for team {team:?}")));
    }
    Ok(())
}

/// Checks a RECEIVER token.
pub fn check_receiver(secret: &str, token: &str, now_s: i64) -> Result<(), WolfError> {
    let c = verify(secret, token, now_s)?;
    if c.get("role").and_then(Value::as_str) != Some("RECEIVER") {
        return Err(WolfError::Auth("not a RECEIVER token".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_case_2() {
        // HMAC-SHA256 test vector (key "Jefe").
        let m = mac(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(m),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn roundtrip_and_rejections() {
        let t = player_token("s3cret", "kanolab");
        check_player("s3cret", &t, "kanolab", 0).unwrap();
        assert!(check_player("s3cret", &t, "other", 0).is_err());
        assert!(check_player("wrong", &t, "kanolab", 0).is_err());
        assert!(check_receiver("s3cret", &t, 0).is_err());
        let expired = sign("s3cret", &json!({"role":"RECEIVER","exp": 10}));
        assert!(check_receiver("s3cret", &expired, 11).is_err());
        assert!(verify("s3cret", "a.b", 0).is_err());
        assert!(verify("s3cret", "", 0).is_err());
    }
}
