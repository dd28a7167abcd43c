//! Resource quantities: the server re-serialises every Quantity in canonical form, and
//! `SetDefaults_ResourceList` rounds resource lists up to milli precision first.

use serde_json::{Map, Value};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum QuantityFormat {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Quantity {
    /// The value in thousandths, rounded away from zero.
    pub(super) milli: i128,
    pub(super) format: QuantityFormat,
}

/// A resource quantity (`"500m"`, `"1Gi"`, `2`) in thousandths, rounded away from zero as
/// `SetDefaults_ResourceList` does; `None` when it does not parse. For validation's comparisons.
pub(crate) fn quantity_milli(v: &Value) -> Option<i128> {
    quantity_value(v).map(|q| q.milli)
}

pub(super) fn quantity_value(v: &Value) -> Option<Quantity> {
    match v {
        Value::String(s) => parse_quantity(s),
        Value::Number(n) => parse_quantity(&n.to_string()),
        _ => None,
    }
}

pub(super) fn parse_quantity(s: &str) -> Option<Quantity> {
    let bytes = s.as_bytes();
    let mut i = 0;
    let negative = match bytes.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let number_start = i;
    while bytes
        .get(i)
        .is_some_and(|b| b.is_ascii_digit() || *b == b'.')
    {
        i += 1;
    }
    let number = s.get(number_start..i)?;
    let suffix = s.get(i..)?;
    if number.is_empty()
        || number.matches('.').count() > 1
        || !number.bytes().any(|b| b.is_ascii_digit())
    {
        return None;
    }
    let (exp10, exp2, format) = match suffix {
        "" => (0, 0, QuantityFormat::DecimalSi),
        "n" => (-9, 0, QuantityFormat::DecimalSi),
        "u" => (-6, 0, QuantityFormat::DecimalSi),
        "m" => (-3, 0, QuantityFormat::DecimalSi),
        "k" => (3, 0, QuantityFormat::DecimalSi),
        "M" => (6, 0, QuantityFormat::DecimalSi),
        "G" => (9, 0, QuantityFormat::DecimalSi),
        "T" => (12, 0, QuantityFormat::DecimalSi),
        "P" => (15, 0, QuantityFormat::DecimalSi),
        "E" => (18, 0, QuantityFormat::DecimalSi),
        "Ki" => (0, 10, QuantityFormat::BinarySi),
        "Mi" => (0, 20, QuantityFormat::BinarySi),
        "Gi" => (0, 30, QuantityFormat::BinarySi),
        "Ti" => (0, 40, QuantityFormat::BinarySi),
        "Pi" => (0, 50, QuantityFormat::BinarySi),
        "Ei" => (0, 60, QuantityFormat::BinarySi),
        other => {
            let rest = other
                .strip_prefix('e')
                .or_else(|| other.strip_prefix('E'))?;
            let digits = rest
                .strip_prefix('+')
                .or_else(|| rest.strip_prefix('-'))
                .unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (
                rest.parse::<i32>().ok()?,
                0,
                QuantityFormat::DecimalExponent,
            )
        }
    };
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    let digits = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    if digits.len() > 36 {
        return None;
    }
    let mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let frac_len = i32::try_from(frac_part.len()).ok()?;
    // value = mantissa * 10^(exp10 - frac_len) * 2^exp2, in thousandths.
    let scale = exp10.checked_sub(frac_len)?.checked_add(3)?;
    let mut numerator = mantissa.checked_mul(1_i128.checked_shl(exp2)?)?;
    let mut denominator: i128 = 1;
    if scale >= 0 {
        numerator = numerator.checked_mul(10_i128.checked_pow(u32::try_from(scale).ok()?)?)?;
    } else {
        match 10_i128.checked_pow(scale.unsigned_abs()) {
            Some(d) => denominator = d,
            // Anything non-zero this small rounds up to one thousandth.
            None => {
                return Some(Quantity {
                    milli: if negative { -1 } else { 1 },
                    format,
                });
            }
        }
    }
    let mut milli = numerator / denominator;
    if numerator % denominator != 0 {
        milli += 1;
    }
    Some(Quantity {
        milli: if negative { -milli } else { milli },
        format,
    })
}

pub(super) fn format_quantity(q: Quantity) -> String {
    if q.milli == 0 {
        return "0".into();
    }
    let sign = if q.milli < 0 { "-" } else { "" };
    let abs = q.milli.unsigned_abs();
    let mut format = q.format;
    // Small or fractional binary values print as decimal rather than lose precision.
    if format == QuantityFormat::BinarySi && (abs < 1024 * 1000 || !abs.is_multiple_of(1000)) {
        format = QuantityFormat::DecimalSi;
    }
    if format == QuantityFormat::BinarySi {
        let mut v = abs / 1000;
        let mut exp = 0;
        while v.is_multiple_of(1024) && exp < 6 {
            v /= 1024;
            exp += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
            .get(exp)
            .copied()
            .unwrap_or("");
        return format!("{sign}{v}{suffix}");
    }
    let mut mantissa = abs;
    let mut exp: i32 = -3;
    while mantissa.is_multiple_of(10) {
        mantissa /= 10;
        exp += 1;
    }
    match exp.rem_euclid(3) {
        1 => {
            mantissa *= 10;
            exp -= 1;
        }
        2 => {
            mantissa *= 100;
            exp -= 2;
        }
        _ => {}
    }
    let suffix = match (format, exp) {
        (QuantityFormat::DecimalExponent, 0) => String::new(),
        (QuantityFormat::DecimalExponent, e) => format!("e{e}"),
        (_, -3) => "m".into(),
        (_, 0) => String::new(),
        (_, 3) => "k".into(),
        (_, 6) => "M".into(),
        (_, 9) => "G".into(),
        (_, 12) => "T".into(),
        (_, 15) => "P".into(),
        (_, 18) => "E".into(),
        (_, e) => format!("e{e}"),
    };
    format!("{sign}{mantissa}{suffix}")
}

/// Rewrites one quantity in canonical form; an unparsable value is left for validation.
pub(super) fn canonicalize_quantity(v: &mut Value) {
    if let Some(q) = quantity_value(v) {
        *v = Value::String(format_quantity(q));
    }
}

pub(super) fn canonicalize_quantities(list: &mut Map<String, Value>) {
    for v in list.values_mut() {
        canonicalize_quantity(v);
    }
}
