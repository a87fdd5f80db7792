//! Store tests: one binary. `conformance` runs every case against every backend; `support`
//! opens the stores it needs.

mod conformance;
mod support;
