//! SACK and D-SACK block handling (RFC 2018, RFC 2883; net/ipv4/tcp_input.c
//! `tcp_sacktag_write_queue`, `tcp_is_sackblock_valid`, `tcp_check_dsack`,
//! `tcp_dsack_seen`): which blocks of an ACK to believe, which is a D-SACK,
//! how many segments it reports, and which parts the previous ACK already
//! tagged (Linux's `recv_sack_cache`).

use std::cmp::Ordering;

use crate::tcp::seq::{after, before};

/// `struct tcp_sacktag_state`: what one ACK's SACK walk found.
#[derive(Clone, Copy, Debug, Default)]
pub struct SackTagState {
    /// send time of the first and last never-retransmitted segment newly
    /// SACKed, µs (0 = none): the SACK RTT samples
    pub first_sackt: u64,
    pub last_sackt: u64,
    /// lowest sequence found SACKed in a hole (reordering evidence)
    pub reord: u32,
    /// segments newly SACKed or D-SACKed
    pub sack_delivered: u32,
    /// `FLAG_*` bits for `tcp_ack`
    pub flag: u32,
}

/// The sender's window as a SACK block is judged against.
#[derive(Clone, Copy, Debug)]
pub struct SackWindow {
    pub snd_una: u32,
    pub snd_nxt: u32,
    /// the undo marker (0 = no episode to undo)
    pub undo_marker: u32,
    /// largest window the peer offered, bytes
    pub max_window: u32,
}

impl SackWindow {
    /// `tcp_is_sackblock_valid`: a block must lie below SND.NXT; one at or
    /// below SND.UNA is believed only as a D-SACK of this undo episode's
    /// data, and no more than a window back.
    pub fn block_valid(&self, is_dsack: bool, start: u32, end: u32) -> bool {
        if after(end, self.snd_nxt) || !before(start, end) || !before(start, self.snd_nxt) {
            return false;
        }
        if after(start, self.snd_una) {
            return true;
        }
        if !is_dsack || self.undo_marker == 0 || after(end, self.snd_una) {
            return false;
        }
        if !before(start, self.undo_marker) {
            return true;
        }
        if !after(end, self.undo_marker) {
            return false;
        }
        !before(start, end.wrapping_sub(self.max_window))
    }
}

/// RFC 2883 §4: the first block is a D-SACK when it lies below the
/// cumulative ACK or inside the second block.
pub fn first_block_is_dsack(blocks: &[(u32, u32)], ack: u32) -> bool {
    match blocks {
        [] => false,
        [(start, _), ..] if before(*start, ack) => true,
        [(s0, e0), (s1, e1), ..] => !after(*e0, *e1) && !before(*s0, *s1),
        [_] => false,
    }
}

/// Segments a D-SACK of `[start, end)` reports (`tcp_dsack_seen`): one per
/// MSS, rounded up; 0 for an empty block or one larger than the window.
pub fn dsack_segments(start: u32, end: u32, max_window: u32, mss: u32) -> u32 {
    if !before(start, end) {
        return 0;
    }
    let len = end.wrapping_sub(start);
    if len > max_window {
        0
    } else if len > mss {
        len.div_ceil(mss)
    } else {
        1
    }
}

/// Order `(start, end, is_dsack)` blocks by start sequence, wrap-safe.
pub fn sort_blocks(blocks: &mut [(u32, u32, bool)]) {
    blocks.sort_by(|a, b| {
        if before(a.0, b.0) {
            Ordering::Less
        } else if a.0 == b.0 {
            Ordering::Equal
        } else {
            Ordering::Greater
        }
    });
}

