//! Kubeconfig files that kube-rs and kubectl accept, pointing at a running kube-sim.
//!
//! On loopback the bearer token is the user name: kube-sim records who asked, so tests can tell
//! an operator's requests from the test's own. Beyond loopback (issued-tokens mode, see
//! `authentication.rs`) the token is one kube-sim issued to the user, and the kubeconfig is a
//! credential.

use base64::Engine;

/// A kubeconfig with one cluster, user and context, all named `kube-sim`, whose bearer token
/// is the user name (user-name-tokens mode).
pub fn render(server: &str, user: &str, ca_pem: Option<&str>) -> String {
    render_with_token(server, user, user, ca_pem)
}

/// A kubeconfig like [`render`]'s for `user`, authenticating with `token`.
pub fn render_with_token(server: &str, user: &str, token: &str, ca_pem: Option<&str>) -> String {
    let cluster_tls = match ca_pem {
        Some(pem) => format!(
            "    certificate-authority-data: {}\n",
            base64::engine::general_purpose::STANDARD.encode(pem)
        ),
        None => String::new(),
    };
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: kube-sim
  cluster:
    server: {server}
{cluster_tls}users:
- name: {user}
  user:
    token: {token}
contexts:
- name: kube-sim
  context:
    cluster: kube-sim
    user: {user}
    namespace: default
current-context: kube-sim
preferences: {{}}
",
        user = quote_if_needed(user),
        // An issued token is always quoted: base64url could read as a YAML number or start
        // with `-`.
        token = if token == user {
            quote_if_needed(token)
        } else {
            format!("{token:?}")
        },
    )
}

/// User names like `system:serviceaccount:ns:name` need quoting in YAML.
fn quote_if_needed(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        s.to_string()
    } else {
        format!("{s:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_parseable_kubeconfig() {
        let k = render(
            "http://127.0.0.1:1234",
            "system:admin",
            Some("-----BEGIN CERTIFICATE-----\n"),
        );
        let v: serde_json::Value = crate::yaml::from_str(&k).expect("valid yaml");
        assert_eq!(
            v["clusters"][0]["cluster"]["server"],
            "http://127.0.0.1:1234"
        );
        assert_eq!(v["users"][0]["user"]["token"], "system:admin");
        assert!(v["clusters"][0]["cluster"]["certificate-authority-data"].is_string());
        assert_eq!(v["current-context"], "kube-sim");
        let k = render_with_token("http://127.0.0.1:1234", "system:admin", "a-_Z9", None);
        let v: serde_json::Value = crate::yaml::from_str(&k).expect("valid yaml");
        assert_eq!(v["users"][0]["name"], "system:admin");
        assert_eq!(v["users"][0]["user"]["token"], "a-_Z9");
    }
}
