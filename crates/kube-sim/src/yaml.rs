//! The one place kube-sim parses YAML (server-side apply bodies are YAML or JSON), so the YAML
//! library can be swapped without touching the handlers.

use serde_json::Value;

/// Parses one YAML (or JSON) document into a JSON value.
pub fn from_str(text: &str) -> Result<Value, String> {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).map_err(|e| e.to_string());
    }
    serde_saphyr::from_str::<Value>(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_yaml_and_json() {
        assert_eq!(
            from_str("a: 1\nb: [x]\n").expect("yaml"),
            json!({"a": 1, "b": ["x"]})
        );
        assert_eq!(
            from_str("{\"a\": \"on\"}").expect("json"),
            json!({"a": "on"})
        );
        assert!(from_str("a: [unclosed").is_err());
    }
}
