//! Headless Chromium driven over WebDriver (feature `browser`), for the tests of the inbox and
//! of what a person sees through it.
//!
//! `CLARIFY_TEST_CHROMEDRIVER` names chromedriver (`./scripts/test` sets it when Debian's
//! `chromium-driver` is installed, and installs it when it can); without it the browser tests
//! print that they skip, or fail under `CLARIFY_REQUIRE_SERVICES=1`, like the PostgreSQL tests.
//! Each browser has its own chromedriver on a free port and a fresh profile. Tests take turns,
//! so a loaded two-core machine is not asked to run several at once; a test that needs two
//! people at once opens a second browser within its turn ([`Browser::another`]). A failing test
//! keeps a screenshot and the page source in the temporary directory and prints where.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::elements::Element;
use fantoccini::error::CmdError;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use futures_util::FutureExt;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, SemaphorePermit};

/// Device pixels to a CSS pixel on an emulated phone, as on most phones sold today.
const PHONE_PIXEL_RATIO: f64 = 3.0;

/// The user agent of an emulated phone: Chrome on Android.
const PHONE_USER_AGENT: &str = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 \
     (KHTML, like Gecko) Chrome/130.0.0.0 Mobile Safari/537.36";

/// How long a browser test waits for something that should happen; generous, because the
/// machine may be busy compiling.
pub const PATIENCE: Duration = Duration::from_secs(30);

static ONE_AT_A_TIME: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(1));

/// chromedriver's path, or `None` (after saying why) when the browser tests are skipped.
pub fn chromedriver() -> Option<PathBuf> {
    match std::env::var("CLARIFY_TEST_CHROMEDRIVER") {
        Ok(path) if !path.trim().is_empty() => Some(PathBuf::from(path.trim())),
        _ if std::env::var("CLARIFY_REQUIRE_SERVICES").as_deref() == Ok("1") => panic!(
            "CLARIFY_TEST_CHROMEDRIVER is not set, but CLARIFY_REQUIRE_SERVICES=1 requires the \
             browser tests; install chromium and chromium-driver (./scripts/test does, as root) \
             and set it to chromedriver's path"
        ),
        _ => {
            eprintln!(
                "skipping the browser test: CLARIFY_TEST_CHROMEDRIVER is not set \
                 (./scripts/test sets it when chromium-driver is installed)"
            );
            None
        }
    }
}

/// The Chromium binary: `CLARIFY_TEST_CHROMIUM`, else Debian's, else whatever chromedriver finds.
fn chromium() -> Option<String> {
    if let Ok(path) = std::env::var("CLARIFY_TEST_CHROMIUM")
        && !path.trim().is_empty()
    {
        return Some(path.trim().to_owned());
    }
    let debian = "/usr/bin/chromium";
    std::path::Path::new(debian)
        .exists()
        .then(|| debian.to_owned())
}

/// A headless Chromium and the chromedriver that drives it.
#[allow(missing_debug_implementations)] // fantoccini's client has no Debug.
pub struct Browser {
    pub client: Client,
    driver: tokio::process::Child,
    /// chromedriver's address, for the commands fantoccini has no method for.
    driver_url: String,
    _profile: tempfile::TempDir,
    /// The test's turn; `None` for a second browser of the same test.
    _turn: Option<SemaphorePermit<'static>>,
}

impl Browser {
    /// Starts a desktop browser with a window of `width` × `height`, or `None` when browser
    /// tests are skipped here.
    pub async fn launch(width: u32, height: u32) -> Option<Self> {
        Self::launch_as(Screen::Desktop { width, height }).await
    }

    /// Starts a browser emulating a phone or tablet whose screen is `width` × `height` CSS
    /// pixels, as Chromium's device emulation does: three device pixels to a CSS pixel, touch, a
    /// mobile user agent, and a layout viewport taken from the page's `<meta name=viewport>`
    /// (so a page too wide for the screen is zoomed out, as a phone would).
    pub async fn launch_phone(width: u32, height: u32) -> Option<Self> {
        Self::launch_as(Screen::Phone { width, height }).await
    }

    async fn launch_as(screen: Screen) -> Option<Self> {
        let driver_path = chromedriver()?;
        let turn = ONE_AT_A_TIME
            .acquire()
            .await
            .expect("the semaphore is never closed");
        Some(Self::open(&driver_path, screen, Some(turn)).await)
    }

    /// A second desktop browser with its own profile (so its own cookies: another person),
    /// within the turn of the test that holds `self`.
    pub async fn another(&self, width: u32, height: u32) -> Self {
        let driver_path = chromedriver().expect("a first browser was launched");
        Self::open(&driver_path, Screen::Desktop { width, height }, None).await
    }

    async fn open(
        driver_path: &std::path::Path,
        screen: Screen,
        turn: Option<SemaphorePermit<'static>>,
    ) -> Self {
        let mut last_error = String::new();
        // A free port can be taken between choosing and binding it; try a few.
        for _ in 0..3 {
            match Self::start(driver_path, screen).await {
                Ok((client, driver, driver_url, profile)) => {
                    return Self {
                        client,
                        driver,
                        driver_url,
                        _profile: profile,
                        _turn: turn,
                    };
                }
                Err(e) => last_error = e,
            }
        }
        panic!("could not start Chromium through {driver_path:?}: {last_error}");
    }

