//! The one place that calls serde-saphyr (its API moves fast; keep it behind this function).
//!
//! Errors are rendered without source snippets: a snippet would quote the lines around the
//! error, and in a clouds.yaml those lines hold passwords.

use serde::de::DeserializeOwned;

/// Parses one YAML document; the error is a one-line message with a line/column location.
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_saphyr::from_str::<T>(text).map_err(|e| {
        let mut options = serde_saphyr::RenderOptions::default();
        options.snippets = serde_saphyr::SnippetMode::Off;
        e.without_snippet().render_with_options(options)
    })
}
