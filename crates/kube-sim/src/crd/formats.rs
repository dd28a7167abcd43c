//! The string `format`s the server checks (go-openapi strfmt as kube-openapi configures it).

pub(super) fn format_ok(format: &str, v: &str) -> bool {
    match format.replace('-', "").as_str() {
        "datetime" => is_date_time(v),
        "date" => is_date(v),
        "uuid" => is_uuid(v, None),
        "uuid3" => is_uuid(v, Some('3')),
        "uuid4" => is_uuid(v, Some('4')),
        "uuid5" => is_uuid(v, Some('5')),
        "ipv4" => parse_ipv4(v).is_some(),
        "ipv6" => v.contains(':') && parse_ipv6(v),
        "cidr" => is_cidr(v),
        "mac" => is_mac(v),
        "hostname" => is_hostname(v),
        "byte" => is_base64(v),
        "email" => is_email(v),
        "uri" => is_request_uri(v),
        "hexcolor" => is_hexcolor(v),
        "ssn" => is_ssn(v),
        "bsonobjectid" => v.len() == 24 && v.bytes().all(|b| b.is_ascii_hexdigit()),
        // password accepts anything; isbn, creditcard, rgbcolor and duration are not checked
        // by kube-sim (documented difference).
        _ => true,
    }
}

