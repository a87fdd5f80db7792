//! A fake SMTP server: enough of the protocol for lettre (greeting, EHLO/HELO, MAIL FROM,
//! RCPT TO, DATA with dot-unstuffing, RSET, NOOP, QUIT), recording every message's envelope and
//! raw data. It can answer the next N transactions with a `451` temporary failure.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One message as received: its envelope and its data (dot-unstuffed, CRLF line ends).
#[derive(Debug, Clone)]
pub struct Received {
    pub from: String,
    pub to: Vec<String>,
    pub data: String,
}

#[derive(Default)]
struct Shared {
    received: Mutex<Vec<Received>>,
    /// How many more transactions are refused with `451`.
    fail_next: AtomicUsize,
    /// How many transactions were refused so far.
    refused: AtomicUsize,
}

pub struct FakeSmtp {
    /// `smtp://127.0.0.1:<port>`.
    pub url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeSmtp {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("smtp://{}", listener.local_addr().expect("addr"));
        let shared = Arc::new(Shared::default());
        let serving = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = serving.clone();
                tokio::spawn(async move {
                    let _ = session(stream, &shared).await;
                });
            }
        });
        Self { url, shared, task }
    }

    /// The messages received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared
            .received
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Refuses the next `n` transactions with `451` (at `MAIL FROM`).
    pub fn fail_next(&self, n: usize) {
        self.shared.fail_next.store(n, Ordering::SeqCst);
    }

    /// How many transactions were refused.
    pub fn refused(&self) -> usize {
        self.shared.refused.load(Ordering::SeqCst)
    }

    /// Waits until `n` messages have arrived; returns them all.
    pub async fn until(&self, n: usize) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "only {} of {n} messages arrived",
                got.len()
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
}

impl Drop for FakeSmtp {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn session(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    write.write_all(b"220 fake.smtp ESMTP ready\r\n").await?;
    let mut from = String::new();
    let mut to = Vec::new();
    let mut refused = false;
    loop {
        let mut line = String::new();
        if lines.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let command = line.trim_end().to_owned();
        let upper = command.to_ascii_uppercase();
        let reply: &[u8] = if upper.starts_with("EHLO") {
            b"250-fake.smtp\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n"
        } else if upper.starts_with("HELO") || upper.starts_with("NOOP") {
            b"250 OK\r\n"
        } else if upper.starts_with("RSET") {
            from.clear();
            to.clear();
            refused = false;
            b"250 OK\r\n"
        } else if upper.starts_with("MAIL FROM:") {
            let take = shared
                .fail_next
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
            if take.is_ok() {
                shared.refused.fetch_add(1, Ordering::SeqCst);
                refused = true;
                b"451 4.3.0 try again later\r\n"
            } else {
                from = address(&command["MAIL FROM:".len()..]);
                b"250 OK\r\n"
            }
        } else if upper.starts_with("RCPT TO:") {
            if refused {
                b"503 5.5.1 no sender\r\n"
            } else {
                to.push(address(&command["RCPT TO:".len()..]));
                b"250 OK\r\n"
            }
        } else if upper == "DATA" {
            write.write_all(b"354 go ahead\r\n").await?;
            let mut data = String::new();
            loop {
                let mut l = String::new();
                if lines.read_line(&mut l).await? == 0 {
                    return Ok(());
                }
                if l == ".\r\n" || l == ".\n" {
                    break;
                }
                // Dot-unstuffing: a line the client began with a dot has one more.
                let l = l.strip_prefix('.').unwrap_or(&l);
                data.push_str(l);
            }
            if let Ok(mut r) = shared.received.lock() {
                r.push(Received {
                    from: std::mem::take(&mut from),
                    to: std::mem::take(&mut to),
                    data,
                });
            }
            b"250 OK queued\r\n"
        } else if upper.starts_with("QUIT") {
            write.write_all(b"221 bye\r\n").await?;
            return Ok(());
        } else {
            b"502 5.5.2 not implemented\r\n"
        };
        write.write_all(reply).await?;
    }
}

/// `<a@b> SIZE=1` → `a@b`.
fn address(rest: &str) -> String {
    let rest = rest.trim();
    let end = rest.find('>').unwrap_or(rest.len());
    rest[..end].trim_start_matches('<').to_owned()
}
