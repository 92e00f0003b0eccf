//! Every command finds the store the same way (issue #29): `--store`, else
//! `TROUPE_STORE`, else `[store] path` in `troupe.toml`, else
//! `.troupe/troupe.db`. `troupe msc RUN`, `serve`, `mcp serve` and
//! `worker` once ignored the last two and opened the default file.

use crate::support::{Project, said};

fn project() -> Project {
    let p = Project::new();
    p.write(
        "w.troupe",
        "workflow w(x: Int @ A) {\n  lifelines A, B\n  msg A(x) -> B(x)\n  return x @ B\n}\n",
    );
    let out = p.run(&["run", "w.troupe", "--store", "elsewhere.db", "-i", "x=1"]);
    assert!(out.status.success(), "{}", said(&out));
    p
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn msc_of_a_run_reads_the_store_the_environment_or_troupe_toml_names() {
    let p = project();
    // Nothing names it: the default file, which has no run-1.
    let out = p.run(&["msc", "run-1"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        stderr(&out).contains("no store at .troupe/troupe.db"),
        "{}",
        said(&out)
    );
    let out = p
        .cmd(&["msc", "run-1"])
        .env("TROUPE_STORE", "elsewhere.db")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", said(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("<svg"));
    p.write("troupe.toml", "[store]\npath = \"elsewhere.db\"\n");
    let out = p.run(&["msc", "run-1"]);
    assert!(out.status.success(), "{}", said(&out));
    // `--store` wins over both.
    let out = p.run(&["msc", "run-1", "--store", "none.db"]);
    assert!(
        stderr(&out).contains("no store at none.db"),
        "{}",
        said(&out)
    );
}

#[test]
fn serve_mcp_serve_and_worker_open_the_store_the_environment_or_troupe_toml_names() {
    let p = project();
    // `serve` on a store that does not exist says which it looked for.
    let out = p
        .cmd(&["serve", "--bind", "127.0.0.1:0"])
        .env("TROUPE_STORE", "missing.db")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", said(&out));
    assert!(
        stderr(&out).contains("no store at missing.db"),
        "{}",
        said(&out)
    );
    // `mcp serve` opens (creating) the store troupe.toml names: one under a
    // directory that cannot exist is named in its error.
    p.write(
        "troupe.toml",
        "[store]\npath = \"/proc/no-such-dir/x.db\"\n",
    );
    let out = p.run(&["mcp", "serve", "w.troupe"]);
    assert!(!out.status.success(), "{}", said(&out));
    assert!(stderr(&out).contains("/proc/no-such-dir"), "{}", said(&out));
    // A worker on the store troupe.toml names finds nothing to do there
    // and says where it looked.
    p.write("troupe.toml", "[store]\npath = \"elsewhere.db\"\n");
    let out = p.run(&["worker", "--exit-when-idle"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(stderr(&out).contains("elsewhere.db"), "{}", said(&out));
}