pub(super) fn digits(s: &str, n: usize) -> Option<u32> {
    if s.len() == n && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

pub(super) fn is_date(v: &str) -> bool {
    let parts: Vec<&str> = v.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// strfmt's `IsDateTime`: a full date, `t`, then `hh:mm:ss[.frac](z|±hh:mm)`.
pub(super) fn is_date_time(v: &str) -> bool {
    if v.len() < 4 {
        return false;
    }
    let lower = v.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let b = time.as_bytes();
    let two = |i: usize| b.get(i..i + 2).filter(|d| d.iter().all(u8::is_ascii_digit));
    let (Some(h), Some(m), Some(s)) = (two(0), two(3), two(6)) else {
        return false;
    };
    if b.get(2) != Some(&b':') || b.get(5) != Some(&b':') {
        return false;
    }
    let mut i = 8;
    if b.get(i)
        .is_some_and(|&c| c != b'z' && c != b'+' && c != b'-')
    {
        // `(.[0-9]+)?`: any one character then digits.
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    let zone_ok = match b.get(i) {
        Some(b'z') => i + 1 == b.len(),
        Some(b'+') | Some(b'-') => {
            i + 6 == b.len()
                && two(i + 1).is_some()
                && b.get(i + 3) == Some(&b':')
                && two(i + 4).is_some()
        }
        _ => false,
    };
    zone_ok && h <= b"23".as_slice() && m <= b"59".as_slice() && s <= b"59".as_slice()
}

pub(super) fn is_uuid(v: &str, version: Option<char>) -> bool {
    let hex: String = v.chars().filter(|&c| c != '-').collect();
    // Dashes are optional but only at the canonical places.
    let groups = [8, 4, 4, 4, 12];
    let mut rest = v;
    for (gi, n) in groups.iter().enumerate() {
        let Some(g) = rest.get(..*n) else {
            return false;
        };
        if !g.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
        rest = rest.get(*n..).unwrap_or("");
        if gi < 4 {
            rest = rest.strip_prefix('-').unwrap_or(rest);
        }
    }
    if !rest.is_empty() || hex.len() != 32 {
        return false;
    }
    match version {
        None => true,
        Some(ver) => {
            let c = hex.chars().nth(12);
            let variant = hex.chars().nth(16).map(|c| c.to_ascii_lowercase());
            c == Some(ver) && (ver == '3' || matches!(variant, Some('8' | '9' | 'a' | 'b')))
        }
    }
}

/// Go's lenient ("sloppy") IPv4 parse: four decimal parts, leading zeros allowed.
pub(super) fn parse_ipv4(v: &str) -> Option<[u8; 4]> {
    let parts: Vec<&str> = v.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut out = [0u8; 4];
    for (o, p) in out.iter_mut().zip(&parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse::<u8>().ok()?;
    }
    Some(out)
}

pub(super) fn parse_ipv6(v: &str) -> bool {
    v.parse::<std::net::Ipv6Addr>().is_ok()
}

pub(super) fn is_cidr(v: &str) -> bool {
    let Some((ip, bits)) = v.split_once('/') else {
        return false;
    };
    let Some(bits) =
        (!bits.is_empty() && bits.len() <= 3 && bits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| bits.parse::<u32>().ok())
            .flatten()
    else {
        return false;
    };
    if parse_ipv4(ip).is_some() {
        bits <= 32
    } else {
        ip.contains(':') && parse_ipv6(ip) && bits <= 128
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx…`, `xx-xx…` or `xxxx.xxxx…`.
pub(super) fn is_mac(v: &str) -> bool {
    let ok_len = |n: usize| n == 6 || n == 8 || n == 20;
    for sep in [':', '-'] {
        let parts: Vec<&str> = v.split(sep).collect();
        if parts.len() > 1 {
            return ok_len(parts.len())
                && parts
                    .iter()
                    .all(|p| p.len() == 2 && p.bytes().all(|b| b.is_ascii_hexdigit()));
        }
    }
    let parts: Vec<&str> = v.split('.').collect();
    parts.len() > 1
        && ok_len(parts.len() * 2)
        && parts
            .iter()
            .all(|p| p.len() == 4 && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// strfmt's hostname rule for ASCII names: labels of letters, digits and inner dashes, a final
/// label of letters only (2-63), at most 255 characters.
pub(super) fn is_hostname(v: &str) -> bool {
    if v.is_empty() || v.len() > 255 {
        return false;
    }
    let labels: Vec<&str> = v.split('.').collect();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && l.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
    };
    match labels.as_slice() {
        [single] => {
            label_ok(single)
                && single
                    .as_bytes()
                    .last()
                    .is_some_and(u8::is_ascii_alphanumeric)
        }
        [init @ .., last] => {
            init.iter()
                .all(|l| label_ok(l) && l.as_bytes().last().is_some_and(u8::is_ascii_alphanumeric))
                && (2..=63).contains(&last.len())
                && last.bytes().all(|b| b.is_ascii_alphabetic())
        }
        [] => false,
    }
}

pub(super) fn is_base64(v: &str) -> bool {
    let b = v.as_bytes();
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let alpha = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let pad = b.iter().rev().take_while(|&&c| c == b'=').count();
    pad <= 2
        && b.get(..b.len() - pad)
            .is_some_and(|body| body.iter().all(|&c| alpha(c)))
}

/// An approximation of Go's `net/mail.ParseAddress`: one `@`, non-empty local part and domain,
/// optionally wrapped as `Name <local@domain>`.
pub(super) fn is_email(v: &str) -> bool {
    let addr = match (v.rfind('<'), v.strip_suffix('>')) {
        (Some(i), Some(inner)) => inner.get(i + 1..).unwrap_or(""),
        _ => v.trim(),
    };
    match addr.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !addr
                    .chars()
                    .any(|c| c.is_whitespace() || c == '<' || c == '>')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        None => false,
    }
}

/// Go's `url.ParseRequestURI`: an absolute URI (`scheme:…`) or an absolute path.
pub(super) fn is_request_uri(v: &str) -> bool {
    if v.starts_with('/') {
        return !v.contains(' ');
    }
    match v.split_once(':') {
        Some((scheme, rest)) => {
            scheme
                .as_bytes()
                .first()
                .is_some_and(u8::is_ascii_alphabetic)
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
                && !rest.is_empty()
                && !v.contains(' ')
        }
        None => false,
    }
}

pub(super) fn is_hexcolor(v: &str) -> bool {
    let h = v.strip_prefix('#').unwrap_or(v);
    (h.len() == 3 || h.len() == 6) && h.bytes().all(|b| b.is_ascii_hexdigit())
}

pub(super) fn is_ssn(v: &str) -> bool {
    let d: Vec<char> = v.chars().filter(|c| c.is_ascii_digit()).collect();
    let seps = v.chars().filter(|c| !c.is_ascii_digit()).count();
    d.len() == 9 && (seps == 0 || (seps == 2 && v.len() == 11 && !v.starts_with(['-', ' '])))
}
