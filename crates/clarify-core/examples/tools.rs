//! Prints the `ask_human` tool definition: `cargo run -p clarify-core --example tools -- openai`
//! (or `anthropic`, `mcp`).

use clarify_core::tool::{Format, definition_text};

fn main() {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "openai".to_owned());
    match Format::parse(&name) {
        Some(format) => print!("{}", definition_text(format)),
        None => {
            eprintln!("unknown format {name:?}; use openai, anthropic or mcp");
            std::process::exit(2);
        }
    }
}
