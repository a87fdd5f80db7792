//! Display blocks rendered for the people who decide: one renderer per format, all from the same
//! blocks (`clarify_core::display`), so every surface shows the same thing; and the other
//! markup more than one surface draws the same (the insights' charts).
//!
//! - [`html`]: sanitised HTML for the inbox, the answer-link page, e-mail and the evidence
//!   report. Markdown is parsed by pulldown-cmark with raw HTML turned into text and links kept
//!   only for `http`, `https` and `mailto`; the result then passes ammonia's allow-list, so
//!   nothing an agent writes can run in a page even if a rule above were wrong. Diffs are tables
//!   with old and new line numbers and a `+` or `−` on each changed line.
//! - [`markup`]: the [`Markup`] trait a text format implements (how to make agent text inert,
//!   bold, a link, a preformatted block), and the one walk from blocks (markdown included) to
//!   that format, cut to a budget with a line saying so. Chat platforms implement it in
//!   `clarify-channels`; [`text`] implements it for plain text (e-mail's text part, a pipe)
//!   and a colour terminal.
//! - [`charts`]: the insights (`clarify_model::Insights`) drawn as SVG and HTML, the same for the
//!   inbox's Insights page and `clarify report`'s file.

pub mod charts;
pub mod html;
pub mod markup;
pub mod text;

pub use markup::{Markup, blocks as render_blocks, markdown as render_markdown};

/// Whether a link in agent text may be followed: `http`, `https` and `mailto` only. A relative
/// link would resolve against clarify's own origin, so it is refused too.
pub fn allowed_link(url: &str) -> bool {
    url::Url::parse(url.trim()).is_ok_and(|u| matches!(u.scheme(), "http" | "https" | "mailto"))
}
