//! A small Agent Client Protocol agent on stdio for the `clarify acp` tests: the agent the proxy
//! starts.
//!
//! - `initialize` is answered with protocol version 1.
//! - `session/prompt` with a text block: the agent announces a tool call running that text as a
//!   command (`session/update`, `tool_call`, kind `execute`), asks `session/request_permission`
//!   (options `allow-once`, `allow-always`, `reject-once`), and answers the prompt once it has
//!   the answer, with the answer in the result's `_meta.permission`.
//! - `x/echo` is answered with its params and the line exactly as it arrived (`raw`).
//! - the notification `x/shout` makes the agent send `x/heard` with the same params, written with
//!   its keys in an unusual order and spacing, so a test can see it arrive byte for byte.
//! - `x/exit` ends the agent at once with exit code 3, answering nothing.
//! - an answer to a request it is not waiting for is reported with the notification
//!   `x/unexpected`.
//!
//! It ends when its stdin closes.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use serde_json::{Value, json};

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    // The permission request's id → the prompt request waiting on it.
    let mut waiting: HashMap<String, Value> = HashMap::new();
    let mut next = 0_u64;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = message.get("id").cloned();
        let method = message["method"].as_str().map(str::to_owned);
        let mut send = |v: &Value| {
            let _ = writeln!(out, "{v}");
            let _ = out.flush();
        };
        match (method.as_deref(), id) {
            (Some("initialize"), Some(id)) => send(&json!({
                "jsonrpc": "2.0", "id": id,
                "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []},
            })),
            (Some("session/prompt"), Some(id)) => {
                next += 1;
                let session = message["params"]["sessionId"].clone();
                let command = message["params"]["prompt"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let call = format!("call-{next}");
                send(&json!({
                    "jsonrpc": "2.0", "method": "session/update",
                    "params": {"sessionId": session, "update": {
                        "sessionUpdate": "tool_call", "toolCallId": call,
                        "title": format!("Run {command}"), "kind": "execute", "status": "pending",
                        "rawInput": {"command": command}}},
                }));
                let permission_id = json!(next);
                waiting.insert(permission_id.to_string(), id);
                send(&json!({
                    "jsonrpc": "2.0", "id": permission_id, "method": "session/request_permission",
                    "params": {"sessionId": session, "toolCall": {"toolCallId": call},
                        "options": [
                            {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                            {"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
                            {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
                        ]},
                }));
            }
            (Some("x/echo"), Some(id)) => send(&json!({
                "jsonrpc": "2.0", "id": id,
                "result": {"echo": message["params"], "raw": line},
            })),
            (Some("x/shout"), None) => {
                let _ = writeln!(
                    out,
                    "{{\"method\":\"x/heard\",  \"params\":{} ,\"jsonrpc\":\"2.0\"}}",
                    message["params"]
                );
                let _ = out.flush();
            }
            (Some("x/exit"), _) => std::process::exit(3),
            (None, Some(id)) => match waiting.remove(&id.to_string()) {
                Some(prompt) => {
                    let mut answer = message.clone();
                    if let Some(fields) = answer.as_object_mut() {
                        fields.remove("jsonrpc");
                        fields.remove("id");
                    }
                    send(&json!({
                        "jsonrpc": "2.0", "id": prompt,
                        "result": {"stopReason": "end_turn", "_meta": {"permission": answer}},
                    }));
                }
                None => send(&json!({
                    "jsonrpc": "2.0", "method": "x/unexpected", "params": {"message": message},
                })),
            },
            _ => {}
        }
    }
}
