//! TCP (docs/semantics/tcp.md): a Linux-faithful, I/O-free TCP model.
//!
//! * [`TcpEndpoint`] (endpoint/): one connection — segments and timers in,
//!   segments and timer requests out — split along Linux's files: input/
//!   (tcp_input.c), output.rs (tcp_output.c), timer.rs (tcp_timer.c),
//!   info.rs (`TCP_INFO`, [`TcpInfo`]); config.rs: [`TcpConfig`] and the
//!   kernel constants; clock.rs: the phase of the kernel's TCP clock;
//! * pieces over narrow state that never import the socket: recovery/
//!   (scoreboard, SACK, RACK-TLP, PRR, undo; docs/semantics/tcp.md §8–9); rcv.rs: the
//!   receiver state (§7); rtt.rs: RTT estimator and RTO (§5); rate.rs:
//!   delivery-rate samples (§10); timers.rs: the timer table; seq.rs:
//!   sequence arithmetic;
//! * [`cc`]: the congestion-control modules (the hooks of Linux's
//!   `struct tcp_congestion_ops`; Reno, CUBIC, H-TCP, BBR v1), following
//!   docs/tcp-design.md.

pub mod accecn;
pub mod cc;
pub mod clock;
pub mod config;
pub mod endpoint;
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
