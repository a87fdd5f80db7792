//! Text for a pipe, e-mail's text part, and a colour terminal.
//!
//! Agent text can hold control characters; a terminal would act on an escape sequence in it
//! (move the cursor, retitle the window, hide a line), so both markups here replace control
//! characters with `�` before anything else, and only [`Ansi`] adds escape sequences of its own.

use clarify_core::display::LineKind;

use crate::markup::Markup;

/// Plain text: nothing is styled; a link is its label followed by the address.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

/// Text with ANSI colours and bold for a terminal: added lines green, removed lines red.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ansi;

/// `s` without control characters other than line breaks and tabs.
pub fn inert(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect()
}

fn indented(s: &str) -> String {
    inert(s)
        .lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn link_words(url: &str, label: &str) -> String {
    if label.trim() == url.trim() {
        inert(url)
    } else {
        format!("{label} <{}>", inert(url))
    }
}

impl Markup for Plain {
    fn text(&self, s: &str) -> String {
        inert(s)
    }
    fn strong(&self, inner: &str) -> String {
        inner.to_owned()
    }
    fn code(&self, s: &str) -> String {
        inert(s)
    }
    fn link(&self, url: &str, label: &str) -> String {
        link_words(url, label)
    }
    fn pre(&self, s: &str, _language: Option<&str>) -> String {
        indented(s)
    }
    fn diff(&self, lines: &[(LineKind, String)]) -> String {
        lines
            .iter()
            .map(|(_, l)| inert(l))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

const BOLD: &str = "\x1b[1m";
const NORMAL: &str = "\x1b[22m";
const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[39m";

impl Markup for Ansi {
    fn text(&self, s: &str) -> String {
        inert(s)
    }
    fn strong(&self, inner: &str) -> String {
        format!("{BOLD}{inner}{NORMAL}")
    }
    fn code(&self, s: &str) -> String {
        format!("{CYAN}{}{RESET}", inert(s))
    }
    fn link(&self, url: &str, label: &str) -> String {
        link_words(url, label)
    }
    fn pre(&self, s: &str, _language: Option<&str>) -> String {
        indented(s)
    }
    fn diff(&self, lines: &[(LineKind, String)]) -> String {
        lines
            .iter()
            .map(|(kind, l)| {
                let l = inert(l);
                match kind {
                    LineKind::Added => format!("{GREEN}{l}{RESET}"),
                    LineKind::Removed => format!("{RED}{l}{RESET}"),
                    LineKind::Context if l.starts_with("@@") => format!("{CYAN}{l}{RESET}"),
                    LineKind::Context if !l.starts_with(' ') => format!("{BOLD}{l}{NORMAL}"),
                    LineKind::Context => l,
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
    fn len(&self, s: &str) -> usize {
        // Escape sequences take no room on screen.
        let mut n = 0;
        let mut in_escape = false;
        for c in s.chars() {
            match (in_escape, c) {
                (false, '\x1b') => in_escape = true,
                (true, 'm') => in_escape = false,
                (true, _) => {}
                (false, _) => n += 1,
            }
        }
        n
    }
}
