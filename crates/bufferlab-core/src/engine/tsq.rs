//! TCP Small Queues (docs/semantics/tcp.md §6.4): whether a node's sockets
//! charge their packets' send memory at all, and the hand-back of what the
//! devices released to the sockets, which may then send more. Follows
//! net/ipv4/tcp_output.c (`tcp_small_queue_check`, `tcp_wfree`,
//! `tcp_tsq_handler`) and drivers/net/veth.c (`veth_xmit` orphans the skb).

use super::iface::Iface;
use super::Simulator;
use crate::topology::{NodeId, Topology};

impl Simulator {
    /// TCP Small Queues (docs/semantics/tcp.md §6.4): tell the sockets what
    /// their hosts gave back since the last call (`tcp_wfree`), each
    /// application its own releases in order, then let them send; what they
    /// send may free more, so until none is left. Linux runs the TSQ handlers
    /// from a BH work item after the qdisc run that freed the skbs: here after
    /// the event or arrival that did. (Called after every event, mostly
    /// with nothing to hand back: the check alone is inlined.)
    #[inline]
    pub(super) fn settle_tsq(&mut self) {
        if self.arena.has_tsq() {
            self.hand_back_tsq();
        }
    }

    /// The hand-back itself, out of line: inlined into `settle_tsq` it
    /// made the check a call of its own (benches/RESULTS.md, `engine26b`).
    #[inline(never)]
    fn hand_back_tsq(&mut self) {
        while self.arena.has_tsq() {
            let mut batch = self.arena.take_tsq();
            batch.sort_by_key(|r| r.flow);
            let mut i = 0;
            while i < batch.len() {
                let flow = batch[i].flow;
                let n = batch[i..].iter().take_while(|r| r.flow == flow).count();
                if (flow as usize) < self.apps.len() {
                    let part = &batch[i..i + n];
                    self.with_app(flow, |app, ctx| app.tsq_release(ctx, part));
                    self.after_app(flow);
                }
                i += n;
            }
            self.arena.restore_tsq_buffer(batch);
            if self.work_at_instant() {
                self.stuck_with("TCP Small Queues".to_string());
                return;
            }
        }
    }
}

/// Can `node`'s packets wait in it after its TCP sockets send them? Only then
/// do the sockets charge their skbs for TCP Small Queues (docs/semantics/tcp.md
/// §6.4): not behind a plain veth (`noqueue`: `veth_xmit` orphans the skb at
/// once) nor behind a netem that delays at the root (it orphans at enqueue).
pub(super) fn node_tsq(topo: &Topology, ifaces: &[Iface], node: NodeId) -> bool {
    topo.node_ifaces[node].iter().any(|&i| {
        let ifc = &ifaces[i];
        if ifc.rate.bps() > 0 || ifc.hook.as_ref().is_some_and(|h| h.has_egress()) {
            return true;
        }
        match ifc.tree.node_qdisc(0) {
            _ if ifc.tree.is_noqueue() => false,
            Some(crate::qdisc::AnyQdisc::Netem(q)) => !q.orphans(),
            _ => true,
        }
    })
}
