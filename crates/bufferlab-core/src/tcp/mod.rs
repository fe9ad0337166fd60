//! TCP (../shared/specs/tcp.md): a Linux-faithful, I/O-free TCP model.
//!
//! * [`TcpEndpoint`] (endpoint.rs): one connection — segments and timers in,
//!   segments and timer requests out — with its configuration
//!   ([`TcpConfig`]) and `TCP_INFO` snapshot ([`TcpInfo`]);
//! * input/: ACK processing and the recovery state machine (tcp.md §8–9,
//!   tcp_input.c); recovery/: its pieces over narrow state — scoreboard,
//!   SACK, RACK-TLP, PRR, undo; rcv.rs: the receiver (§7); rtt.rs: RTT estimator
//!   and RTO (§5); rate.rs: delivery-rate samples (§10); timers.rs: the
//!   timer table; seq.rs: sequence arithmetic;
//! * [`cc`]: the congestion-control modules (the hooks of Linux's
//!   `struct tcp_congestion_ops`; Reno, CUBIC, H-TCP, BBR v1), following
//!   docs/tcp-design.md.

pub mod cc;
pub mod endpoint;
mod input;
pub mod minmax;
pub mod rate;
pub mod rcv;
pub mod recovery;
pub mod rtt;
pub mod seq;
pub mod timers;

#[cfg(test)]
mod harness;

pub use endpoint::{Segment, TcpConfig, TcpEndpoint, TcpInfo, TcpState};
