//! TCP (../shared/specs/tcp.md): a Linux-faithful, I/O-free TCP model.
//! So far this holds the congestion-control modules ([`cc`]: the hooks of
//! Linux's `struct tcp_congestion_ops` and ports of Reno, CUBIC, H-TCP and
//! BBR v1); the endpoint (segments and timers in, segments and timer
//! requests out) and its parts follow docs/tcp-design.md.

pub mod cc;
