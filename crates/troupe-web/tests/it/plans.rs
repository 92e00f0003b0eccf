//! A planner run on the web page: the *Plans* section shows the accepted
//! plan's source and its nested run, and the sequence chart draws the plan
//! as a nested box over the plan's own lifelines.

use crate::common;

use common::*;
use reqwest::header::{COOKIE, SET_COOKIE};

const TOKEN: &str = "plans-http-token";
const PLANNER: &str = include_str!("../../../../examples/planner.troupe");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_page_shows_the_plan_and_draws_it_as_a_nested_box() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, TOKEN).await;
    let base = format!("http://{addr}");
    let c = client();
    let r = c
        .get(format!("{base}/?token={TOKEN}"))
        .send()
        .await
        .unwrap();
    let cookie = r.headers()[SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (run, handle) = start_run(&store, PLANNER, &[("question", "why <is> the sky blue?")]);
    handle.join().unwrap().expect("the planner run finishes");
    let page = c
        .get(format!("{base}/runs/{run}"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let plans = &page[page.find("<h2>Plans</h2>").expect("a plans section")..];
    assert!(plans.contains("plan of Desk/solve#0"), "{plans}");
    assert!(
        plans.contains("workflow plan(task: Text @ Researcher)"),
        "{plans}"
    );
    assert!(plans.contains("its run"), "{plans}");
    let chart = &page[page.find("<h2>Sequence chart</h2>").unwrap()..];
    assert!(chart.contains("plan of solve at Desk"), "{chart}");
    assert!(chart.contains("Researcher") && chart.contains("Writer"));
    // The question, from the user, is escaped wherever it is shown.
    assert!(!page.contains("<is>"));
}
