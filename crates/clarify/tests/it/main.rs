//! Tests of the `clarify` binary as people run it: real processes, real sockets, real stores.

mod cli;
mod faults;
mod mcp;
mod serve;
mod support;
