//! bufferlab-core: a deterministic, packet-level discrete-event network
//! simulator with Linux qdisc semantics.
//!
//! Layers and data flow: a validated config (topology, seed, options) builds
//! the [`engine::Simulator`]; `tc` requests reshape the qdisc trees of its
//! interfaces; applications (ping, iperf3, UDP generators) inject packets;
//! the run loop pops events ordered by (time, sequence); results leave as
//! plain data for the Python layer to format. The engine reads no files,
//! clocks or environment.

pub mod error;
pub mod packet;
pub mod qdisc;
pub mod rng;
pub mod time;
