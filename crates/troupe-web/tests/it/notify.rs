//! The notification adapters against fakes on 127.0.0.1: a fake Telegram
//! Bot API and a fake webhook receiver, with restarts between the
//! announcement and the answer.

use crate::common;

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::post;
use common::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use troupe_store::Store;
use troupe_web::notify::{Telegram, TelegramConfig, Webhook, WebhookConfig};
use troupe_web::{NotifyConfig, NotifyDb, ServeOptions};

const BOT: &str = "123:fake-bot-token";
const CHAT: i64 = -100500;
const ALICE: i64 = 7;
const MALLORY: i64 = 99;

#[derive(Default)]
struct FakeBot {
    /// Every call, in order: (method, body).
    calls: Vec<(String, Value)>,
    /// Updates the bot "received"; getUpdates returns those at or after the offset.
    updates: Vec<Value>,
    next_message: i64,
}

impl FakeBot {
    fn of(&self, method: &str) -> Vec<Value> {
        self.calls
            .iter()
            .filter(|(m, _)| m == method)
            .map(|(_, b)| b.clone())
            .collect()
    }
}

type Bot = Arc<Mutex<FakeBot>>;

async fn bot_method(
    State(bot): State<Bot>,
    Path((token, method)): Path<(String, String)>,
    body: axum::Json<Value>,
) -> axum::Json<Value> {
    if token != format!("bot{BOT}") {
        return axum::Json(json!({"ok": false, "description": "Unauthorized"}));
    }
    let mut b = bot.lock().unwrap();
    b.calls.push((method.clone(), body.0.clone()));
    let result = match method.as_str() {
        "sendMessage" => {
            b.next_message += 1;
            json!({"message_id": 1000 + b.next_message, "chat": {"id": body["chat_id"]}, "text": body["text"]})
        }
        "getUpdates" => {
            let offset = body["offset"].as_i64().unwrap_or(0);
            Value::Array(
                b.updates
                    .iter()
                    .filter(|u| u["update_id"].as_i64().unwrap_or(0) >= offset)
                    .cloned()
                    .collect(),
            )
        }
        _ => json!(true),
    };
    axum::Json(json!({"ok": true, "result": result}))
}

async fn fake_bot() -> (String, Bot) {
    let bot: Bot = Arc::default();
    let app = Router::new()
        .route("/{token}/{method}", post(bot_method))
        .with_state(bot.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), bot)
}

fn telegram(store: &Store, base_url: &str) -> Telegram {
    let db = Arc::new(NotifyDb::open(store).unwrap());
    Telegram::new(
        store.clone(),
        db,
        TelegramConfig {
            bot_token: BOT.into(),
            base_url: base_url.into(),
            chat_id: CHAT,
            allowed_users: vec![ALICE],
            poll_timeout: Duration::from_secs(0),
        },
    )
    .unwrap()
}

fn press(update_id: i64, user: i64, message: &Value, data: &str) -> Value {
    json!({"update_id": update_id, "callback_query": {
        "id": format!("cb{update_id}"),
        "from": {"id": user, "username": format!("user{user}")},
        "message": {"message_id": message["message_id"], "chat": {"id": CHAT}},
        "data": data,
    }})
}

