//! netem (to be written)
