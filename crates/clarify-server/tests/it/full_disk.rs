//! The embedded SQLite database on a disk that fills up under load, the commonest failure of a
//! small install: every create and answer either succeeds or is refused with `503 disk_full`
//! naming the disk, nothing is half-written, reads go on, and once space is freed the same
//! server writes again, with no restart.
//!
//! The disk is a 4 MiB tmpfs mounted for the test (which needs root, as `./scripts/test` runs
//! in CI); without it the test says so and skips, or fails under `CLARIFY_REQUIRE_SERVICES=1`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use clarify_store::{Store, StoreOptions};
use reqwest::StatusCode;
use serde_json::json;

use crate::support::{TestServer, code, suffix};

/// A size-limited tmpfs, unmounted when dropped.
struct SmallDisk {
    at: PathBuf,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<Self> {
        let at = std::env::temp_dir().join(format!("clarify-full-disk-{}", suffix()));
        std::fs::create_dir_all(&at).expect("a mount point");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&at)
            .output();
        match mounted {
            Ok(out) if out.status.success() => Some(Self { at }),
            other => {
                let why = match other {
                    Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_owned(),
                    Err(e) => e.to_string(),
                };
                assert!(
                    std::env::var("CLARIFY_REQUIRE_SERVICES").as_deref() != Ok("1"),
                    "CLARIFY_REQUIRE_SERVICES=1 requires a small tmpfs for the full-disk test, \
                     which could not be mounted (it needs root): {why}"
                );
                eprintln!("skipped: the full-disk test mounts a tmpfs, which needs root: {why}");
                let _ = std::fs::remove_dir(&at);
                None
            }
        }
    }

    /// Writes zeros into `filler` on the disk mounted at `at` until the disk refuses more, a
    /// little at a time, so the writes under test go on while it fills.
    fn fill_at(at: &Path) -> PathBuf {
        let filler = at.join("filler");
        let mut file = std::fs::File::create(&filler).expect("a filler file");
        let chunk = vec![0_u8; 32 << 10];
        while file
            .write_all(&chunk)
            .and_then(|()| file.sync_all())
            .is_ok()
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // The last bytes that fit in a partly written chunk.
        while file.write_all(&[0_u8; 512]).is_ok() {}
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
        let _ = std::fs::remove_dir(&self.at);
    }
}

fn ask(n: usize) -> serde_json::Value {
    json!({
        "summary": format!("deploy {n}"),
        "context": {"notes": "x".repeat(12_000)},
        "questions": [{"id": "go", "text": "Deploy?", "kind": "single",
                       "options": [{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}]}]
    })
}

async fn open(db: &Path) -> Store {
    Store::open(
        &format!("sqlite://{}", db.display()),
        StoreOptions::default(),
    )
    .await
    .expect("the store opens")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_with_503_and_serves_again_once_space_is_freed() {
    let Some(disk) = SmallDisk::mount("4m") else {
        return;
    };
    let db = disk.at.join("clarify.db");
    let s = TestServer::on_store(open(&db).await, |_| {}).await;
    let first = s.ask(&s.admin, ask(0)).await;
    let first_id = first["id"].as_str().expect("id").to_owned();

    // Four agents create requests while the disk fills up under them.
    let at = disk.at.clone();
    let filling = tokio::task::spawn_blocking(move || SmallDisk::fill_at(&at));
    let mut agents = Vec::new();
    for agent in 0..4 {
        let (url, admin, client) = (s.url.clone(), s.admin.clone(), s.client.clone());
        agents.push(tokio::spawn(async move {
            let (mut created, mut refused) = (Vec::new(), 0);
            for n in 0..400 {
                let response = client
                    .post(format!("{url}/v1/requests"))
                    .bearer_auth(&admin)
                    .json(&ask(agent * 1_000 + n))
                    .send()
                    .await
                    .expect("the server answers");
                let status = response.status();
                let body: serde_json::Value = response.json().await.expect("a JSON body");
                match status {
                    StatusCode::CREATED => {
                        created.push(body["id"].as_str().expect("id").to_owned());
                    }
                    StatusCode::SERVICE_UNAVAILABLE => {
                        assert_eq!(code(&body), "disk_full", "{body}");
                        let message = body["error"]["message"].as_str().unwrap_or_default();
                        assert!(message.contains("disk is full"), "{body}");
                        refused += 1;
                        if refused == 3 {
                            break;
                        }
                    }
                    other => panic!("a create on a filling disk answered {other}: {body}"),
                }
            }
            (created, refused)
        }));
    }
    let filler = filling.await.expect("the filler");
    let mut created = vec![first_id.clone()];
    for agent in agents {
        let (made, refused) = agent.await.expect("an agent");
        assert_eq!(refused, 3, "the disk never filled under this agent");
        created.extend(made);
    }

    // An answer is a write too: refused the same way, or (if its page had room) recorded.
    let path = format!("/v1/requests/{first_id}/answer");
    let yes = json!({"answers": {"go": {"option": "yes"}}});
    let (status, body) = s.post(&path, &s.admin, yes.clone()).await;
    let answered = match status {
        StatusCode::OK => true,
        StatusCode::SERVICE_UNAVAILABLE => {
            assert_eq!(code(&body), "disk_full", "{body}");
            false
        }
        other => panic!("an answer on a full disk answered {other}: {body}"),
    };
    // Reads go on while the disk is full.
    let (status, body) = s.get(&format!("/v1/requests/{first_id}"), &s.admin).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let expected = if answered { "answered" } else { "pending" };
    assert_eq!(body["status"], expected, "nothing half-written: {body}");

    // Space freed: the same server writes again, at once.
    std::fs::remove_file(&filler).expect("free the space");
    let freed = Instant::now();
    let mut serving = None;
    for n in 400..500 {
        let (status, body) = s.post("/v1/requests", &s.admin, ask(n)).await;
        if status == StatusCode::CREATED {
            created.push(body["id"].as_str().expect("id").to_owned());
            serving = Some(freed.elapsed());
            break;
        }
        assert_eq!(code(&body), "disk_full", "{body}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let serving = serving.expect("the server writes again once space is freed");
    println!(
        "full disk: {} creates acknowledged while the disk filled, serving again {:.1} ms after \
         space was freed",
        created.len() - 2,
        serving.as_secs_f64() * 1e3
    );
    if !answered {
        let (status, body) = s.post(&path, &s.admin, yes).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    // Every acknowledged request is there, and nothing else; the audit chain verifies.
    for id in &created {
        let (status, body) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
        assert_eq!(status, StatusCode::OK, "{id}: {body}");
    }
    let (status, page) = s.get("/v1/requests?limit=500", &s.admin).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let listed = page["requests"].as_array().map_or(0, Vec::len);
    assert_eq!(listed, created.len(), "only acknowledged requests exist");
    let store = s.store.clone();
    s.stop().await;
    match store.verify_audit().await {
        Ok(Ok(_)) => {}
        other => panic!("the audit chain after a full disk: {other:?}"),
    }
    drop(store);
    drop(disk);
}
