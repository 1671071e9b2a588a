//! The document tree: every file under the root (symlinks followed only while they stay
//! inside it), with what the responses need — size, modification time, entity tag, content
//! type — and the bytes, read at load time when the tree fits the cache, else on first use.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

/// One file.
pub struct File {
    /// Path relative to the root, `/`-separated.
    pub path: Vec<u8>,
    /// Where to read it (None for built-in content).
    pub source: Option<PathBuf>,
    /// Its bytes, when loaded with the tree.
    pub body: Option<Arc<[u8]>>,
    /// Size in bytes.
    pub size: u64,
    /// Modification time (seconds since the epoch).
    pub mtime: u64,
    /// Entity tag, quoted.
    pub etag: String,
    /// Content-Type.
    pub content_type: &'static str,
}

/// What a decoded request path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// A file (its index).
    File(u32),
    /// A directory asked for without the trailing slash: redirect to it.
    Redirect,
    /// A directory with no index.html.
    Forbidden,
    /// Nothing.
    NotFound,
}

/// A loaded tree.
pub struct Site {
    /// The files.
    pub files: Vec<File>,
    by_path: HashMap<Vec<u8>, u32>,
    dirs: HashSet<Vec<u8>>,
    /// Total size of the files.
    pub bytes: u64,
    /// Entries skipped: symlinks leading outside the root, unreadable or special files.
    pub skipped: usize,
}

/// Deepest directory nesting followed.
const MAX_DEPTH: usize = 64;

impl Site {
    fn empty() -> Site {
        let mut dirs = HashSet::new();
        dirs.insert(Vec::new());
        Site { files: Vec::new(), by_path: HashMap::new(), dirs, bytes: 0, skipped: 0 }
    }

    fn add(&mut self, f: File) {
        // Every ancestor of a file is a directory.
        let mut p = f.path.as_slice();
        while let Some(i) = p.iter().rposition(|&c| c == b'/') {
            p = &p[..i];
            self.dirs.insert(p.to_vec());
        }
        self.bytes += f.size;
        self.by_path.insert(f.path.clone(), self.files.len() as u32);
        self.files.push(f);
    }

    /// Loads the tree under `root`. Bodies are read now if the whole tree is at most
    /// `preload_bytes`, else left to be read on first request.
    pub fn load(root: &Path, preload_bytes: u64) -> Result<Site, String> {
        let canon = root.canonicalize().map_err(|e| format!("{}: {e}", root.display()))?;
        if !canon.is_dir() {
            return Err(format!("{}: not a directory", root.display()));
        }
        let mut site = Site::empty();
        let mut seen = HashSet::new();
        seen.insert(canon.clone());
        let mut found = Vec::new();
        walk(&canon, &canon, Vec::new(), 0, &mut seen, &mut found, &mut site.skipped)?;
        let total: u64 = found.iter().map(|(_, _, m)| m.len()).sum();
        let preload = total <= preload_bytes;
        for (rel, real, meta) in found {
            let mtime = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_secs());
            let body = if preload {
                match std::fs::read(&real) {
                    Ok(b) => Some(Arc::from(b)),
                    Err(_) => {
                        site.skipped += 1;
                        continue;
                    }
                }
            } else {
                None
            };
            let size = body.as_ref().map_or(meta.len(), |b: &Arc<[u8]>| b.len() as u64);
            let name = String::from_utf8_lossy(&rel).into_owned();
            site.add(File {
                etag: http::response::etag(mtime, size),
                content_type: http::mime::for_path(&name),
                path: rel,
                source: Some(real),
                body,
                size,
                mtime,
            });
        }
        Ok(site)
    }

    /// The built-in demo site.
    pub fn demo(mtime: u64) -> Site {
        let mut site = Site::empty();
        for (path, bytes) in crate::demo::FILES {
            let body: Arc<[u8]> = Arc::from(bytes.to_vec());
            site.add(File {
                path: path.as_bytes().to_vec(),
                source: None,
                size: body.len() as u64,
                body: Some(body),
                mtime,
                etag: http::response::etag(mtime, bytes.len() as u64),
                content_type: http::mime::for_path(path),
            });
        }
        site
    }

    /// What `path` (decoded, relative) names; `dir` if the request ended in a slash.
    pub fn lookup(&self, path: &[u8], dir: bool, scratch: &mut Vec<u8>) -> Lookup {
        if !dir {
            if let Some(&i) = self.by_path.get(path) {
                return Lookup::File(i);
            }
            return if self.dirs.contains(path) { Lookup::Redirect } else { Lookup::NotFound };
        }
        if !self.dirs.contains(path) {
            return Lookup::NotFound;
        }
        scratch.clear();
        scratch.extend_from_slice(path);
        if !path.is_empty() {
            scratch.push(b'/');
        }
        scratch.extend_from_slice(b"index.html");
        match self.by_path.get(scratch.as_slice()) {
            Some(&i) => Lookup::File(i),
            None => Lookup::Forbidden,
        }
    }

    /// Number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// True if there are no files.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

