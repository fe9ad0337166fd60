//! A device's own receive and transmit steps around the qdiscs: what a downed
//! device drops, the ingress/clsact hook's verdicts (pass, drop, `mirred`
//! redirect) and mirrored copies, and an ifb handing back what its qdisc
//! released. Follows
//! net/core/dev.c (`__netif_receive_skb_core`, `sch_handle_ingress`,
//! `__dev_queue_xmit`, `sch_handle_egress`), net/sched/act_mirred.c and
//! drivers/net/ifb.c (`ifb_xmit`, `ifb_ri_tasklet`).

use super::Simulator;
use crate::packet::PacketId;
use crate::qdisc::ingress::Outcome;
use crate::qdisc::DropReason;
use crate::time::SimTime;
use crate::topology::IfaceId;

impl Simulator {
    /// A packet arrives on `iface` (of the receiving node) now.
    pub(super) fn receive(&mut self, iface: IfaceId, pid: PacketId) {
        self.receive_at(iface, pid, self.now);
    }

    /// A packet that reached `iface` at `reached` (earlier than now when a
    /// host's receiving stack took time over it: tcpdump's timestamp) is
    /// handled now.
    pub(super) fn receive_at(&mut self, iface: IfaceId, pid: PacketId, reached: SimTime) {
        if self.obs.captures_on(iface) {
            let t = reached.as_nanos();
            self.obs
                .capture(&mut self.topo, iface, t, self.arena.get(pid));
        }
        if self.ifaces[iface].down {
            return self.link_down_drop(iface, pid);
        }
        let ifc = &mut self.ifaces[iface];
        ifc.rx_packets += 1;
        ifc.rx_bytes += self.arena.len_of(pid) as u64;
        if let Some(h) = ifc.hook.as_mut() {
            // sch_handle_ingress sees the frame without its Ethernet header
            let p = self.arena.get(pid);
            let len = p.len.saturating_sub(crate::packet::ETH_HEADER);
            let out = h.run(false, self.now, p, len);
            self.hook_mirrors(iface, pid);
            match out {
                Outcome::Pass => {}
                Outcome::Drop => return self.hook_drop(iface, pid),
                Outcome::Redirect(to) => return self.redirect(to, iface, false, pid),
            }
        }
        self.receive_past_hook(iface, pid);
    }

    pub(super) fn iface_xmit(&mut self, iface: IfaceId, pid: PacketId) {
        if self.ifaces[iface].down {
            return self.link_down_drop(iface, pid);
        }
        if let Some(h) = self.ifaces[iface].hook.as_mut().filter(|h| h.has_egress()) {
            let p = self.arena.get(pid);
            let out = h.run(true, self.now, p, p.len);
            self.hook_mirrors(iface, pid);
            match out {
                Outcome::Pass => {}
                Outcome::Drop => return self.hook_drop(iface, pid),
                Outcome::Redirect(to) => return self.redirect(to, iface, true, pid),
            }
        }
        self.xmit_past_hook(iface, pid);
    }

    /// A downed device dropped `pid` (counted on the device, reason link_down).
    fn link_down_drop(&mut self, iface: IfaceId, pid: PacketId) {
        let len = self.arena.len_of(pid);
        let segs = self.arena.segs_of(pid);
        self.ifaces[iface]
            .drops
            .count(DropReason::LinkDown, len, segs);
        self.arena.free(pid);
    }

    /// A hook's filter dropped `pid` (counted on the device, reason tc_action).
    fn hook_drop(&mut self, iface: IfaceId, pid: PacketId) {
        let len = self.arena.len_of(pid);
        let segs = self.arena.segs_of(pid);
        self.ifaces[iface]
            .drops
            .count(DropReason::TcAction, len, segs);
        self.arena.free(pid);
    }

    /// `mirred egress redirect dev TO` from `from`'s hook: the packet enters
    /// TO's transmit path (act_mirred.c `tcf_mirred_act`). Only an ifb
    /// sends it back; a redirect to any other device transmits it there.
    fn redirect(&mut self, to: IfaceId, from: IfaceId, egress: bool, pid: PacketId) {
        if self.ifaces[to].ifb {
            let i = pid.0 as usize;
            if i >= self.ifb_from.len() {
                self.ifb_from.resize(i + 1, u32::MAX);
            }
            self.ifb_from[i] = ((from as u32) << 1) | egress as u32;
            // ifb_xmit counts what it is given as received
            let len = self.arena.len_of(pid) as u64;
            let ifc = &mut self.ifaces[to];
            ifc.rx_packets += 1;
            ifc.rx_bytes += len;
        }
        self.iface_xmit(to, pid);
    }

    /// `mirred egress mirror` from `iface`'s hook: a copy of `pid`
    /// (`skb_clone`: no socket charge) enters each target's transmit path,
    /// not marked redirected, so an ifb drops it once its qdisc releases it
    /// (ifb.c `ifb_xmit`). Copies of copies (a mirror back into a hook
    /// that mirrors) stop 4 deep, act_mirred.c's `MIRRED_NEST_LIMIT`, where
    /// the kernel drops the deepest copy instead.
    fn hook_mirrors(&mut self, iface: IfaceId, pid: PacketId) {
        let Some(to) = self.ifaces[iface].hook.as_mut().map(|h| h.take_mirrored()) else {
            return;
        };
        if to.is_empty() || self.mirred_nest >= 4 {
            return;
        }
        self.mirred_nest += 1;
        for to in to {
            let copy = crate::packet::Packet {
                tsq: 0,
                ..*self.arena.get(pid)
            };
            let c = self.arena.alloc(copy);
            self.iface_xmit(to, c);
        }
        self.mirred_nest -= 1;
    }

    /// `ifb_ri_tasklet`: the ifb's qdisc released `pid`; it goes on where
    /// it was going. tcpdump on the ifb sees it here, as the ifb transmits it
    /// (`dev_queue_xmit_nit` before `ifb_xmit`), a mirrored copy too.
    pub(super) fn ifb_return(&mut self, ifb: IfaceId, pid: PacketId) {
        if self.obs.captures_on(ifb) {
            let t = self.now.as_nanos();
            self.obs
                .capture(&mut self.topo, ifb, t, self.arena.get(pid));
        }
        let len = self.arena.len_of(pid) as u64;
        let from = self
            .ifb_from
            .get(pid.0 as usize)
            .copied()
            .unwrap_or(u32::MAX);
        let ifc = &mut self.ifaces[ifb];
        if from == u32::MAX {
            // not redirected (a `mirred … mirror` copy): `ifb_xmit` counts
            // it as received and drops it
            ifc.rx_packets += 1;
            ifc.rx_bytes += len;
            self.hook_drop(ifb, pid);
            return;
        }
        ifc.tx_packets += 1;
        ifc.tx_bytes += len;
        self.ifb_from[pid.0 as usize] = u32::MAX;
        let orig = (from >> 1) as IfaceId;
        if from & 1 == 1 {
            self.xmit_past_hook(orig, pid);
        } else {
            self.receive_past_hook(orig, pid);
        }
    }
}
