//! Why a patch could not be applied, worded and classified (400, 422, 500) as the server does.

use serde_json::Value;
use std::fmt;

/// Why a patch could not be applied, with the HTTP status the real server answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchError {
    /// 400 `BadRequest`: the patch document is malformed. The string is the Status message.
    BadRequest(String),
    /// 422 `Invalid`: the patch is well formed but cannot be applied (a failed JSON patch
    /// `test`, a path that does not exist, a list of lists). The real server wraps these with
    /// `NewGenericServerResponse`, so the Status message is always the generic
    /// "the server rejected our request due to an error in our request" carried here, and
    /// `details` is empty.
    Invalid(String),
    /// 413 `RequestEntityTooLarge`: a JSON patch of more than 10,000 operations.
    RequestEntityTooLarge(String),
    /// 500 with an empty reason (`StatusReasonUnknown`): errors the strategic merge code
    /// returns without classifying them, which the server passes through untouched, e.g.
    /// `map: map[image:nginx] does not contain declared merge key: name`. kubectl prints
    /// these as "Error from server: …".
    Internal(String),
}

impl PatchError {
    /// The HTTP status code of the Status the server answers with.
    pub fn code(&self) -> u16 {
        match self {
            PatchError::BadRequest(_) => 400,
            PatchError::Invalid(_) => 422,
            PatchError::RequestEntityTooLarge(_) => 413,
            PatchError::Internal(_) => 500,
        }
    }

    /// The Status `reason` (empty for [`PatchError::Internal`], as on the real server).
    pub fn reason(&self) -> &'static str {
        match self {
            PatchError::BadRequest(_) => "BadRequest",
            PatchError::Invalid(_) => "Invalid",
            PatchError::RequestEntityTooLarge(_) => "RequestEntityTooLarge",
            PatchError::Internal(_) => "",
        }
    }

    /// The Status `message`.
    pub fn message(&self) -> &str {
        match self {
            PatchError::BadRequest(m)
            | PatchError::Invalid(m)
            | PatchError::RequestEntityTooLarge(m)
            | PatchError::Internal(m) => m,
        }
    }
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for PatchError {}

/// What `NewGenericServerResponse(422, …)` puts in the Status message, whatever the cause.
pub(super) const INVALID_MESSAGE: &str =
    "the server rejected our request due to an error in our request";

/// The JSON kind names Go's `encoding/json` uses in "cannot unmarshal X into …".
pub(super) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
