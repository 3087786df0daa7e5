//! Records the git commit the binary is built from (reported by `/status`).
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    Command::new("git")
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=7", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=BUILD_COMMIT_HASH={commit}");
    // In a worktree `.git` is a file: ask git where HEAD and the refs really are, so the
    // build script reruns when the commit changes and not on every build.
    for path in ["HEAD", "refs/heads"] {
        if let Some(real) = git(&["rev-parse", "--git-path", path]) {
            println!("cargo:rerun-if-changed={real}");
        }
    }
    if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
        println!("cargo:rerun-if-changed={common}/refs/heads");
    }
}
