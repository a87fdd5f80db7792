//! Blocks through a [`Markup`]: plain text and a terminal here, and a fenced markup standing for
//! the chat platforms (which implement their own in clarify-channels), cut to a budget.

use clarify_core::display::{Block, Content, Fact};
use clarify_render::markup::{Markup, blocks, markdown};
use clarify_render::text::{Ansi, Plain};

/// A markdown-like markup with ``` fences, as Discord's.
struct Fenced;

impl Markup for Fenced {
    fn text(&self, s: &str) -> String {
        s.replace('*', "\\*").replace('@', "@\u{200b}")
    }
    fn strong(&self, inner: &str) -> String {
        format!("**{inner}**")
    }
    fn code(&self, s: &str) -> String {
        format!("`{}`", s.replace('`', "'"))
    }
    fn link(&self, url: &str, label: &str) -> String {
        format!("[{label}]({url})")
    }
    fn pre(&self, s: &str, language: Option<&str>) -> String {
        format!(
            "```{}\n{}\n```",
            language.unwrap_or(""),
            s.replace("```", "``\u{200b}`")
        )
    }
}

fn diff_block() -> Block {
    let mut diff = String::from("@@ -1,40 +1,40 @@\n");
    for i in 0..40 {
        diff.push_str(&format!("-old line {i}\n+new line {i}\n"));
    }
    Block::new(
        Some("src/a.rs".to_owned()),
        Content::Diff {
            path: Some("src/a.rs".to_owned()),
            diff,
        },
    )
}

#[test]
fn plain_text_for_a_pipe_and_e_mail() {
    let text = blocks(
        &[
            Block::markdown(
                Some("Why"),
                "Refund **5,000 EUR** to [the customer](https://example.com/c/17).\n\n<script>x</script>",
            ),
            Block::new(
                None,
                Content::Diff {
                    path: Some("a.py".to_owned()),
                    diff: "@@ -1,2 +1,2 @@\n keep\n-old\n+new\n".to_owned(),
                },
            ),
            Block::new(
                None,
                Content::Fields {
                    items: vec![Fact {
                        label: "Amount".to_owned(),
                        value: "5000".to_owned(),
                    }],
                },
            ),
            Block::new(
                None,
                Content::Image {
                    data: String::new(),
                    alt: "the chart".to_owned(),
                },
            ),
            Block::new(
                Some("Runbook".to_owned()),
                Content::Link {
                    url: "https://example.com/rb".to_owned(),
                },
            ),
        ],
        &Plain,
        usize::MAX,
        "",
    );
    assert_eq!(
        text,
        "Why\nRefund 5,000 EUR to the customer <https://example.com/c/17>.\n\n<script>x</script>\n\n\
         a.py  +1 \u{2212}1\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n\nAmount: 5000\n\n[image: the chart]\n\n\
         Runbook <https://example.com/rb>"
    );
}

#[test]
fn a_terminal_gets_colour_and_never_the_agents_escape_sequences() {
    let text = blocks(
        &[Block::new(
            None,
            Content::Diff {
                path: None,
                diff: "@@ -1 +1 @@\n-\x1b]0;pwned\x07old\n+new\x1b[2J\n".to_owned(),
            },
        )],
        &Ansi,
        usize::MAX,
        "",
    );
    assert!(
        text.contains("\x1b[31m-\u{FFFD}]0;pwned\u{FFFD}old\x1b[39m"),
        "{text:?}"
    );
    assert!(text.contains("\x1b[32m+new\u{FFFD}[2J\x1b[39m"), "{text:?}");
    assert!(
        text.starts_with("\x1b[1m+1 \u{2212}1\x1b[22m\n"),
        "{text:?}"
    );
    assert_eq!(
        text.matches('\x1b').count(),
        8,
        "only clarify's own sequences: {text:?}"
    );
}

#[test]
fn markdown_maps_to_the_markup_and_keeps_only_safe_links() {
    let m = markdown(
        "# Title\n\nHi @everyone, see [docs](https://x.example) and [bad](javascript:alert(1)).\n\n| k | v |\n|---|---|\n| amount | 5 |\n\n1. one\n2. two\n\n```sh\nrm -rf /\n```",
        &Fenced,
    );
    assert_eq!(
        m,
        "**Title**\n\nHi @\u{200b}everyone, see [docs](https://x.example) and bad.\n\n```\nk      | v\n-------+--\namount | 5\n```\n\n1. one\n2. two\n\n```sh\nrm -rf /\n```"
    );
}

#[test]
fn blocks_past_the_budget_are_cut_at_a_line_with_the_closing_line() {
    let more = "\u{2026} the rest: [open](https://clarify.example/a/t)";
    let out = blocks(
        &[
            Block::markdown(None, "First"),
            diff_block(),
            Block::markdown(None, "never shown"),
        ],
        &Fenced,
        600,
        more,
    );
    assert!(out.chars().count() <= 600, "{} chars", out.chars().count());
    assert!(out.starts_with("First\n\n**src/a.rs**\n```diff\nsrc/a.rs  +40 \u{2212}40\n@@ -1,40 +1,40 @@\n-old line 0\n+new line 0\n"), "{out}");
    assert!(
        out.ends_with(&format!("\n```\n{more}")),
        "the fence is closed, then the closing line: {out}"
    );
    assert!(!out.contains("never shown"));
    // Within the budget, nothing is cut and no closing line is added.
    let whole = blocks(&[Block::markdown(None, "First")], &Fenced, 600, more);
    assert_eq!(whole, "First");
}
