//! Showing a URL in a message without the credentials it may carry (`user:password@host`):
//! clouds.yaml URLs, endpoint URLs and redirect locations all end up in conditions and logs.

/// Drops user-info from a URL before it goes into a message.
pub(crate) fn display_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        // Not a URL, but it may still carry `user:password@`: drop everything between the
        // scheme and an `@` in the authority.
        Err(_) => {
            let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let rest = match rest[..authority_end].rfind('@') {
                Some(at) => &rest[at + 1..],
                None => rest,
            };
            if scheme.is_empty() {
                rest.to_string()
            } else {
                format!("{scheme}://{rest}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_url_drops_userinfo() {
        assert_eq!(
            display_url("https://u:p@k.example:5000/v3"),
            "https://k.example:5000/v3"
        );
    }

    #[test]
    fn display_url_drops_userinfo_of_unparsable_urls_too() {
        assert_eq!(display_url("HTTP://u:p@[bad/v3"), "HTTP://[bad/v3");
        assert_eq!(display_url("not a url"), "not a url");
    }
}
