//! Errors a user can act on. Nothing in the engine panics on bad input: every
//! user mistake is one of these, and the Python binding maps each variant to
//! an exception class (crates/bufferlab-py/src/lib.rs).

use std::fmt;

/// `tc` failures, worded as `tc`/the kernel word them (docs/semantics/formats.md §3.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TcError {
    /// EEXIST: `RTNETLINK answers: File exists`.
    Exists,
    /// ENOENT: `RTNETLINK answers: No such file or directory`.
    NotFound,
    /// EINVAL, with the reason the kernel's extack (or we) would give.
    Invalid(String),
    /// `Cannot find device "X"`.
    NoDevice(String),
    /// The kernel's extended ack alone, as `tc` prints it when it has one:
    /// `Error: Specified class not found.`
    Extack(String),
    /// EBUSY: `RTNETLINK answers: Device or resource busy`.
    Busy,
    /// EOPNOTSUPP, with the extack if the kernel gives one.
    NotSupported(String),
    /// A `tc filter` the kernel refused: its extack, then tc/tc_filter.c's
    /// `We have an error talking to the kernel`.
    FilterExtack(String),
    /// A `tc filter` the kernel refused without an extack: the errno's text
    /// as `rtnl_talk` prints it (`File exists`), then tc_filter.c's line.
    FilterErrno(&'static str),
}

impl fmt::Display for TcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TcError::Exists => write!(f, "RTNETLINK answers: File exists"),
            TcError::NotFound => write!(f, "RTNETLINK answers: No such file or directory"),
            TcError::Invalid(why) if why.is_empty() => {
                write!(f, "RTNETLINK answers: Invalid argument")
            }
            TcError::Invalid(why) => {
                write!(f, "Error: {why}.\nRTNETLINK answers: Invalid argument")
            }
            TcError::NoDevice(dev) => write!(f, "Cannot find device \"{dev}\""),
            TcError::Extack(why) => write!(f, "Error: {why}."),
            TcError::Busy => write!(f, "RTNETLINK answers: Device or resource busy"),
            TcError::NotSupported(why) if why.is_empty() => {
                write!(f, "RTNETLINK answers: Operation not supported")
            }
            TcError::NotSupported(why) => {
                write!(
                    f,
                    "Error: {why}.\nRTNETLINK answers: Operation not supported"
                )
            }
            TcError::FilterExtack(why) => {
                write!(f, "Error: {why}.\nWe have an error talking to the kernel")
            }
            TcError::FilterErrno(errno) => {
                write!(
                    f,
                    "RTNETLINK answers: {errno}\nWe have an error talking to the kernel"
                )
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The topology or an option in the simulation config is invalid.
    Config(String),
    /// A `tc` request failed.
    Tc(TcError),
    /// An application could not be started (bad spec, unknown node, ...).
    App(String),
    /// The JSON handed to the engine does not match the expected schema.
    Schema(String),
    /// Simulated time cannot advance (see engine/run.rs `MAX_PACKETS_PER_INSTANT`).
    Stalled(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) | Error::App(m) | Error::Schema(m) | Error::Stalled(m) => {
                f.write_str(m)
            }
            Error::Tc(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

impl From<TcError> for Error {
    fn from(e: TcError) -> Self {
        Error::Tc(e)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
