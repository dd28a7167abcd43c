//! The `string_enum!` macro: string-valued API enums that never fail to deserialize.
//!
//! OpenShift grows its enums between releases (a new `controlPlaneTopology`, a new platform), and
//! users can write values the CRD rejects only on newer servers. If such a value made the whole
//! object fail to deserialize, an operator's watch would fail on every list and it could not even
//! report what is wrong. So every enum here has an `Unknown(String)` variant that keeps the value
//! verbatim: reading and writing the object back does not change it, and the caller decides how
//! to report it (usually a Degraded condition naming the value and the accepted ones).
//!
//! What this module must not do: accept a non-string JSON value (a number where a string is
//! expected is a type error with serde's message, not an `Unknown`).

/// Declares a string enum with known values and an `Unknown(String)` fallback, with serde,
/// `JsonSchema`, `Display`, `From<&str>`, `as_str`, `is_known` and `KNOWN`.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this crate does not know, kept verbatim so that a read-modify-write does
            /// not change it. Report it; do not guess what it means.
            Unknown(String),
        }

        impl $name {
            /// Every value this crate knows, in the order the API documents them.
            pub const KNOWN: &'static [&'static str] = &[$($value),+];

            /// The value as it is written in the API.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $value, )+
                    Self::Unknown(s) => s,
                }
            }

            /// Whether this is one of [`Self::KNOWN`].
            pub fn is_known(&self) -> bool {
                !matches!(self, Self::Unknown(_))
            }

            /// Parses an API value; anything else becomes `Unknown` (this never fails).
            pub fn parse(s: &str) -> Self {
                match s {
                    $( $value => Self::$variant, )+
                    other => Self::Unknown(other.to_owned()),
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self::parse(s)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                match Self::parse(&s) {
                    Self::Unknown(_) => Self::Unknown(s),
                    known => known,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                // Through `String`, so a non-string is a type error with serde's message.
                let s = <String as serde::Deserialize>::deserialize(d)?;
                Ok(Self::from(s))
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                // No `enum:` here on purpose: the type accepts unknown values, and the CRDs
                // shipped in `crds/` (not this derived schema) carry the server's validation.
                schemars::json_schema!({ "type": "string" })
            }
        }
    };
}

pub(crate) use string_enum;
