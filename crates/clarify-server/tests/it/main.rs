//! Integration tests of the HTTP server on a real socket.

mod abuse;
mod events;
mod links;
mod openapi;
mod outage;
mod proxy;
mod races;
mod requests;
mod sessions;
mod support;
mod webhooks;
