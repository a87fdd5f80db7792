//! Integration tests of the HTTP server on a real socket.

mod abuse;
mod browser;
mod chrome;
mod events;
mod inbox;
mod limits;
mod links;
mod mcp;
mod openapi;
mod outage;
mod proxy;
mod races;
mod requests;
mod sessions;
mod support;
mod webhooks;
