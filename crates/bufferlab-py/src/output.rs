//! The files the engine's observers write (packet captures, queue traces):
//! the core streams bytes into what this opens and touches no file system.

use bufferlab_core::capture::Output;
use std::fs::OpenOptions;
use std::io::{self, BufWriter};

/// Large enough that a gigabit capture costs a write call per ~170 frames.
const BUFFER_BYTES: usize = 256 * 1024;

/// Create (or truncate) an output file without following a symlink at its
/// place: a link found there is removed first (its target is never opened or
/// changed) and the file is opened with `O_NOFOLLOW`, so a link planted in
/// between makes the open fail instead of writing elsewhere. Intermediate
/// folders are the caller's (the Python layer creates them link-free).
pub fn open(path: &str) -> io::Result<Output> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        std::fs::remove_file(path)?;
    }
    let mut opts = OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW);
    }
    Ok(Box::new(BufWriter::with_capacity(
        BUFFER_BYTES,
        opts.open(path)?,
    )))
}
