//! bufferlab-core: a deterministic, packet-level discrete-event network
//! simulator with Linux qdisc semantics.
//!
//! Layers and data flow: a validated config (topology, seed, options) builds
//! the [`engine::Simulator`]; `tc` requests reshape the qdisc trees of its
//! interfaces ([`qdisc`]); applications ([`app`]: ping, iperf3, UDP
//! generators, the queue monitor) inject packets; the run loop pops events
//! ordered by (time, sequence) ([`sched`]); results leave as plain data
//! (JSON values) for the Python layer to format. The engine opens no files
//! and reads no clocks or environment, and the same config and seed give
//! bit-identical results. The one producer of file contents is [`capture`]
//! (packet captures, queue traces): it streams what it observes into writers
//! the embedder opens, and never feeds back.

pub mod app;
pub mod capture;
pub mod closed;
pub mod counters;
pub mod engine;
pub mod error;
pub mod host;
pub mod host_noise;
pub mod mib;
pub mod packet;
pub mod prefetch;
pub mod qdisc;
pub mod rng;
pub mod sched;
pub mod schema;
pub mod tcp;
pub mod time;
pub mod topology;

pub use engine::Simulator;
pub use error::{Error, Result, TcError};
