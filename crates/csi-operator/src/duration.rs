//! Duration flags in Go's syntax (`time.ParseDuration`): `90s`, `1m30s`, `1.5h`, `250ms`, `0`.
//! Administrators copy these values between our flags and the Go operators' and client-go's
//! (`--leader-elect-lease-duration=137s`), so both must read the same text the same way.

use std::time::Duration;

/// Nanoseconds per unit, Go's unit names (both spellings of micro).
const UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Go's largest duration (`math.MaxInt64` nanoseconds, about 292 years).
const MAX_NANOS: u128 = i64::MAX as u128;

/// Parses a Go duration. Negative values are refused: no flag of ours means "before now".
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    let fail = |why: &str| {
        Err(format!(
            "{text:?}: {why}; write a Go duration such as 90s, 1m30s, 1.5h or 250ms (units ns, us, ms, s, m, h)"
        ))
    };
    let s = match s.strip_prefix('+') {
        Some(rest) => rest,
        None if s.starts_with('-') => return fail("a duration must not be negative"),
        None => s,
    };
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return fail("empty");
    }
    let mut rest = s;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let digits_end = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(digits_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return fail("expected a number before each unit");
        }
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_end);
        if unit.is_empty() {
            return fail("missing unit");
        }
        let Some(&(_, scale)) = UNITS.iter().find(|(name, _)| *name == unit) else {
            return fail(&format!("unknown unit {unit:?}"));
        };
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            match whole.parse() {
                Ok(n) => n,
                Err(_) => return fail("number too large"),
            }
        };
        let mut nanos = match whole.checked_mul(scale) {
            Some(n) => n,
            None => return fail("too large"),
        };
        // The fraction, digit by digit, as Go does (digits beyond nanoseconds are dropped).
        let mut place = scale;
        for digit in fraction.bytes() {
            place /= 10;
            if place == 0 {
                break;
            }
            nanos += u128::from(digit - b'0') * place;
        }
        total = match total.checked_add(nanos) {
            Some(t) if t <= MAX_NANOS => t,
            _ => return fail("too large"),
        };
        rest = next;
    }
    let secs = u64::try_from(total / 1_000_000_000).unwrap_or(u64::MAX);
    let subsec = u32::try_from(total % 1_000_000_000).unwrap_or(0);
    Ok(Duration::new(secs, subsec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse_as_go_parses_them() {
        let ok = |s: &str| parse_duration(s).unwrap();
        assert_eq!(ok("250ms"), Duration::from_millis(250));
        assert_eq!(ok("2s"), Duration::from_secs(2));
        assert_eq!(ok("10m"), Duration::from_secs(600));
        assert_eq!(ok("1m30s"), Duration::from_secs(90));
        assert_eq!(ok("1h2m3s"), Duration::from_secs(3723));
        assert_eq!(ok("1.5h"), Duration::from_secs(5400));
        assert_eq!(ok(".5s"), Duration::from_millis(500));
        assert_eq!(ok("1.s"), Duration::from_secs(1));
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("0s"), Duration::ZERO);
        assert_eq!(ok("+5s"), Duration::from_secs(5));
        assert_eq!(ok("100us"), Duration::from_micros(100));
        assert_eq!(ok("100µs"), Duration::from_micros(100));
        assert_eq!(ok("1ns"), Duration::from_nanos(1));
        assert_eq!(ok("1.0000000001s"), Duration::from_secs(1));
        assert_eq!(ok(" 137s "), Duration::from_secs(137));
    }

    #[test]
    fn malformed_durations_are_refused_with_an_example() {
        for bad in [
            "",
            "10",
            "s",
            "5d",
            "-1s",
            "1..5s",
            "1.2.3s",
            "1 s",
            "1sm",
            "ms5",
            "1h-5m",
            "99999999999999999999999h",
            "3000000h",
            "1e3s",
            "ten seconds",
            "１s",
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert!(
                e.contains(&format!("{bad:?}")) && e.contains("1m30s"),
                "{bad:?}: {e}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,24}") {
            let _ = parse_duration(&s);
        }

        #[test]
        fn hours_minutes_seconds_add_up(h in 0u64..1000, m in 0u64..60, s in 0u64..60) {
            let text = format!("{h}h{m}m{s}s");
            proptest::prop_assert_eq!(
                parse_duration(&text).unwrap(),
                Duration::from_secs(h * 3600 + m * 60 + s)
            );
        }
    }
}
