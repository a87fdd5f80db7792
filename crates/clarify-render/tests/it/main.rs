//! The renderers on the same fixtures: what reaches a page, a chat and a terminal, and that
//! nothing an agent writes becomes markup anywhere.

mod html;
mod markup;
