//! Markdown as Discord and Mattermost read it, written once: bold, strike, code, fences and
//! quotes are the same on both; each platform's [`Flavour`] says the three things that differ
//! (how agent text is made inert, which character emphasises, how a link's URL stays whole).

use clarify_render::Markup;

/// What one platform's markdown does its own way.
pub trait Flavour {
    /// The character that emphasises.
    const EMPHASIS: char;
    /// Agent text escaped so that nothing in it formats, links or mentions anyone.
    fn escape(text: &str) -> String;
    /// A link's target: a checked URL encoded so that it cannot end the link early.
    fn target(url: &str) -> String;
}

/// Markdown in flavour `F`, for messages and display blocks: agent text is escaped character
/// by character; code and diffs go in fenced blocks, which both platforms colour.
#[derive(Debug, Clone, Copy, Default)]
pub struct Markdown<F>(pub F);

impl<F: Flavour> Markup for Markdown<F> {
    fn text(&self, s: &str) -> String {
        F::escape(s)
    }
    fn strong(&self, inner: &str) -> String {
        format!("**{inner}**")
    }
    fn emphasis(&self, inner: &str) -> String {
        format!("{0}{inner}{0}", F::EMPHASIS)
    }
    fn strike(&self, inner: &str) -> String {
        format!("~~{inner}~~")
    }
    fn code(&self, s: &str) -> String {
        format!("`{}`", s.replace('`', "'"))
    }
    fn link(&self, url: &str, label: &str) -> String {
        format!("[{label}]({})", F::target(url))
    }
    fn pre(&self, s: &str, language: Option<&str>) -> String {
        // A fence inside would close the block; a zero-width space keeps it open.
        format!(
            "```{}\n{}\n```",
            language.unwrap_or(""),
            s.replace("```", "``\u{200b}`")
        )
    }
    fn quote(&self, inner: &str) -> String {
        inner
            .lines()
            .map(|l| format!("> {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
