//! The built-in demo site (served when no `--root` is given).

/// Path and bytes of each file.
pub const FILES: &[(&str, &[u8])] = &[
    ("index.html", include_bytes!("../demo/index.html")),
    ("style.css", include_bytes!("../demo/style.css")),
    ("app.js", include_bytes!("../demo/app.js")),
    ("logo.svg", include_bytes!("../demo/logo.svg")),
    ("hello.txt", include_bytes!("../demo/hello.txt")),
    ("about/index.html", include_bytes!("../demo/about/index.html")),
];
