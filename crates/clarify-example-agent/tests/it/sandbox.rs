//! The gated tool writes only inside its sandbox, whatever path the model or an editing human
//! gives; and the state file reads back exactly what was saved, replaced whole.

use clarify_core::transcript::{Message, ToolCall};
use clarify_example_agent::{Sandbox, SandboxError, State};
use serde_json::json;

use crate::support::TempDir;

#[test]
fn paths_stay_inside_the_sandbox() {
    let dir = TempDir::new("paths");
    let sandbox = Sandbox::new(dir.sandbox());
    let outside = |p: &str| Err(SandboxError::Outside(p.to_owned()));
    let cases: Vec<(&str, Result<&str, SandboxError>)> = vec![
        ("notes.txt", Ok("notes.txt")),
        ("a/b/c.txt", Ok("a/b/c.txt")),
        ("./a/./b.txt", Ok("a/b.txt")),
        (" spaced.txt ", Ok("spaced.txt")),
        ("", Err(SandboxError::EmptyPath)),
        ("  ", Err(SandboxError::EmptyPath)),
        (".", Err(SandboxError::EmptyPath)),
        ("../escape.txt", outside("../escape.txt")),
        ("a/../../escape.txt", outside("a/../../escape.txt")),
        ("a/../b.txt", outside("a/../b.txt")),
        ("/etc/passwd", outside("/etc/passwd")),
    ];
    for (path, want) in cases {
        let got = sandbox.resolve(path);
        let want = want.map(|p| dir.sandbox().join(p));
        assert_eq!(got, want, "{path:?}");
    }
}

#[test]
fn writes_what_it_is_given_and_refuses_the_rest() {
    let dir = TempDir::new("writes");
    let sandbox = Sandbox::new(dir.sandbox());
    let result = sandbox
        .write(&json!({"path": "deep/er/note.txt", "content": "hi ✓"}))
        .expect("written");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&result).expect("JSON"),
        json!({"written": "deep/er/note.txt", "bytes": 6})
    );
    assert_eq!(
        std::fs::read_to_string(dir.sandbox().join("deep/er/note.txt")).expect("read"),
        "hi ✓"
    );

    let refused = [
        (
            json!({"path": 7, "content": "x"}),
            SandboxError::NotAString("path"),
        ),
        (
            json!({"path": "a.txt"}),
            SandboxError::NotAString("content"),
        ),
        (
            json!({"path": "big.txt", "content": "x".repeat((1 << 20) + 1)}),
            SandboxError::TooLarge((1 << 20) + 1),
        ),
        (
            json!({"path": "../x.txt", "content": "x"}),
            SandboxError::Outside("../x.txt".to_owned()),
        ),
    ];
    for (arguments, want) in refused {
        assert_eq!(sandbox.write(&arguments), Err(want));
    }
    assert!(!dir.sandbox().join("big.txt").exists());
    assert!(!dir.0.join("x.txt").exists());
}

#[cfg(unix)]
#[test]
fn symbolic_links_do_not_lead_out() {
    let dir = TempDir::new("links");
    let sandbox = Sandbox::new(dir.sandbox());
    let outside = dir.0.join("outside");
    std::fs::create_dir_all(&outside).expect("outside dir");
    std::fs::create_dir_all(dir.sandbox()).expect("sandbox");
    std::os::unix::fs::symlink(&outside, dir.sandbox().join("door")).expect("dir link");
    std::os::unix::fs::symlink(outside.join("t.txt"), dir.sandbox().join("t.txt"))
        .expect("file link");
    for path in ["door/x.txt", "door/new/x.txt", "t.txt"] {
        assert_eq!(
            sandbox.write(&json!({"path": path, "content": "x"})),
            Err(SandboxError::Outside(path.to_owned())),
            "{path}"
        );
    }
    assert_eq!(std::fs::read_dir(&outside).expect("list").count(), 0);
}

#[test]
fn state_reads_back_what_was_saved() {
    let dir = TempDir::new("state");
    assert_eq!(State::load(&dir.state()).expect("no file is fine"), None);
    let mut state = State::new();
    assert!(state.session.starts_with("agent-"));
    assert_ne!(
        state.session,
        State::new().session,
        "each conversation its own session"
    );
    state.transcript.push(Message::user("Hi")).expect("user");
    let call = ToolCall::function("call_1", "write_file", &json!({"path": "a"}));
    state
        .transcript
        .push(Message::tool_calls(vec![call]))
        .expect("call");
    state
        .transcript
        .record_asked("call_1", "req_1", json!({"id": "req_1"}))
        .expect("asked");

    state.save(&dir.state()).expect("saved");
    assert_eq!(
        State::load(&dir.state()).expect("read"),
        Some(state.clone())
    );
    state
        .transcript
        .push(Message::tool_result("call_1", "ok"))
        .expect("result");
    state.save(&dir.state()).expect("saved again");
    assert_eq!(State::load(&dir.state()).expect("read"), Some(state));
    let names: Vec<String> = std::fs::read_dir(&dir.0)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["state.json"], "nothing left beside it");
}
