//! Tests of the `clarify` binary as people run it: real processes, real sockets, real stores.

mod acp;
mod book;
mod cli;
mod config;
mod crash;
mod dependencies;
mod deploying;
mod failover;
mod faults;
mod figures;
mod figures_table;
mod flood;
mod gate;
mod handbook;
mod hooks;
mod insights;
mod mcp;
mod mcp_remote;
mod modules;
mod operating;
mod paths;
mod replicas;
mod seen;
mod serve;
mod store_commands;
mod support;
