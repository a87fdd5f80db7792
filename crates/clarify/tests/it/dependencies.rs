//! The binary builds each crate once where it can: every crate that ships in two or more
//! versions is listed here with the dependents that hold the versions apart.
//!
//! A second version of a crate costs build time and binary size, and a second reqwest once let a
//! client built by a library lack the TLS of the workspace's. `cargo tree -d` over the binary's
//! normal dependencies must print exactly the list below: a new duplicate fails with the command
//! that shows who brings it in; a listed one that is gone fails too, so the list stays true.

use std::collections::BTreeSet;
use std::process::Command;

/// Crates that ship in more than one version, each with why. Versions are `major.minor` as
/// `cargo tree` names them.
const ALLOWED: &[(&str, &[&str], &str)] = &[
    // Two generations of RustCrypto: jsonwebtoken 11 (Teams', Google Chat's and VAPID's JWTs)
    // and web-push-native 0.5 are on digest 0.10; openidconnect 4.1 and webauthn-rs 0.6 are on
    // digest 0.11. Our own hashing (sha2, hmac, ed25519-dalek 2, and sha1 for Twilio's webhook
    // signatures) shares the older one with jsonwebtoken.
    ("aead", &["0.5.2", "0.6.1"], "RustCrypto generations"),
    ("aes", &["0.8.4", "0.9.2"], "RustCrypto generations"),
    ("aes-gcm", &["0.10.3", "0.11.1"], "RustCrypto generations"),
    ("base16ct", &["0.2.0", "1.0.0"], "RustCrypto generations"),
    (
        "block-buffer",
        &["0.10.4", "0.12.1"],
        "RustCrypto generations",
    ),
    ("cipher", &["0.4.4", "0.5.2"], "RustCrypto generations"),
    ("const-oid", &["0.9.6", "0.10.3"], "RustCrypto generations"),
    (
        "cpufeatures",
        &["0.2.17", "0.3.1"],
        "RustCrypto generations",
    ),
    (
        "crypto-bigint",
        &["0.5.5", "0.7.11"],
        "RustCrypto generations",
    ),
    (
        "crypto-common",
        &["0.1.7", "0.2.2"],
        "RustCrypto generations",
    ),
    ("ctr", &["0.9.2", "0.10.1"], "RustCrypto generations"),
    (
        "curve25519-dalek",
        &["4.1.3", "5.0.0"],
        "RustCrypto generations",
    ),
    ("der", &["0.7.10", "0.8.3"], "RustCrypto generations"),
    ("digest", &["0.10.7", "0.11.3"], "RustCrypto generations"),
    ("ecdsa", &["0.16.9", "0.17.0"], "RustCrypto generations"),
    ("ed25519", &["2.2.3", "3.0.0"], "RustCrypto generations"),
    (
        "ed25519-dalek",
        &["2.2.0", "3.0.0"],
        "RustCrypto generations",
    ),
    (
        "elliptic-curve",
        &["0.13.8", "0.14.1"],
        "RustCrypto generations",
    ),
    ("ff", &["0.13.1", "0.14.0"], "RustCrypto generations"),
    ("ghash", &["0.5.1", "0.6.0"], "RustCrypto generations"),
    ("group", &["0.13.0", "0.14.0"], "RustCrypto generations"),
    ("hkdf", &["0.12.4", "0.13.0"], "RustCrypto generations"),
    ("hmac", &["0.12.1", "0.13.0"], "RustCrypto generations"),
    ("inout", &["0.1.4", "0.2.6"], "RustCrypto generations"),
    ("p256", &["0.13.2", "0.14.0"], "RustCrypto generations"),
    ("p384", &["0.13.1", "0.14.0"], "RustCrypto generations"),
    ("pem-rfc7468", &["0.7.0", "1.0.0"], "RustCrypto generations"),
    ("pkcs1", &["0.7.5", "0.8.0"], "RustCrypto generations"),
    ("pkcs8", &["0.10.2", "0.11.0"], "RustCrypto generations"),
    ("polyval", &["0.6.2", "0.7.3"], "RustCrypto generations"),
    (
        "primeorder",
        &["0.13.6", "0.14.0"],
        "RustCrypto generations",
    ),
    ("rfc6979", &["0.4.0", "0.6.0"], "RustCrypto generations"),
    ("rsa", &["0.9.10", "0.10.0-rc.19"], "RustCrypto generations"),
    ("sec1", &["0.7.3", "0.8.1"], "RustCrypto generations"),
    ("sha1", &["0.10.7", "0.11.0"], "RustCrypto generations"),
    ("sha2", &["0.10.9", "0.11.0"], "RustCrypto generations"),
    ("signature", &["2.2.0", "3.0.0"], "RustCrypto generations"),
    ("spki", &["0.7.3", "0.8.1"], "RustCrypto generations"),
    (
        "universal-hash",
        &["0.5.1", "0.6.1"],
        "RustCrypto generations",
    ),
    // Random numbers: jsonwebtoken 11 on rand 0.8, OpenTelemetry's SDK and ours on 0.9, rmcp,
    // tungstenite and webauthn-rs on 0.10; each rand brings its own core, and getrandom follows.
    ("rand", &["0.8.8", "0.9.5", "0.10.3"], "rand generations"),
    (
        "rand_chacha",
        &["0.3.1", "0.9.0", "0.10.0"],
        "rand generations",
    ),
    (
        "rand_core",
        &["0.6.4", "0.9.5", "0.10.1"],
        "rand generations",
    ),
    (
        "getrandom",
        &["0.2.17", "0.3.4", "0.4.3"],
        "rand generations",
    ),
    // base64: webauthn-rs 0.6 on 0.21, most on 0.22, lettre, rmcp and hyper-util on 0.23.
    (
        "base64",
        &["0.21.7", "0.22.1", "0.23.1"],
        "base64 generations",
    ),
    // Hash maps: rusqlite's hashlink and governor's dashmap on hashbrown 0.14, sqlx on 0.15,
    // indexmap on 0.16, serde_json on 0.17 (foldhash follows).
    (
        "hashbrown",
        &["0.14.5", "0.15.5", "0.16.1", "0.17.1"],
        "hash map generations",
    ),
    ("hashlink", &["0.9.1", "0.10.0"], "hash map generations"),
    ("foldhash", &["0.1.5", "0.2.0"], "hash map generations"),
    // The rest, each held apart by a dependency not yet on the newer one.
    (
        "either",
        &["1.19.0"],
        "one version, two feature sets (sqlx's and prost-derive's)",
    ),
    (
        "nom",
        &["7.1.3", "8.0.0"],
        "cel 0.15 and webauthn-rs' x509 parser on nom 7",
    ),
    ("syn", &["2.0.119", "3.0.9"], "proc macros moving to syn 3"),
    (
        "synstructure",
        &["0.13.2", "0.14.0"],
        "proc macros moving to syn 3",
    ),
    (
        "thiserror",
        &["1.0.69", "2.0.21"],
        "openidconnect 4.1 and webauthn-rs 0.6 on thiserror 1",
    ),
    (
        "thiserror-impl",
        &["1.0.69", "2.0.21"],
        "openidconnect and webauthn-rs on thiserror 1",
    ),
    (
        "webpki-roots",
        &["0.26.11", "1.0.10"],
        "tokio-tungstenite on 0.26, itself 1.0's data",
    ),
];