    async fn start(
        driver_path: &std::path::Path,
        screen: Screen,
    ) -> Result<(Client, tokio::process::Child, String, tempfile::TempDir), String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let mut driver = tokio::process::Command::new(driver_path)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("chromedriver did not start: {e}"))?;
        let url = format!("http://127.0.0.1:{port}");
        let status = clarify_client::http::client().expect("an HTTP client");
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Ok(Some(exit)) = driver.try_wait() {
                return Err(format!("chromedriver exited at start: {exit}"));
            }
            let ready = match status.get(format!("{url}/status")).send().await {
                Ok(r) => r
                    .json::<Value>()
                    .await
                    .is_ok_and(|v| v["value"]["ready"] == json!(true)),
                Err(_) => false,
            };
            if ready {
                break;
            }
            if Instant::now() > deadline {
                kill_group(&mut driver);
                return Err(format!("chromedriver was not ready within {PATIENCE:?}"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().map_err(|e| format!("no profile directory: {e}"))?;
        let mut options = json!({
            "args": [
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                format!("--user-data-dir={}", profile.path().display()),
            ],
        });
        match screen {
            Screen::Desktop { width, height } => {
                if let Some(args) = options["args"].as_array_mut() {
                    args.push(json!(format!("--window-size={width},{height}")));
                }
            }
            // A window cannot be made narrower than 500 px; a phone's screen is emulated.
            Screen::Phone { width, height } => {
                options["mobileEmulation"] = json!({
                    "deviceMetrics": {
                        "width": width,
                        "height": height,
                        "pixelRatio": PHONE_PIXEL_RATIO,
                        "touch": true,
                        "mobile": true,
                    },
                    "userAgent": PHONE_USER_AGENT,
                });
            }
        }
        if let Some(binary) = chromium() {
            options["binary"] = json!(binary);
        }
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("browserName".into(), json!("chrome"));
        capabilities.insert("goog:chromeOptions".into(), options);
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&url)
            .await
            .map_err(|e| {
                kill_group(&mut driver);
                format!("no WebDriver session: {e}")
            })?;
        Ok((client, driver, url, profile))
    }

    /// Runs `body`; if it fails, saves a screenshot and the page source as `name` first. Closes
    /// the browser either way.
    pub async fn run(&self, name: &str, body: impl Future<Output = ()>) {
        let result = AssertUnwindSafe(body).catch_unwind().await;
        if result.is_err() {
            self.keep_evidence(name).await;
        }
        let _ = self.client.clone().close().await;
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    }

    async fn keep_evidence(&self, name: &str) {
        let dir = std::env::temp_dir().join("clarify-browser-failures");
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("could not keep a screenshot: {e}");
            return;
        }
        let png = dir.join(format!("{name}.png"));
        match self.client.screenshot().await {
            Ok(bytes) => match std::fs::write(&png, bytes) {
                Ok(()) => eprintln!("browser test {name} failed; screenshot: {}", png.display()),
                Err(e) => eprintln!("could not write {}: {e}", png.display()),
            },
            Err(e) => eprintln!("could not take a screenshot: {e}"),
        }
        let html = dir.join(format!("{name}.html"));
        if let Ok(source) = self.client.source().await
            && std::fs::write(&html, source).is_ok()
        {
            eprintln!("page source: {}", html.display());
        }
    }

    pub async fn goto(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("opening {url}: {e}"));
    }

    /// The element at `xpath`, once it exists. An element that is on the page now counts, so
    /// after a click that navigates, wait for the destination first ([`Browser::at`]) unless
    /// `xpath` is found only there.
    pub async fn wait_for(&self, xpath: &str) -> Element {
        match self
            .client
            .wait()
            .at_most(PATIENCE)
            .every(Duration::from_millis(100))
            .for_element(Locator::XPath(xpath))
            .await
        {
            Ok(element) => element,
            Err(e) => panic!("waiting for {xpath} on {}: {e}", self.url().await),
        }
    }

    /// The page's address now, for messages (`?` when it cannot be read).
    pub async fn url(&self) -> String {
        self.client
            .current_url()
            .await
            .map_or_else(|_| "?".to_owned(), |u| u.to_string())
    }

    /// Waits until the page's address starts with `prefix` (a whole URL: the destination of
    /// a navigation, on whichever server it is) and the page has loaded, so what is read next
    /// is read there and not on the page being left.
    pub async fn at(&self, prefix: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Ok(url) = self.client.current_url().await
                && url.as_str().starts_with(prefix)
                && self
                    .client
                    .execute("return document.readyState", vec![])
                    .await
                    .is_ok_and(|state| state != json!("loading"))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {PATIENCE:?} waiting to be at {prefix} (still at {})",
                self.url().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the element at `xpath`, once it exists.
    pub async fn click(&self, xpath: &str) {
        self.act(xpath, "clicking", |e| async move { e.click().await })
            .await;
    }

    /// Types `text` into the element at `xpath`.
    pub async fn type_into(&self, xpath: &str, text: &str) {
        self.act(
            xpath,
            "typing into",
            |e| async move { e.send_keys(text).await },
        )
        .await;
    }

    /// Does `action` to the element at `xpath`. The live list redraws when events arrive, so
    /// an element found a moment ago may have been replaced: then it is found again, as a
    /// person would simply click the row now on screen.
    async fn act<F, Fut>(&self, xpath: &str, doing: &str, action: F)
    where
        F: Fn(Element) -> Fut,
        Fut: Future<Output = Result<(), CmdError>>,
    {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let element = self.wait_for(xpath).await;
            match action(element).await {
                Ok(()) => return,
                Err(e) if e.is_stale_element_reference() && Instant::now() < deadline => {}
                Err(e) => panic!("{doing} {xpath}: {e}"),
            }
        }
    }

    /// Runs `script` (a function body; `arguments` are `args`) and returns its result.
    pub async fn js(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("running {script}: {e}"))
    }

    /// Waits until `script` returns something truthy, and returns it. A script that fails (an
    /// element not there yet, a page still loading or being left) is "not yet", not a failure;
    /// when time runs out the last result or error is reported with the page's address.
    pub async fn until(&self, what: &str, script: &str, args: Vec<Value>) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let last = match self.client.execute(script, args.clone()).await {
                Ok(value) if truthy(&value) => return value,
                Ok(value) => format!("last result: {value}"),
                Err(e) => format!("last error: {e}"),
            };
            if Instant::now() >= deadline {
                panic!(
                    "timed out after {PATIENCE:?} waiting for {what} on {} ({last})",
                    self.url().await
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sends chromedriver `body` at `path` under this session (`/permissions`, say) and returns
    /// the reply's `value`; fails the test on an error reply.
    pub async fn command(&self, path: &str, body: Value) -> Value {
        let session = self
            .client
            .session_id()
            .await
            .ok()
            .flatten()
            .expect("a WebDriver session");
        let url = format!("{}/session/{session}{path}", self.driver_url);
        let response = clarify_client::http::client()
            .expect("an HTTP client")
            .post(&url)
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {url}: {e}"));
        let ok = response.status().is_success();
        let reply: Value = response
            .json()
            .await
            .unwrap_or_else(|e| panic!("POST {url}: {e}"));
        assert!(ok, "POST {url} {body}: {reply}");
        reply["value"].clone()
    }

    /// Runs the DevTools protocol command `cmd` with `params` on the current tab (chromedriver
    /// forwards it) and returns its result.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.command("/goog/cdp/execute", json!({"cmd": cmd, "params": params}))
            .await
    }

    /// Sets the page's permission `name` (`notifications`, say) to `state`, as a person's
    /// answer to the browser's prompt would (WebDriver's Permissions extension).
    pub async fn set_permission(&self, name: &str, state: &str) {
        self.command(
            "/permissions",
            json!({"descriptor": {"name": name}, "state": state}),
        )
        .await;
    }

    /// Runs `script` in every document the current tab opens from now on, before the page's
    /// own scripts (through the DevTools protocol, which chromedriver forwards).
    pub async fn before_each_page(&self, script: &str) {
        self.cdp(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": script}),
        )
        .await;
    }

    /// Presses and releases `key`, as a keyboard does: it goes to whatever has focus.
    pub async fn press(&self, key: Key) {
        let value = char::from(key);
        let keys = KeyActions::new("keyboard".to_owned())
            .then(KeyAction::Down { value })
            .then(KeyAction::Up { value });
        self.client
            .perform_actions(keys)
            .await
            .unwrap_or_else(|e| panic!("pressing {key:?}: {e}"));
    }

    /// Presses Tab until `is_focused`, a script expression over `el` (the focused element),
    /// holds; fails after 40 presses.
    pub async fn tab_to(&self, what: &str, is_focused: &str) {
        let script = format!("const el = document.activeElement; return !!({is_focused});");
        for _ in 0..40 {
            if self.js(&script, vec![]).await == json!(true) {
                return;
            }
            self.press(Key::Tab).await;
        }
        panic!("Tab never reached {what}");
    }
}

/// Whether a script's result counts as "yes", as JavaScript's truthiness has it.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => false,
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
        _ => true,
    }
}

#[derive(Debug, Clone, Copy)]
enum Screen {
    Desktop { width: u32, height: u32 },
    Phone { width: u32, height: u32 },
}

impl Drop for Browser {
    fn drop(&mut self) {
        kill_group(&mut self.driver);
    }
}

/// Ends chromedriver and the Chromium it started (its process group), if still running.
fn kill_group(driver: &mut tokio::process::Child) {
    if let (Ok(None), Some(pid)) = (driver.try_wait(), driver.id()) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = driver.start_kill();
    }
}
