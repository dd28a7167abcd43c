//! `Secret`: a string that must never reach a log, an Event, a status message or an error.
//!
//! It has no `Display`, its `Debug` prints `<redacted>`, and it is only read where the value is
//! sent on the wire (the Keystone request body, the `X-Auth-Token` header). It must not grow a
//! way to print itself.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};

/// A secret value (password, application-credential secret, token).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place that sends it. Never format it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    /// Accepts any YAML scalar: a password such as `123456` or `yes` is still a password. A
    /// type error must not happen here, because serde's type errors quote the offending value.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SecretVisitor;
        impl<'v> Visitor<'v> for SecretVisitor {
            type Value = Secret;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Secret, E> {
                Ok(Secret::new(v))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Secret, E> {
                Ok(Secret(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Secret, E> {
                Ok(Secret(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Secret, E> {
                Ok(Secret(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Secret, E> {
                Ok(Secret(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Secret, E> {
                Ok(Secret(v.to_string()))
            }
            // Maps and sequences are refused without naming any content.
            fn visit_map<A: de::MapAccess<'v>>(self, _: A) -> Result<Secret, A::Error> {
                Err(de::Error::custom("expected a string, found a mapping"))
            }
            fn visit_seq<A: de::SeqAccess<'v>>(self, _: A) -> Result<Secret, A::Error> {
                Err(de::Error::custom("expected a string, found a sequence"))
            }
        }
        deserializer.deserialize_string(SecretVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_redacted() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(s.expose(), "hunter2");
    }
}
