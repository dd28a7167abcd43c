//! Who a request is: kube-sim's two ways of reading a bearer token.
//!
//! - [`Authentication::UserNameTokens`]: the bearer token *is* the user name. Convenient for
//!   tests (a kubeconfig names its user in clear, the request log says who asked) and safe only
//!   where nobody else can connect, so it is the mode on loopback.
//! - [`Authentication::IssuedTokens`]: kube-sim issues a random token per user (32 bytes from
//!   the system's secure random generator, base64url) through [`KubeSim::kubeconfig`],
//!   [`KubeSim::token`] and the process runner's kubeconfigs, and a request whose bearer token
//!   it did not issue is `401 Unauthorized`, as a real API server answers. The mode beyond
//!   loopback, where a user-name token would let anyone act as a superuser.
//!
//! In both modes a request without a bearer token is `system:anonymous`. The admin paths under
//! `/__sim/` need, in issued-tokens mode, an issued token of a superuser (a member of
//! `system:masters`: [`RbacConfig::superusers`], the default list when RBAC is off); an unknown
//! token is 401, anyone else 403. Tokens are never logged or recorded: the request log records
//! the user a token authenticates.
//!
//! [`KubeSim::kubeconfig`]: crate::KubeSim::kubeconfig
//! [`KubeSim::token`]: crate::KubeSim::token
//! [`RbacConfig::superusers`]: crate::RbacConfig::superusers

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};

use base64::Engine;
use ring::digest::{SHA256, digest};
use ring::rand::{SecureRandom, SystemRandom};

use crate::Shared;
use crate::errors::ApiError;
use crate::rbac::{self, Attributes, UserInfo};

/// How kube-sim authenticates bearer tokens (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authentication {
    /// The bearer token is the user name: anyone who can connect can be anyone.
    UserNameTokens,
    /// Only tokens kube-sim issued authenticate; any other bearer token is 401.
    IssuedTokens,
}

impl Authentication {
    /// The mode `KubeSim::start` chooses when `SimConfig::authentication` is `None`:
    /// user-name tokens on a loopback address, issued tokens on any other (including the
    /// unspecified `0.0.0.0` and `::`, which listen on every interface).
    pub fn for_listen_address(ip: IpAddr) -> Self {
        if ip.to_canonical().is_loopback() {
            Self::UserNameTokens
        } else {
            Self::IssuedTokens
        }
    }
}

/// The tokens kube-sim issued, in [`Shared`].
pub(crate) struct Tokens {
    mode: Authentication,
    rng: SystemRandom,
    issued: Mutex<Issued>,
}

#[derive(Default)]
struct Issued {
    /// User by the SHA-256 of its token: lookups compare digests, not the secret itself.
    users: HashMap<[u8; 32], String>,
    /// Token by user, so a user keeps one token however many kubeconfigs it is given.
    tokens: HashMap<String, String>,
}

fn fingerprint(token: &str) -> [u8; 32] {
    let mut out = [0; 32];
    out.copy_from_slice(digest(&SHA256, token.as_bytes()).as_ref());
    out
}

impl Tokens {
    pub(crate) fn new(mode: Authentication) -> Self {
        Self {
            mode,
            rng: SystemRandom::new(),
            issued: Mutex::new(Issued::default()),
        }
    }

    pub(crate) fn mode(&self) -> Authentication {
        self.mode
    }

    /// The bearer token that authenticates `user`: the name itself with user-name tokens; with
    /// issued tokens the one issued to `user` before, or a new one.
    pub(crate) fn token_for(&self, user: &str) -> String {
        if self.mode == Authentication::UserNameTokens {
            return user.to_string();
        }
        let mut issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(token) = issued.tokens.get(user) {
            return token.clone();
        }
        let mut bytes = [0u8; 32];
        // The system generator fails only when the OS has no randomness to give; a token that
        // is not random would be worse than stopping.
        self.rng
            .fill(&mut bytes)
            .expect("the system's secure random generator works");
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        issued.users.insert(fingerprint(&token), user.to_string());
        issued.tokens.insert(user.to_string(), token.clone());
        token
    }

