//! Tests of the MCP handler in-process: a real MCP session over an in-memory pipe, on a memory
//! store, for what the process-level tests of `clarify mcp` and `/mcp` would make slow or
//! indirect: every way `get_answer` arguments can be wrong, expiry under an injected clock, and
//! the one-line rendering of outcomes.

mod arguments;
mod summaries;
mod support;