#[test]
fn the_binary_ships_each_crate_once_but_for_the_listed() {
    let output = cargo_tree("clarify", &["--duplicates", "--depth", "0"]);
    let found: BTreeSet<(String, String)> = output
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            let version = words.next()?.strip_prefix('v')?;
            Some((name.to_owned(), version.to_owned()))
        })
        .collect();
    let allowed: BTreeSet<(String, String)> = ALLOWED
        .iter()
        .flat_map(|(name, versions, _)| versions.iter().map(|v| (name.to_string(), v.to_string())))
        .collect();
    let new: Vec<String> = found
        .difference(&allowed)
        .map(|(name, version)| format!("{name} {version} (see `cargo tree -i {name}@{version}`)"))
        .collect();
    let gone: Vec<String> = allowed
        .difference(&found)
        .map(|(name, version)| format!("{name} {version}"))
        .collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "the binary's duplicate crates changed.\nnew duplicates (build one version, or list \
         them in {file} with why): {new:#?}\nlisted but no longer duplicated (remove them from \
         the list): {gone:#?}",
        file = file!()
    );
}

/// What `cargo tree` prints of `package`'s normal dependencies (not dev, not build) on Linux,
/// one crate a line without the tree's drawing, with `more` arguments.
fn cargo_tree(package: &str, more: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--locked",
            "--package",
            package,
            "--edges",
            "normal",
        ])
        .args(["--target", "x86_64-unknown-linux-gnu", "--prefix", "none"])
        .args(more)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The crates `package` pulls in through normal dependencies, by name.
fn normal_dependencies(package: &str) -> BTreeSet<String> {
    cargo_tree(package, &["--format", "{p}"])
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn rendering_and_the_chat_platforms_do_not_depend_on_the_store_or_a_database_driver() {
    for package in ["clarify-model", "clarify-render", "clarify-channels"] {
        let found = normal_dependencies(package);
        assert!(
            found.contains(package),
            "cargo tree -p {package} did not list the package itself: {found:?}"
        );
        let below: Vec<&str> = [
            "clarify-store",
            "sqlx",
            "sqlx-core",
            "rusqlite",
            "libsqlite3-sys",
        ]
        .into_iter()
        .filter(|name| found.contains(*name))
        .collect();
        assert!(
            below.is_empty(),
            "{package} depends on {below:?}; it should read records and figures from \
             clarify-model (see `cargo tree -p {package} -e normal -i {}`)",
            below.first().copied().unwrap_or_default()
        );
    }
}
