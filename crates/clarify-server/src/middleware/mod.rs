//! Everything here runs before a room's handler, or around it, and no route lives here.
//!
//! Who is calling ([`auth`]: bearer keys through the key cache, inbox sessions with their CSRF
//! check, the per-key rate limit; and the session cookie those routes set), the request's id and
//! log lines ([`logs`]), its count and latency in the metrics ([`track`]), and the refusal of a
//! path that is not UTF-8 before a path extractor sees it ([`paths`]). The state these read (the
//! key cache, the limits, the metrics registry) lives in `state/`; `app` in the crate root puts
//! the layers around the rooms' routes.

pub mod auth;
pub mod logs;
pub mod paths;
pub mod track;
