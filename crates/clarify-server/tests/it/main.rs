//! Integration tests of the HTTP server on a real socket.

mod abuse;
mod browser;
mod channels;
mod chrome;
mod decisions;
mod email;
mod events;
mod fake_slack;
mod fake_smtp;
mod fake_telegram;
mod grants;
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
mod slack;
mod support;
mod telegram;
mod webhooks;
