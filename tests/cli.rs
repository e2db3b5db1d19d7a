//! The binary's contract: exit codes and one-line errors.

use std::process::Command;

fn simcrawl() -> Command {
    Command::new(env!("CARGO_BIN_EXE_simcrawl"))
}

#[test]
fn bad_usage_exits_2() {
    let out = simcrawl().arg("no-such-command").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