/// Call `tag` on each part of `[start, end)` that the previous ACK's sorted
/// blocks `cache` did not cover, lowest first.
pub fn for_each_uncached(
    start: u32,
    end: u32,
    cache: &[(u32, u32)],
    mut tag: impl FnMut(u32, u32),
) {
    let mut cur = start;
    for &(cached_start, cached_end) in cache {
        if !after(cached_end, cur) || !before(cached_start, end) {
            continue;
        }
        if after(cached_start, cur) {
            tag(cur, cached_start);
        }
        cur = cached_end;
        if !before(cur, end) {
            return;
        }
    }
    if before(cur, end) {
        tag(cur, end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: SackWindow = SackWindow {
        snd_una: 10_000,
        snd_nxt: 20_000,
        undo_marker: 8_000,
        max_window: 64_000,
    };

    #[test]
    fn blocks_above_snd_una_and_below_snd_nxt_are_valid() {
        assert!(WINDOW.block_valid(false, 11_000, 12_000));
        assert!(WINDOW.block_valid(false, 19_000, 20_000));
        assert!(!WINDOW.block_valid(false, 19_000, 21_000), "beyond SND.NXT");
        assert!(!WINDOW.block_valid(false, 12_000, 12_000), "empty");
        assert!(!WINDOW.block_valid(false, 12_000, 11_000), "reversed");
    }

    #[test]
    fn old_blocks_count_only_as_dsacks_of_the_undo_episode() {
        assert!(!WINDOW.block_valid(false, 9_000, 10_000), "not a D-SACK");
        assert!(WINDOW.block_valid(true, 9_000, 10_000), "after the marker");
        assert!(
            WINDOW.block_valid(true, 7_000, 9_000),
            "straddles the marker"
        );
        assert!(!WINDOW.block_valid(true, 6_000, 7_000), "before the marker");
        assert!(!WINDOW.block_valid(true, 9_000, 11_000), "crosses SND.UNA");
        let no_episode = SackWindow {
            undo_marker: 0,
            ..WINDOW
        };
        assert!(!no_episode.block_valid(true, 9_000, 10_000));
    }

    /// RFC 2883 §4.1 (below the cumulative ACK) and §4.2 (inside the next block).
    #[test]
    fn the_first_block_is_a_dsack_below_the_ack_or_inside_the_second_block() {
        assert!(first_block_is_dsack(&[(3_000, 3_500)], 4_000));
        assert!(!first_block_is_dsack(&[(4_500, 5_000)], 4_000));
        assert!(first_block_is_dsack(
            &[(4_500, 5_000), (4_500, 5_500)],
            4_000
        ));
        assert!(!first_block_is_dsack(
            &[(4_500, 5_000), (5_500, 6_000)],
            4_000
        ));
        assert!(!first_block_is_dsack(&[], 4_000));
    }

    #[test]
    fn a_dsack_reports_one_segment_per_mss_rounded_up() {
        assert_eq!(dsack_segments(1_000, 2_000, 64_000, 1_000), 1);
        assert_eq!(dsack_segments(1_000, 1_500, 64_000, 1_000), 1);
        assert_eq!(dsack_segments(1_000, 3_001, 64_000, 1_000), 3);
        assert_eq!(dsack_segments(1_000, 1_000, 64_000, 1_000), 0);
        assert_eq!(
            dsack_segments(0, 70_000, 64_000, 1_000),
            0,
            "wider than the window"
        );
    }

    #[test]
    fn blocks_sort_by_sequence_across_the_wrap() {
        let mut blocks = [
            (500, 900, false),
            (u32::MAX - 999, 100, false),
            (200, 300, true),
        ];
        sort_blocks(&mut blocks);
        assert_eq!(blocks.map(|b| b.0), [u32::MAX - 999, 200, 500]);
    }

    #[test]
    fn only_the_parts_the_previous_ack_did_not_tag_are_walked() {
        let walk = |start, end, cache: &[(u32, u32)]| {
            let mut parts = Vec::new();
            for_each_uncached(start, end, cache, |s, e| parts.push((s, e)));
            parts
        };
        assert_eq!(
            walk(1_000, 6_000, &[(2_000, 4_000)]),
            [(1_000, 2_000), (4_000, 6_000)]
        );
        assert_eq!(walk(1_000, 6_000, &[(1_000, 6_000)]), []);
        assert_eq!(
            walk(1_000, 6_000, &[(0, 3_000), (5_000, 9_000)]),
            [(3_000, 5_000)]
        );
        assert_eq!(walk(1_000, 2_000, &[(3_000, 4_000)]), [(1_000, 2_000)]);
    }
}