type Found = Vec<(Vec<u8>, PathBuf, std::fs::Metadata)>;

fn walk(
    root: &Path,
    dir: &Path,
    rel: Vec<u8>,
    depth: usize,
    seen: &mut HashSet<PathBuf>,
    found: &mut Found,
    skipped: &mut usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        *skipped += 1;
        return Ok(());
    }
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        use std::os::unix::ffi::OsStrExt;
        let name = e.file_name();
        let mut r = rel.clone();
        if !r.is_empty() {
            r.push(b'/');
        }
        r.extend_from_slice(name.as_bytes());
        // Follow symlinks, but only to places inside the root.
        let Ok(real) = e.path().canonicalize() else {
            *skipped += 1;
            continue;
        };
        if !real.starts_with(root) {
            *skipped += 1;
            continue;
        }
        let Ok(meta) = std::fs::metadata(&real) else {
            *skipped += 1;
            continue;
        };
        if meta.is_dir() {
            if seen.insert(real.clone()) {
                walk(root, &real, r, depth + 1, seen, found, skipped)?;
            } else {
                *skipped += 1; // a loop, or a second way into a directory already served
            }
        } else if meta.is_file() {
            found.push((r, real, meta));
        } else {
            *skipped += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_lookups() {
        let s = Site::demo(1);
        let mut sc = Vec::new();
        assert!(matches!(s.lookup(b"", true, &mut sc), Lookup::File(_)));
        assert!(matches!(s.lookup(b"about", true, &mut sc), Lookup::File(_)));
        assert_eq!(s.lookup(b"about", false, &mut sc), Lookup::Redirect);
        assert!(matches!(s.lookup(b"style.css", false, &mut sc), Lookup::File(_)));
        assert_eq!(s.lookup(b"style.css", true, &mut sc), Lookup::NotFound);
        assert_eq!(s.lookup(b"nope", false, &mut sc), Lookup::NotFound);
    }

    #[test]
    fn symlinks_outside_the_root_are_not_served() {
        let base = std::env::temp_dir().join(format!("sirocco-site-{}", std::process::id()));
        let root = base.join("root");
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(base.join("secret"), b"no").unwrap();
        std::fs::write(root.join("sub/a.txt"), b"yes").unwrap();
        std::os::unix::fs::symlink(base.join("secret"), root.join("leak")).unwrap();
        std::os::unix::fs::symlink(root.join("sub/a.txt"), root.join("inside")).unwrap();
        std::os::unix::fs::symlink(&root, root.join("sub/loop")).unwrap();
        let s = Site::load(&root, 1 << 20).unwrap();
        let mut sc = Vec::new();
        assert_eq!(s.lookup(b"leak", false, &mut sc), Lookup::NotFound);
        assert!(matches!(s.lookup(b"inside", false, &mut sc), Lookup::File(_)));
        assert!(matches!(s.lookup(b"sub/a.txt", false, &mut sc), Lookup::File(_)));
        assert_eq!(s.lookup(b"sub/loop/sub/a.txt", false, &mut sc), Lookup::NotFound);
        assert_eq!(s.skipped, 2);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
