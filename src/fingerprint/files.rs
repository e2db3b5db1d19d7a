//! Documents from files: the directory walk and the per-file reading and
//! extraction behind `simcrawl fingerprint`, `near` and `eval --corpus`.

use std::path::{Path, PathBuf};

use crate::extract::{self, Extracted};

/// File name extensions fingerprinted when walking a directory (files named
/// on the command line are always read).
const EXTENSIONS: &[&str] = &["html", "htm", "xhtml", "shtml", "txt", "text", "md"];

/// Bytes read from one file by `fingerprint`, `near` and `eval`; the rest
/// of a larger file is ignored (like a crawl's `max_body_bytes`).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Files found under `paths`, in a stable order: each argument in turn;
/// directories recurse in byte order of names, keeping regular files (or
/// symbolic links to regular files) with an extension in `EXTENSIONS` (html, htm, xhtml, shtml, txt, text, md).
/// Symbolic links to directories are not followed, so a link loop
/// (`ln -s . loop`) lists nothing twice; devices, pipes and sockets are
/// skipped. A path named here must be a directory or a regular file.
pub fn collect_files(paths: &[PathBuf]) -> crate::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p)
            .map_err(|e| crate::Error::InvalidInput(format!("{}: cannot read: {}", p.display(), e.kind())))?;
        if meta.is_dir() {
            walk_dir(p, &mut out)?;
        } else if meta.is_file() {
            out.push(p.clone());
        } else {
            return Err(crate::Error::InvalidInput(format!(
                "{}: not a regular file or directory",
                p.display()
            )));
        }
    }
    Ok(out)
}

fn walk_dir(dir: &Path, out: &mut Vec<PathBuf>) -> crate::Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mut entries: Vec<(PathBuf, std::fs::FileType)> = std::fs::read_dir(&d)
            .map_err(|e| crate::Error::io(&d, e))?
            .filter_map(|e| e.ok().and_then(|e| e.file_type().ok().map(|t| (e.path(), t))))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut subdirs = Vec::new();
        for (e, kind) in entries {
            // `file_type` does not follow symbolic links: a link counts only
            // when it points at a regular file.
            let regular = kind.is_file() || (kind.is_symlink() && std::fs::metadata(&e).is_ok_and(|m| m.is_file()));
            if kind.is_dir() {
                subdirs.push(e);
            } else if regular
                && e.extension()
                    .and_then(|x| x.to_str())
                    .is_some_and(|x| EXTENSIONS.iter().any(|k| x.eq_ignore_ascii_case(k)))
            {
                out.push(e);
            }
        }
        // Depth-first in name order: push in reverse.
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(())
}

/// Reads and extracts one file: HTML when its name ends in .htm(l)/.xhtml or
/// its first non-blank byte is `<`, plain text otherwise. Bytes that are not
/// UTF-8 are replaced (U+FFFD). Only a regular file is read, and at most
/// [`MAX_FILE_BYTES`] of it. Links keep their hrefs; their anchor texts and
/// contexts are left empty (fingerprints read none).
pub fn extract_file(path: &Path, max_text_bytes: usize) -> crate::Result<Extracted> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| crate::Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| crate::Error::io(path, e))?;
    if !meta.is_file() {
        return Err(crate::Error::InvalidInput(format!(
            "{}: not a regular file",
            path.display()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len().min(MAX_FILE_BYTES) as usize);
    file.take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| crate::Error::io(path, e))?;
    let text = String::from_utf8_lossy(&bytes);
    let by_name = path.extension().and_then(|x| x.to_str()).is_some_and(|x| {
        ["html", "htm", "xhtml", "shtml"]
            .iter()
            .any(|k| x.eq_ignore_ascii_case(k))
    });
    Ok(if by_name || extract::looks_like_html(&bytes) {
        // Fingerprints read no link text.
        extract::extract_html_with(&text, extract::ExtractOptions::new(max_text_bytes).without_link_text())
    } else {
        extract::extract_plain(&text, max_text_bytes)
    })
}

/// The "host" of a file for template learning: its parent directory.
pub(crate) fn file_host(path: &Path) -> String {
    path.parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Directory link loops list each file once; links to devices are
    /// skipped; a device named on the command line is refused.
    #[cfg(unix)]
    #[test]
    fn hostile_tree_symlink_loops_and_devices() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("a.txt"), "alpha beta gamma").unwrap();
        std::fs::write(root.join("sub/b.html"), "<p>delta</p>").unwrap();
        std::os::unix::fs::symlink(".", root.join("loop")).unwrap();
        std::os::unix::fs::symlink("..", root.join("sub/up")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("zero.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("a.txt"), root.join("link.txt")).unwrap();
        let files = collect_files(&[root.to_path_buf()]).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.txt", "link.txt", "sub/b.html"]);
        assert!(collect_files(&[PathBuf::from("/dev/zero")]).is_err());
        assert!(extract_file(Path::new("/dev/zero"), 1 << 20).is_err());
        assert!(extract_file(&root.join("zero.txt"), 1 << 20).is_err());
    }
}
