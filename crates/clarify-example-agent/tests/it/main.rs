//! Tests of the example agent, one binary: `conversation` runs the real agent process against a
//! scripted chat-completions server and a real clarify server (both from `support`), and
//! `sandbox` checks the gated tool's confinement and the state file directly.

mod conversation;
mod sandbox;
mod support;
