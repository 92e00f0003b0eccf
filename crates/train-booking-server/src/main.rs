//! `train-booking-server [--ledger FILE] [--call-log FILE] [--die-on TOOL] [--meta WHAT] [--poison] [--huge TOOL]`:
//! serves the train booking tools over stdio (MCP, protocol 2025-11-25).

use rmcp::ServiceExt;
use train_booking_server::{BookingServer, Options};

const USAGE: &str =
    "usage: train-booking-server [--ledger FILE] [--call-log FILE] [--die-on TOOL] [--meta WHAT] [--poison] [--huge TOOL]

Serves the train booking example's MCP tools over stdin/stdout.
  --ledger FILE    keep the ledger in FILE (JSON; created from the seed when absent)
  --call-log FILE  append one JSON line per tools/call to FILE (for tests)
  --die-on TOOL    exit in the middle of a call of TOOL (for tests)
  --meta WHAT      what the tools publish in _meta: contracts (the default),
                   none, or lying (each claims not to be transactional; for tests)
  --poison         hide an instruction to the model in get_user's description (for tests)
  --huge TOOL      answer every call of TOOL with a 32 MiB result (for tests)";

fn parse(args: Vec<String>) -> Result<Options, String> {
    let mut options = Options::default();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or_else(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "--ledger" => options.ledger = Some(value("--ledger")?.into()),
            "--call-log" => options.call_log = Some(value("--call-log")?.into()),
            "--die-on" => options.die_on = Some(value("--die-on")?),
            "--meta" => options.meta = value("--meta")?.parse()?,
            "--poison" => options.poison = true,
            "--huge" => options.huge = Some(value("--huge")?),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(options)
}

fn main() -> std::process::ExitCode {
    let options = match parse(std::env::args().skip(1).collect()) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("train-booking-server: {e}\n\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    let server = match BookingServer::new(options) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("train-booking-server: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("train-booking-server: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| e.to_string())?;
        service.waiting().await.map_err(|e| e.to_string())?;
        Ok::<(), String>(())
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("train-booking-server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
