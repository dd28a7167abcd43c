//! Log levels: OpenShift's `logLevel` / `operatorLogLevel` values (`Normal`, `Debug`, `Trace`,
//! `TraceAll`) mapped to klog verbosity for operands (`${LOG_LEVEL}`, anchors §1.5) and to a
//! `tracing` filter directive for the operator's own logs (anchors §1.10).
//!
//! Pure: parsing never fails (an unknown value is `Normal`, flagged so the caller can warn, as
//! library-go does with its `OperatorLogLevelInvalid` event); nothing here installs a subscriber.

use std::fmt;

/// One of the four OpenShift log levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum LogLevel {
    /// `Normal` (also `""`): klog `--v=2`.
    #[default]
    Normal,
    /// `Debug`: klog `--v=4`.
    Debug,
    /// `Trace`: klog `--v=6`.
    Trace,
    /// `TraceAll`: klog `--v=8`.
    TraceAll,
}

/// The result of reading a log level from a CR field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedLogLevel {
    /// The level to use: the value read, or `Normal` when it was empty or unknown.
    pub level: LogLevel,
    /// The unrecognized value, when there was one; the caller should warn (e.g. an Event
    /// `OperatorLogLevelInvalid`) and keep running at `Normal`.
    pub unknown: Option<String>,
}

impl LogLevel {
    /// Reads a CR value. `""` is `Normal` without a warning; any other unknown value is
    /// `Normal` with [`ParsedLogLevel::unknown`] set. Matching is exact (case-sensitive), as the
    /// CRD enum and library-go are.
    pub fn parse(value: &str) -> ParsedLogLevel {
        let level = match value {
            "" | "Normal" => Some(LogLevel::Normal),
            "Debug" => Some(LogLevel::Debug),
            "Trace" => Some(LogLevel::Trace),
            "TraceAll" => Some(LogLevel::TraceAll),
            _ => None,
        };
        match level {
            Some(level) => ParsedLogLevel {
                level,
                unknown: None,
            },
            None => ParsedLogLevel {
                level: LogLevel::Normal,
                unknown: Some(value.to_owned()),
            },
        }
    }

    /// The CR spelling of this level.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Normal => "Normal",
            LogLevel::Debug => "Debug",
            LogLevel::Trace => "Trace",
            LogLevel::TraceAll => "TraceAll",
        }
    }

    /// klog verbosity (`--v=`) for operands: 2, 4, 6 or 8 (library-go `LogLevelToVerbosity`).
    pub fn verbosity(self) -> u8 {
        match self {
            LogLevel::Normal => 2,
            LogLevel::Debug => 4,
            LogLevel::Trace => 6,
            LogLevel::TraceAll => 8,
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_mapping() {
        for (value, v) in [
            ("Normal", 2),
            ("Debug", 4),
            ("Trace", 6),
            ("TraceAll", 8),
            ("", 2),
        ] {
            let parsed = LogLevel::parse(value);
            assert_eq!(parsed.level.verbosity(), v, "{value:?}");
            assert_eq!(parsed.unknown, None, "{value:?}");
        }
    }

    #[test]
    fn unknown_is_normal_with_a_flag() {
        for value in ["debug", "Verbose", " Normal", "9"] {
            let parsed = LogLevel::parse(value);
            assert_eq!(parsed.level, LogLevel::Normal);
            assert_eq!(parsed.unknown.as_deref(), Some(value));
        }
    }

    #[test]
    fn round_trips_its_spelling() {
        for level in [
            LogLevel::Normal,
            LogLevel::Debug,
            LogLevel::Trace,
            LogLevel::TraceAll,
        ] {
            assert_eq!(LogLevel::parse(&level.to_string()).level, level);
        }
    }
}
