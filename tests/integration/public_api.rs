//! Each crate's public API is what other crates use (ARCHITECTURE.md, "Crates"): a `pub fn` or
//! `pub mod` of a workspace crate whose name appears nowhere outside that crate — not in the
//! crates above it, nor in `tests/` or `benches/` — is refused here, naming it; make it
//! `pub(crate)` (or, for a test helper, gate it behind `cfg(test)` / the `testing` feature).
//! Items in private modules are held by rustc's `unreachable_pub` lint, which every crate
//! denies; this covers the public modules, where that lint cannot see whether anyone outside
//! calls a function.
//!
//! The check is by name, so it errs on the lenient side: a function named like one used
//! elsewhere (`new`, `open`) passes. Code under `#[cfg(test)]` (test modules, `tests.rs` and
//! `*_tests.rs` files) and items gated by `cfg(test)` or the `testing` feature are exempt.

use std::path::{Path, PathBuf};

/// Each library crate's source, and who may use it (the crates above it in the graph, its
/// own integration tests, the front's binary, the suites and the benches).
const CRATES: [(&str, &str, &[&str]); 5] = [
    (
        "weaver-engine",
        "actors/engine/src",
        &[
            "actors/engine/tests",
            "actors/router",
            "actors/devnet",
            "actors/replay",
            "src",
            "tests",
            "benches",
        ],
    ),
    (
        "weaver-router",
        "actors/router/src",
        &[
            "actors/router/tests",
            "actors/devnet",
            "src",
            "tests",
            "benches",
        ],
    ),
    (
        "weaver-devnet",
        "actors/devnet/src",
        &["actors/devnet/tests", "src", "tests", "benches"],
    ),
    (
        "weaver-replay",
        "actors/replay/src",
        &["actors/replay/tests", "src", "tests", "benches"],
    ),
    ("weaver (lib)", "src", &["src/main.rs", "tests", "benches"]),
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_file() {
        if path.extension().is_some_and(|e| e == "rs") {
            out.push(path.to_path_buf());
        }
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == "node_modules" || name == "target" {
            continue;
        }
        rust_files(&entry.path(), out);
    }
}

/// The production lines of a file: up to its `#[cfg(test)] mod …` (kept last, as rustfmt and
/// this codebase do), none of a test file; each with whether a `cfg(test)` or `testing`
/// attribute gates the item it starts.
fn production_lines(path: &Path) -> Vec<(usize, String, bool)> {
    let name = path.file_name().unwrap().to_string_lossy();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return vec![];
    }
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut gated = false;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        let next = lines.get(i + 1).map(|l| l.trim()).unwrap_or("");
        if trimmed == "#[cfg(test)]"
            && (next.starts_with("mod ") || next.starts_with("pub mod "))
            && next.ends_with('{')
        {
            break;
        }
        out.push((i + 1, line.to_string(), gated));
        let is_gate = trimmed.starts_with("#[cfg(test)]")
            || trimmed.starts_with("#[cfg(any(test")
            || trimmed.contains("feature = \"testing\"");
        gated = is_gate || (gated && trimmed.starts_with("#["));
    }
    out
}

/// `pub fn NAME` / `pub mod NAME` (plain `pub`, not `pub(crate)`) at the start of a line.
fn public_item(line: &str) -> Option<(&'static str, String)> {
    let rest = line.trim_start().strip_prefix("pub ")?;
    let rest = ["const ", "async ", "unsafe "]
        .iter()
        .fold(rest, |r, q| r.strip_prefix(q).unwrap_or(r));
    let (kind, rest) = if let Some(r) = rest.strip_prefix("fn ") {
        ("fn", r)
    } else if let Some(r) = rest.strip_prefix("mod ") {
        ("mod", r)
    } else {
        return None;
    };
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some((kind, name))
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `text` holds `name` as a whole word (a module: followed by `::`).
fn mentions(text: &str, kind: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = &text[at + name.len()..];
        before.is_none_or(|c| !is_word_char(c))
            && match kind {
                "mod" => after.starts_with("::"),
                _ => after.chars().next().is_none_or(|c| !is_word_char(c)),
            }
    })
}

#[test]
fn every_public_function_and_module_is_used_outside_its_crate() {
    let mut unused = Vec::new();
    for (krate, source, users) in CRATES {
        let mut outside = String::new();
        for user in users {
            let mut files = vec![];
            rust_files(&root().join(user), &mut files);
            for file in files {
                outside.push_str(&std::fs::read_to_string(file).unwrap());
                outside.push('\n');
            }
        }
        let mut files = vec![];
        rust_files(&root().join(source), &mut files);
        for file in files {
            if file.ends_with("src/main.rs") {
                continue;
            }
            for (line_number, line, gated) in production_lines(&file) {
                let Some((kind, name)) = public_item(&line) else {
                    continue;
                };
                if !gated && !mentions(&outside, kind, &name) {
                    let file = file.strip_prefix(root()).unwrap().display().to_string();
                    unused.push(format!("{krate}: {file}:{line_number} pub {kind} {name}"));
                }
            }
        }
    }
    assert!(
        unused.is_empty(),
        "public but used by no other crate (make them pub(crate)):\n{}",
        unused.join("\n")
    );
}
