//! Closed request objects: what serde's `deny_unknown_fields` cannot say by itself.
//! Below every request type (qdisc specs, capture filters), so the types and the schema
//! built from them (schema.rs) do not depend on each other.

/// `deserialize_with` of the unit variants of internally tagged enums (a
/// qdisc without options): serde ignores unknown keys beside such a
/// variant's tag, this refuses them as `deny_unknown_fields` does elsewhere.
pub(crate) fn no_fields<'de, D: serde::Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct NoFields {}
    serde::Deserialize::deserialize(d).map(|NoFields {}| ())
}
