//! Integration tests of the HTTP server on a real socket.

mod events;
mod links;
mod mcp;
mod openapi;
mod races;
mod requests;
mod sessions;
mod support;
mod webhooks;