    /// The user a bearer token authenticates, `None` when it authenticates nobody. The token is
    /// already trimmed and non-empty.
    pub(crate) fn user_of(&self, token: &str) -> Option<String> {
        match self.mode {
            Authentication::UserNameTokens => Some(token.to_string()),
            Authentication::IssuedTokens => self
                .issued
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .users
                .get(&fingerprint(token))
                .cloned(),
        }
    }
}

/// The API server's answer to a bearer token that authenticates nobody.
pub(crate) fn unauthorized() -> ApiError {
    ApiError::injected(401, "Unauthorized", "Unauthorized".into())
}

/// Who sent a request, from its `Authorization` header: `system:anonymous` without a bearer
/// token (or with an empty one), the token's user, or the 401 for a token nobody was issued.
pub(crate) fn authenticate(
    shared: &Shared,
    authorization: Option<&str>,
) -> Result<String, ApiError> {
    let token = authorization
        .and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(rest)
        })
        .map(str::trim)
        .filter(|t| !t.is_empty());
    match token {
        None => Ok(rbac::ANONYMOUS_USER.to_string()),
        Some(t) => shared.tokens.user_of(t).ok_or_else(unauthorized),
    }
}

/// Whether `user` may use the admin paths: anyone with user-name tokens (loopback), only
/// superusers with issued tokens.
pub(crate) fn authorize_admin(
    shared: &Shared,
    user: &str,
    method: &str,
    path: &str,
) -> Result<(), ApiError> {
    if shared.tokens.mode() == Authentication::UserNameTokens {
        return Ok(());
    }
    let config = shared.rbac.config().unwrap_or_default();
    let who = UserInfo::resolve(user, &config);
    if who.is_privileged() {
        return Ok(());
    }
    let attrs = Attributes::non_resource(who, &method.to_ascii_lowercase(), path);
    Err(rbac::forbidden_error(
        &attrs,
        "kube-sim's admin paths need a superuser's issued token",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listen_address_beyond_loopback_selects_issued_tokens() {
        let mode = |s: &str| Authentication::for_listen_address(s.parse().expect("an address"));
        assert_eq!(mode("127.0.0.1"), Authentication::UserNameTokens);
        assert_eq!(mode("127.3.4.5"), Authentication::UserNameTokens);
        assert_eq!(mode("::1"), Authentication::UserNameTokens);
        assert_eq!(mode("::ffff:127.0.0.1"), Authentication::UserNameTokens);
        assert_eq!(mode("0.0.0.0"), Authentication::IssuedTokens);
        assert_eq!(mode("::"), Authentication::IssuedTokens);
        assert_eq!(mode("192.168.1.10"), Authentication::IssuedTokens);
        assert_eq!(mode("fe80::1"), Authentication::IssuedTokens);
    }

    #[test]
    fn issued_tokens_are_random_stable_per_user_and_map_back() {
        let tokens = Tokens::new(Authentication::IssuedTokens);
        let admin = tokens.token_for("admin");
        assert_eq!(admin.len(), 43, "32 bytes in unpadded base64url");
        assert_ne!(admin, "admin");
        assert_eq!(tokens.token_for("admin"), admin, "a user keeps its token");
        let sa = tokens.token_for("system:serviceaccount:ns:sa");
        assert_ne!(sa, admin);
        assert_eq!(tokens.user_of(&admin).as_deref(), Some("admin"));
        assert_eq!(
            tokens.user_of(&sa).as_deref(),
            Some("system:serviceaccount:ns:sa")
        );
        assert_eq!(tokens.user_of("admin"), None, "a user name is no token");
        assert_eq!(
            Tokens::new(Authentication::IssuedTokens).user_of(&admin),
            None,
            "tokens are per simulator"
        );
    }

    #[test]
    fn user_name_tokens_are_the_user_name() {
        let tokens = Tokens::new(Authentication::UserNameTokens);
        assert_eq!(tokens.token_for("admin"), "admin");
        assert_eq!(tokens.user_of("anyone").as_deref(), Some("anyone"));
    }
}
