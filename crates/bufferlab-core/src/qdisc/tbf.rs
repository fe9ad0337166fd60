//! tbf (to be written)