fn reply(update_id: i64, user: i64, to: &Value, text: &str) -> Value {
    json!({"update_id": update_id, "message": {
        "message_id": 5000 + update_id,
        "from": {"id": user, "username": format!("user{user}")},
        "chat": {"id": CHAT},
        "text": text,
        "reply_to_message": {"message_id": to["message_id"]},
    }})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_announces_once_and_takes_answers_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let (base, bot) = fake_bot().await;
    let (run, handle) = start_run(&store, KINDS, &[("plan", "the plan")]);
    let tasks = wait_tasks(&store, run, 5);
    let id = |action: &str| {
        tasks
            .iter()
            .find(|t| t.action == action)
            .unwrap()
            .id
            .clone()
    };

    let tg = telegram(&store, &base);
    assert_eq!(tg.announce().await.unwrap(), 5);
    assert_eq!(tg.announce().await.unwrap(), 0, "announced once");
    drop(tg);

    // What was sent, and how each kind is asked.
    let sent = bot.lock().unwrap().of("sendMessage");
    assert_eq!(sent.len(), 5);
    let msg_of = |action: &str| -> Value {
        let task = id(action);
        let i = sent
            .iter()
            .position(|m| m["text"].as_str().unwrap().contains(task.as_str()))
            .unwrap();
        json!({"message_id": 1001 + i as i64, "text": sent[i]["text"], "reply_markup": sent[i]["reply_markup"]})
    };
    let confirm = msg_of("approve");
    let buttons = &confirm["reply_markup"]["inline_keyboard"][0];
    assert_eq!(buttons[0]["text"], "Yes");
    assert_eq!(buttons[1]["text"], "No");
    for b in buttons.as_array().unwrap() {
        let data = b["callback_data"].as_str().unwrap();
        assert!(!data.is_empty() && data.len() <= 64, "{data}");
    }
    let select = msg_of("pick");
    let rows = select["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1][0]["text"], "large");
    let remark = msg_of("remark");
    assert_eq!(remark["reply_markup"]["force_reply"], true);
    let rewrite = msg_of("rewrite");
    assert!(
        rewrite["text"]
            .as_str()
            .unwrap()
            .contains("Current text:\nthe plan")
    );
    let count = msg_of("count");
    let yes = buttons[0]["callback_data"].as_str().unwrap().to_owned();
    let no = buttons[1]["callback_data"].as_str().unwrap().to_owned();
    let large = rows[1][0]["callback_data"].as_str().unwrap().to_owned();

    // Someone answers the select on the command line before anyone presses.
    store.answer(&id("pick"), &json!("small"), "cli").unwrap();

    // Restart: nothing is announced again; the old buttons still work.
    let tg = telegram(&store, &base);
    assert_eq!(
        tg.announce().await.unwrap(),
        0,
        "not announced again after a restart"
    );
    tg.sweep().await.unwrap();
    {
        let edits = bot.lock().unwrap().of("editMessageText");
        assert_eq!(edits.len(), 1, "{edits:?}");
        assert_eq!(edits[0]["message_id"], select["message_id"]);
        assert!(edits[0]["text"].as_str().unwrap().contains("by cli"));
    }
    {
        let mut b = bot.lock().unwrap();
        b.updates = vec![
            press(1, MALLORY, &confirm, &yes),
            press(2, ALICE, &confirm, &yes),
            press(3, ALICE, &confirm, &no),
            press(4, ALICE, &select, &large),
            reply(5, MALLORY, &remark, "ignored"),
            reply(6, ALICE, &remark, "looks fine"),
            reply(7, ALICE, &count, "not a number"),
            reply(8, ALICE, &count, "12"),
            reply(9, ALICE, &rewrite, "the better plan"),
            press(10, ALICE, &confirm, "zzzzzzzz:y"),
        ];
    }
    assert_eq!(tg.poll(Duration::ZERO).await.unwrap(), 10);

    let approve = store.task(&id("approve")).unwrap();
    assert_eq!(
        approve.answer.as_deref(),
        Some("true"),
        "the first allowed press wins"
    );
    assert_eq!(approve.answered_by.as_deref(), Some("telegram:@user7"));
    assert_eq!(
        store.task(&id("pick")).unwrap().answer.as_deref(),
        Some("\"small\"")
    );
    assert_eq!(
        store.task(&id("remark")).unwrap().answer.as_deref(),
        Some("\"looks fine\"")
    );
    // An Int task takes JSON: text is refused with a reply, `12` is taken.
    let counted = store.task(&id("count")).unwrap();
    assert_eq!(counted.answer.as_deref(), Some("12"));
    assert_eq!(
        store.task(&id("rewrite")).unwrap().answer.as_deref(),
        Some("\"the better plan\"")
    );

    {
        let b = bot.lock().unwrap();
        let callbacks: Vec<String> = b
            .of("answerCallbackQuery")
            .iter()
            .map(|c| format!("{}={}", c["callback_query_id"], c["text"]))
            .collect();
        let joined = callbacks.join("\n");
        assert!(joined.contains("\"cb1\"=\"You are not allowed"), "{joined}");
        assert!(joined.contains("\"cb2\"=\"Recorded: Yes\""), "{joined}");
        assert!(
            joined.contains("\"cb3\"=\"Someone answered first.\""),
            "{joined}"
        );
        assert!(
            joined.contains("\"cb4\"=\"Someone answered first.\""),
            "{joined}"
        );
        assert!(
            joined.contains("\"cb10\"=\"This task is not known here.\""),
            "{joined}"
        );
        let edits: Vec<String> = b
            .of("editMessageText")
            .iter()
            .map(|e| e["text"].as_str().unwrap().to_owned())
            .collect();
        assert!(
            edits.iter().any(|t| t.ends_with("✅ Yes (by @user7)")),
            "{edits:?}"
        );
        assert!(
            edits.iter().any(|t| t.contains("⚠ Already answered")),
            "{edits:?}"
        );
        let replies: Vec<String> = b
            .of("sendMessage")
            .iter()
            .skip(5)
            .map(|m| m["text"].as_str().unwrap().to_owned())
            .collect();
        assert!(
            replies
                .iter()
                .any(|t| t.starts_with("Not recorded: this task wants a Int")),
            "{replies:?}"
        );
    }

    // The offset is persisted: a restarted adapter asks from update 11 on.
    drop(tg);
    let tg = telegram(&store, &base);
    assert_eq!(tg.poll(Duration::ZERO).await.unwrap(), 0);
    let last = bot
        .lock()
        .unwrap()
        .of("getUpdates")
        .last()
        .cloned()
        .unwrap();
    assert_eq!(last["offset"], 11);

    let results = handle.join().unwrap().expect("the run finishes");
    assert!(results.contains("the better plan"), "{results}");
    wait_status(&store, run, "done");
}

#[derive(Default)]
struct Receiver {
    posts: Vec<Value>,
    fail_next: usize,
}

async fn receive(
    State(r): State<Arc<Mutex<Receiver>>>,
    body: axum::Json<Value>,
) -> axum::http::StatusCode {
    let mut r = r.lock().unwrap();
    r.posts.push(body.0);
    if r.fail_next > 0 {
        r.fail_next -= 1;
        axum::http::StatusCode::INTERNAL_SERVER_ERROR
    } else {
        axum::http::StatusCode::OK
    }
}

async fn fake_receiver(fail_first: usize) -> (String, Arc<Mutex<Receiver>>) {
    let state = Arc::new(Mutex::new(Receiver {
        posts: Vec::new(),
        fail_next: fail_first,
    }));
    let app = Router::new()
        .route("/hook", post(receive))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hook"), state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_announces_once_and_takes_the_answer_with_its_task_token() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let addr = serve(&store, "server-token").await;
    let (url, receiver) = fake_receiver(1).await;
    let (run, handle) = start_run(&store, APPROVAL, &[("request", "a <b>boat</b>")]);
    let task = wait_tasks(&store, run, 1)[0].id.clone();
    let hook = |store: &Store| {
        Webhook::new(
            store.clone(),
            Arc::new(NotifyDb::open(store).unwrap()),
            WebhookConfig {
                url: url.clone(),
                header: Some("X-Secret: abc".into()),
            },
            format!("http://{addr}/"),
        )
        .unwrap()
    };
    let w = hook(&store);
    assert!(
        w.announce().await.is_err(),
        "the receiver failed: released, tried again"
    );
    assert_eq!(w.announce().await.unwrap(), 1);
    assert_eq!(w.announce().await.unwrap(), 0);
    drop(w);
    let w = hook(&store);
    assert_eq!(
        w.announce().await.unwrap(),
        0,
        "not announced again after a restart"
    );
    let posts = receiver.lock().unwrap().posts.clone();
    assert_eq!(posts.len(), 2);
    let doc = &posts[1];
    assert_eq!(doc["event"], "task");
    assert_eq!(doc["task"]["id"], task.as_str());
    assert_eq!(doc["task"]["kind"], "confirm");
    assert_eq!(
        doc["answer_url"],
        format!("http://{addr}/hooks/answer/{task}")
    );
    let token = doc["token"].as_str().unwrap().to_owned();
    assert_ne!(
        token,
        posts[0]["token"].as_str().unwrap(),
        "a new token for the retry"
    );

    let c = client();
    let answer_url = doc["answer_url"].as_str().unwrap();
    let r = c
        .post(answer_url)
        .json(&json!({"token": posts[0]["token"], "yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401, "the released announcement's token is void");
    let r = c
        .post(answer_url)
        .json(&json!({"yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = c
        .post(answer_url)
        .json(&json!({"token": token, "value": "ok"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400, "a confirm takes yes or no");
    let r = c
        .post(answer_url)
        .header("X-Troupe-Task-Token", &token)
        .json(&json!({"no": true, "by": "bob"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = c
        .post(answer_url)
        .json(&json!({"token": token, "yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 409);
    let row = store.task(&task).unwrap();
    assert_eq!(row.answer.as_deref(), Some("false"));
    assert_eq!(row.answered_by.as_deref(), Some("webhook:bob"));
    handle.join().unwrap().expect("the run finishes");
    wait_status(&store, run, "done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_runs_the_configured_webhook() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&dir);
    let (url, receiver) = fake_receiver(0).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let notify = NotifyConfig::from_toml(&format!(
        "[notify]\npublic_url = \"http://{addr}\"\n[notify.webhook]\nurl = \"{url}\"\n"
    ))
    .unwrap();
    let options = ServeOptions {
        token: "t".into(),
        notify,
        announce: false,
        session_ttl: troupe_web::SESSION_TTL,
        interrupt: None,
    };
    let s = store.clone();
    tokio::spawn(async move { troupe_web::serve_listener(listener, s, options).await });
    let (run, handle) = start_run(&store, APPROVAL, &[("request", "x")]);
    let task = wait_tasks(&store, run, 1)[0].id.clone();
    let mut doc = None;
    for _ in 0..100 {
        if let Some(d) = receiver.lock().unwrap().posts.first() {
            doc = Some(d.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let doc = doc.expect("serve announced the task to the webhook");
    assert_eq!(doc["task"]["id"], task.as_str());
    let r = client()
        .post(doc["answer_url"].as_str().unwrap())
        .json(&json!({"token": doc["token"], "yes": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    handle.join().unwrap().expect("the run finishes");
    wait_status(&store, run, "done");
}
