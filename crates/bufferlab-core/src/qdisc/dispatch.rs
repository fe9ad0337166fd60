//! The registry of qdisc kinds: [`AnyQdisc`], one variant per kind,
//! delegating every [`Qdisc`] operation by `match` (static dispatch, no
//! trait objects on the per-packet path), and `init` by kind
//! (net/sched/sch_api.c `qdisc_lookup_ops` + `qdisc_create`).
//!
//! Adding a qdisc: its file implementing [`Qdisc`] (declared in `mod.rs`)
//! and one line in the `register_qdiscs!` list at the bottom; the order of
//! the list is the order `init` asks the kinds.

use super::ops::{BuildEnv, Built, Changed, ClassOps, Peeked, Purged, Qdisc, Reduce};
use super::spec::{QdiscSpec, U32Filter};
use super::tree::Node;
use super::{QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::time::SimTime;

/// Declares [`AnyQdisc`] with the given variants and implements [`Qdisc`]
/// for it by delegating to the variant; [`AnyQdisc::build`] asks each kind
/// in list order whether the spec is its own.
macro_rules! register_qdiscs {
    ($($variant:ident($kind:ty)),+ $(,)?) => {
        /// Every qdisc kind. Variants are stored inline: a device has a
        /// handful of nodes, and boxing netem would add a pointer chase to
        /// every packet.
        #[derive(Debug)]
        #[allow(clippy::large_enum_variant)]
        pub enum AnyQdisc {
            $($variant($kind),)+
        }

        $(impl From<$kind> for AnyQdisc {
            fn from(q: $kind) -> Self {
                AnyQdisc::$variant(q)
            }
        })+

        impl AnyQdisc {
            /// The qdisc a device starts with: `noqueue` on a veth, `pfifo_fast`
            /// on a NIC with a real TX queue (Linux's `default_qdisc`).
            pub fn device_default(nic: bool) -> AnyQdisc {
                if nic {
                    AnyQdisc::PfifoFast(super::prio::PfifoFast::default())
                } else {
                    AnyQdisc::Noqueue(super::noqueue::Noqueue::default())
                }
            }

            /// `init` of the kind `spec` names, with its default child.
            pub fn build(spec: &QdiscSpec, env: &BuildEnv) -> Result<Built<AnyQdisc>, TcError> {
                $(if let Some(built) = <$kind as Qdisc>::build(spec, env) {
                    let b = built?;
                    return Ok(Built { qdisc: b.qdisc.into(), default_child: b.default_child });
                })+
                Err(TcError::Invalid(format!("unknown qdisc {}", spec.kind())))
            }

            /// The operations of the kind inside.
            #[inline]
            fn ops(&self) -> &dyn Qdisc {
                match self {
                    $(AnyQdisc::$variant(q) => q,)+
                }
            }
        }

        impl Qdisc for AnyQdisc {
            fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
                Some(AnyQdisc::build(spec, env))
            }

            fn kind(&self) -> &'static str {
                self.ops().kind()
            }

            #[inline]
            fn enqueue(
                &mut self,
                ctx: &mut QdiscCtx,
                reduce: &mut Reduce,
                id: PacketId,
                child: &mut [Node],
            ) -> Verdict {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::enqueue(q, ctx, reduce, id, child),)+
                }
            }

            #[inline]
            fn dequeue(
                &mut self,
                ctx: &mut QdiscCtx,
                reduce: &mut Reduce,
                child: &mut [Node],
            ) -> Option<PacketId> {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::dequeue(q, ctx, reduce, child),)+
                }
            }

            #[inline]
            fn peek(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, child: &mut [Node]) -> Peeked {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::peek(q, ctx, reduce, child),)+
                }
            }

            fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::reset(q, ctx),)+
                }
            }

            fn change(
                &mut self,
                spec: &QdiscSpec,
                ctx: &mut QdiscCtx,
                child: Option<&AnyQdisc>,
            ) -> Result<Changed, TcError> {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::change(q, spec, ctx, child),)+
                }
            }

            #[inline]
            fn stats(&self) -> &QdiscStats {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::stats(q),)+
                }
            }

            #[inline]
            fn stats_mut(&mut self) -> &mut QdiscStats {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::stats_mut(q),)+
                }
            }

            fn options(&self) -> serde_json::Value {
                self.ops().options()
            }

            fn xstats(&self) -> serde_json::Value {
                self.ops().xstats()
            }

            fn walked_classes(&self, now: SimTime) -> serde_json::Value {
                self.ops().walked_classes(now)
            }

            #[inline]
            fn held(&self) -> u64 {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::held(q),)+
                }
            }

            fn classful(&self) -> bool {
                self.ops().classful()
            }

            fn class_ops(&mut self) -> Option<&mut dyn ClassOps> {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::class_ops(q),)+
                }
            }

            fn filters(&mut self) -> Option<&mut Vec<U32Filter>> {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::filters(q),)+
                }
            }

            #[inline]
            fn absorb(&mut self, r: Reduce) {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::absorb(q, r),)+
                }
            }

            fn placed(&mut self, at_root: bool) {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::placed(q, at_root),)+
                }
            }

            fn duplicates_reinjected(&mut self) {
                match self {
                    $(AnyQdisc::$variant(q) => Qdisc::duplicates_reinjected(q),)+
                }
            }

            fn netem_duplicates(&self) -> Option<bool> {
                self.ops().netem_duplicates()
            }

            fn inner_netems(&self, out: &mut Vec<bool>) {
                self.ops().inner_netems(out)
            }
        }
    };
}

register_qdiscs! {
    Noqueue(super::noqueue::Noqueue),
    Fifo(super::fifo::Fifo),
    Tbf(super::tbf::Tbf),
    Netem(super::netem::Netem),
    Red(super::red::Red),
    Blue(super::blue::Blue),
    Codel(super::codel::Codel),
    FqCodel(super::fq_codel::FqCodel),
    Pie(super::pie::Pie),
    RedNs3(super::red_ns3::RedNs3),
    Sfb(super::sfb::Sfb),
    Htb(super::htb::Htb),
    PfifoFast(super::prio::PfifoFast),
    Prio(super::prio::Prio),
    DualPi2(super::dualpi2::DualPi2),
    Fq(super::fq::Fq),
    Sfq(super::sfq::Sfq),
    FqPie(super::fq_pie::FqPie),
    Drr(super::drr::Drr),
    Ets(super::ets::Ets),
    Hfsc(super::hfsc::Hfsc),
    Cake(super::cake::Cake),
}
