//! `/healthz`, `/readyz` and `/metrics` on the binary: `troupe worker
//! --health ADDR` serves them on their own address, `troupe serve` beside
//! its pages without a session; the metrics count the store's runs by
//! status as recorded and pass `promtool check metrics` (Debian's
//! `prometheus` package, installed by `.ci/install-prometheus.sh`).

use crate::support::{Project, said};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// `GET path` on `addr`: the status code and the body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

/// Checks `metrics` with promtool: no problems, exit 0.
fn promtool(metrics: &str) {
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (bash .ci/install-prometheus.sh)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(metrics.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}\n{metrics}", said(&out));
}

fn project_with_runs() -> Project {
    let p = Project::new();
    p.write(
        "w.troupe",
        "workflow w(x: Int @ A) {\n  lifelines A, B\n  msg A(x) -> B(x)\n  return x @ B\n}\n",
    );
    for x in ["1", "2"] {
        let out = p.run(&["run", "w.troupe", "--store", "db", "-i", &format!("x={x}")]);
        assert!(out.status.success(), "{}", said(&out));
    }
    p
}

#[test]
fn a_worker_serves_health_readiness_and_valid_metrics() {
    let p = project_with_runs();
    let mut worker = p
        .cmd(&["worker", "--store", "db", "--health", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The banner names the bound address; the rest of stderr is drained.
    let mut lines = BufReader::new(worker.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("the worker's banner").unwrap();
        if let Some(rest) = line.split_once("health and metrics on http://") {
            break rest.1.split('/').next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    assert_eq!(get(&addr, "/healthz"), (200, "ok\n".to_owned()));
    assert_eq!(get(&addr, "/readyz").0, 200);
    let (status, metrics) = get(&addr, "/metrics");
    assert_eq!(status, 200, "{metrics}");
    assert!(
        metrics.contains("troupe_runs{status=\"done\"} 2"),
        "{metrics}"
    );
    assert!(metrics.contains("troupe_queue_depth 0"), "{metrics}");
    assert!(
        metrics.contains("troupe_worker_claims_total 0"),
        "{metrics}"
    );
    assert!(metrics.contains("troupe_lease_renewals_total"), "{metrics}");
    promtool(&metrics);
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &worker.id().to_string()])
        .status();
    let _ = worker.wait();
}

#[test]
fn serve_answers_health_and_metrics_without_a_session() {
    let p = project_with_runs();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut serve = p
        .cmd(&["serve", "--store", "db", "--bind", &addr, "--no-notify"])
        .env("TROUPE_TOKEN", "a-token-of-the-test")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::support::wait_until("serve to listen", || TcpStream::connect(&addr).is_ok());
    assert_eq!(get(&addr, "/healthz").0, 200);
    assert_eq!(get(&addr, "/readyz").0, 200);
    let (status, metrics) = get(&addr, "/metrics");
    assert_eq!(status, 200, "{metrics}");
    assert!(
        metrics.contains("troupe_runs{status=\"done\"} 2"),
        "{metrics}"
    );
    // A worker's counters are not this process's to report.
    assert!(!metrics.contains("troupe_worker_claims_total"), "{metrics}");
    promtool(&metrics);
    // The pages still need a session.
    assert_eq!(get(&addr, "/api/runs").0, 401);
    let _ = serve.kill();
    let _ = serve.wait();
}

/// `troupe serve` stops on SIGTERM (a supervisor's stop) with 143 and on
/// SIGINT (Ctrl-C) with 130, saying so, rather than dying by the signal.
#[test]
fn serve_stops_on_sigterm_and_sigint_with_their_statuses() {
    let p = project_with_runs();
    for (signal, code) in [("-TERM", 143), ("-INT", 130)] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let serve = p
            .cmd(&["serve", "--store", "db", "--bind", &addr, "--no-notify"])
            .env("TROUPE_TOKEN", "a-token-of-the-test")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        crate::support::wait_until("serve to listen", || TcpStream::connect(&addr).is_ok());
        let sent = std::process::Command::new("kill")
            .args([signal, &serve.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let out = serve.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{signal}: {}", said(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("stopping the runs this server drives"),
            "{}",
            said(&out)
        );
    }
}
