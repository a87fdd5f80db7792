//! Failed writes: a store that cannot grow (a full disk) fails the write that hit it with a
//! clear error, keeps every write it acknowledged, and never half-writes one.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{Api, BIN, Server, create_key, free_port, sqlite_url, temp_dir};

/// Runs `clarify serve` with its file sizes capped at `limit_kib`, as a full disk would: writes
/// past the cap fail with EFBIG (the signal a cap normally raises is ignored, and that is
/// inherited through exec).
fn serve_capped(db: &str, port: u16, limit_kib: u32) -> std::process::Child {
    let script = format!(
        "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" serve --listen 127.0.0.1:{port} --db \"$1\"",
        blocks = limit_kib * 1024 / 512,
    );
    Command::new("sh")
        .args(["-c", &script, BIN, db])
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sh runs")
}

/// Kills the capped server even when an assertion fails first.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_full_disk_fails_the_write_clearly_and_loses_nothing_acknowledged() {
    let dir = temp_dir("full-disk");
    let db = sqlite_url(&dir);
    let key = create_key(&db, "admin", "root", "default");
    let port = free_port();
    let mut child = KillOnDrop(serve_capped(&db, port, 4096));
    let url = format!("http://127.0.0.1:{port}");
    let api = Api::new(&url, &key);
    let deadline = Instant::now() + Duration::from_secs(20);
    while api
        .client
        .get(format!("{url}/healthz"))
        .send()
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "capped server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let big = "x".repeat(3_900);
    let mut acknowledged = Vec::new();
    let mut refused = None;
    for i in 0..5_000 {
        let (status, body) = api
            .post("/v1/requests", json!({"question": format!("{i} {big}")}))
            .await;
        match status {
            201 => acknowledged.push((i, body["id"].as_str().expect("id").to_owned())),
            _ => {
                refused = Some((i, status, body));
                break;
            }
        }
    }
    let (n, status, body) = refused.expect("the capped store filled up");
    assert_eq!(status, 503, "a full store is a retryable 503: {body}");
    assert_eq!(body["error"]["code"], "store_unavailable");
    assert!(
        acknowledged.len() > 10,
        "some writes fit before the cap; request {n} got {status} {body}"
    );

    // The server is still up, and answers with the same clear error rather than crashing.
    let health = api
        .client
        .get(format!("{url}/healthz"))
        .send()
        .await
        .expect("still serving");
    assert!(health.status().is_success());
    let _ = child.0.kill();
    let _ = child.0.wait();

    // With room again, everything acknowledged is there, and the refused write is not.
    let server = Server::start(&db, &[]).await;
    let api = Api::new(&server.url, &key);
    for (i, id) in &acknowledged {
        let (status, record) = api.get(&format!("/v1/requests/{id}")).await;
        assert_eq!(status, 200, "acknowledged request {i} survived");
        assert!(
            record["questions"][0]["text"]
                .as_str()
                .unwrap_or("")
                .starts_with(&format!("{i} "))
        );
    }
    let mut listed = 0;
    let mut cursor = String::new();
    loop {
        let (_, page) = api.get(&format!("/v1/requests?limit=500{cursor}")).await;
        let requests = page["requests"].as_array().cloned().unwrap_or_default();
        for r in &requests {
            let text = r["questions"][0]["text"].as_str().unwrap_or("");
            assert!(
                !text.starts_with(&format!("{n} ")),
                "the refused request was not half-written"
            );
        }
        listed += requests.len();
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(
        listed,
        acknowledged.len(),
        "exactly the acknowledged requests exist"
    );
}
