//! Loss-recovery pieces, each over its own narrow state and unit tested with
//! hand-built sequences (docs/semantics/tcp.md §8–9). None of them knows the socket; the
//! state machine that drives them with socket state is `tcp/input/`.
//!
//! * scoreboard.rs: the retransmission queue and its SACKED/LOST/RETRANS
//!   marks (RFC 6675's scoreboard as Linux keeps it);
//! * sack.rs: SACK/D-SACK block checks (RFC 2018, RFC 2883);
//! * rack.rs: RACK-TLP time-based loss detection (RFC 8985, tcp_recovery.c);
//! * prr.rs: Proportional Rate Reduction (RFC 6937, `tcp_cwnd_reduction`);
//! * undo.rs: the undo bookkeeping (RFC 3522/2883 as `tcp_try_undo_*`).

pub mod prr;
pub mod rack;
pub mod sack;
pub mod scoreboard;
pub mod undo;

pub use prr::{Prr, PrrAck};
pub use rack::{Rack, ReoWndInputs};
pub use scoreboard::{Scoreboard, Seg, EVER_RETRANS, LOST, RETRANS, SACKED_ACKED, SACKED_RETRANS};
pub use undo::Undo;
