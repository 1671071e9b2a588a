//! Content types by file extension (the common part of nginx's `mime.types`, so a
//! differential test against nginx agrees).

/// The media type for a file name, `application/octet-stream` when the extension is unknown.
pub fn for_path(name: &str) -> &'static str {
    let ext = match name.rsplit_once('.') {
        Some((_, e)) if !e.contains('/') => e.to_ascii_lowercase(),
        _ => return "application/octet-stream",
    };
    match ext.as_str() {
        "html" | "htm" | "shtml" => "text/html",
        "css" => "text/css",
        "xml" => "text/xml",
        "txt" => "text/plain",
        "js" => "application/javascript",
        "json" => "application/json",
        "gif" => "image/gif",
        "jpeg" | "jpg" => "image/jpeg",
        "png" => "image/png",
        "svg" | "svgz" => "image/svg+xml",
        "ico" => "image/x-icon",
        "webp" => "image/webp",
        "avif" => "image/avif",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "pdf" => "application/pdf",
        "wasm" => "application/wasm",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mp3" => "audio/mpeg",
        "zip" => "application/zip",
        "gz" => "application/octet-stream",
        "bin" | "exe" | "dll" | "iso" | "img" => "application/octet-stream",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::for_path;

    #[test]
    fn known_and_unknown() {
        assert_eq!(for_path("index.html"), "text/html");
        assert_eq!(for_path("a/b/LOGO.PNG"), "image/png");
        assert_eq!(for_path("app.js"), "application/javascript");
        assert_eq!(for_path("noext"), "application/octet-stream");
        assert_eq!(for_path("dir.d/noext"), "application/octet-stream");
        assert_eq!(for_path("x.unknownext"), "application/octet-stream");
    }
}
