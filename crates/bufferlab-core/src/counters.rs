//! Counter sets declared once: `mib_counters!` builds a struct of counters
//! from one line per counter (`field => "Group" "Name"`, the names Linux
//! prints in /proc/net/snmp and /proc/net/netstat), with `entries`, and
//! optionally the `u64` struct that adds them up, so a list is never written
//! twice (tcp/endpoint/mib.rs, mib.rs).

/// Declares `$ty`, a counter struct of `$int` fields, from one line per
/// counter (`field => "Group" "Name"`), with `entries`; with `=> $total`,
/// also `$total`, the same counters as `u64`, with `add(&$ty)`.
macro_rules! mib_counters {
    ($(#[$doc:meta])* $ty:ident($int:ty)
     { $($field:ident => $group:literal $name:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $ty {
            $(pub $field: $int,)+
        }

        impl $ty {
            /// (group, name, value) of every counter, in declaration order.
            pub fn entries(&self) -> impl Iterator<Item = (&'static str, &'static str, u64)> {
                [$(($group, $name, u64::from(self.$field)),)+].into_iter()
            }
        }
    };
    ($(#[$doc:meta])* $ty:ident($int:ty) => $(#[$tdoc:meta])* $total:ident
     { $($field:ident => $group:literal $name:literal),+ $(,)? }) => {
        $crate::counters::mib_counters! {
            $(#[$doc])* $ty($int) { $($field => $group $name,)+ }
        }
        $crate::counters::mib_counters! {
            $(#[$tdoc])* $total(u64) { $($field => $group $name,)+ }
        }

        impl $total {
            /// Add one set of the counters.
            pub fn add(&mut self, o: &$ty) {
                $(self.$field += u64::from(o.$field);)+
            }
        }
    };
}
pub(crate) use mib_counters;
