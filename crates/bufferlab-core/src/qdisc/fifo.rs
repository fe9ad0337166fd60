//! fifo (to be written)
