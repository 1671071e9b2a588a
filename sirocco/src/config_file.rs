//! TOML config files of the server commands: one error line naming the file and the line.

use serde::de::DeserializeOwned;
use std::path::Path;

/// Reads and parses `path`.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<T, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text.as_bytes()[..s.start.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1)
            .unwrap_or(1);
        format!("{}:{line}: {}", path.display(), e.message())
    })
}
