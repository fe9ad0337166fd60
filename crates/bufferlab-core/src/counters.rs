//! Counter sets declared once: `mib_counters!` builds a struct of `u64`
//! counters from one line per counter (`field => "Group" "Name"`, the names
//! Linux prints in /proc/net/snmp and /proc/net/netstat), with `add` and
//! `entries`, so a list is never written twice (tcp/endpoint/mib.rs,
//! mib.rs).

/// Declares a counter struct from one line per counter
/// (`field => "Group" "Name"`), with `add` and `entries`.
macro_rules! mib_counters {
    ($(#[$doc:meta])* $ty:ident { $($field:ident => $group:literal $name:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $ty {
            $(pub $field: u64,)+
        }

        impl $ty {
            /// Add another set of the same counters.
            pub fn add(&mut self, o: &$ty) {
                $(self.$field += o.$field;)+
            }

            /// (group, name, value) of every counter, in declaration order.
            pub fn entries(&self) -> impl Iterator<Item = (&'static str, &'static str, u64)> {
                [$(($group, $name, self.$field),)+].into_iter()
            }
        }
    };
}
pub(crate) use mib_counters;
