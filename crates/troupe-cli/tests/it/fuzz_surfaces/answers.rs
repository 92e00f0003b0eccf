//! Fuzz target: human answers, read as every type the programs declare
//! (what `troupe_host`'s validation applies) and through `Host::answer` on
//! the pending tasks of a real store: a refused answer leaves its task
//! pending, an accepted one is recorded in canonical form. A module of
//! `fuzz_surfaces.rs`, apart so that each target reads on its own.

use super::*;

#[derive(Debug, Clone)]
enum Answer {
    Yes,
    No,
    Value(String),
    Json(String),
    Raw(J),
    Shaped(u64),
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        Just(Answer::Yes),
        Just(Answer::No),
        text_value().prop_map(Answer::Value),
        json_value().prop_map(|j| Answer::Json(j.to_string())),
        text_value().prop_map(Answer::Json),
        json_value().prop_map(Answer::Raw),
        any::<u64>().prop_map(Answer::Shaped),
    ]
}

fn to_input(a: &Answer, ty: &Type, types: &troupe_check::TypeTable) -> troupe_host::AnswerInput {
    use troupe_host::AnswerInput as A;
    match a {
        Answer::Yes => A::Yes,
        Answer::No => A::No,
        Answer::Value(t) => A::Value(t.clone()),
        Answer::Json(t) => A::Json(t.clone()),
        Answer::Raw(j) => A::Raw(j.clone()),
        Answer::Shaped(seed) => A::Raw(shaped(ty, types, &mut (seed | 1), 0)),
    }
}

fn check_answer((index, a): &(usize, Answer)) -> Result<(), TestCaseError> {
    let all = types();
    let (program, ty) = &all[index % all.len()];
    let types = &programs()[*program].1.types;
    use troupe_host::AnswerInput as A;
    // What `troupe_host`'s validation does with each kind of answer.
    let read = match to_input(a, ty, types) {
        A::Yes | A::No if *ty == Type::Bool => Ok(Value::Bool(matches!(a, Answer::Yes))),
        A::Yes | A::No => Err("a yes/no answer does not fit".to_owned()),
        A::Value(text) => Value::parse(&text, ty, types),
        A::Json(text) => serde_json::from_str::<J>(&text)
            .map_err(|e| e.to_string())
            .and_then(|j| Value::from_json(&j, ty, types)),
        A::Raw(j) => Value::from_json(&j, ty, types),
    };
    match read {
        Ok(v) => {
            let canonical = v.to_json(types);
            let again = Value::from_json(&canonical, ty, types);
            prop_assert_eq!(again.as_ref().ok(), Some(&v), "canonical form reads back");
        }
        Err(why) => clear(&why)?,
    }
    Ok(())
}

#[test]
fn random_answers_read_as_every_declared_type() {
    fuzz(
        "answers",
        20_000,
        || (any::<usize>(), answer()),
        check_answer,
    );
}

/// A store with one run of [`TYPED`] waiting on its eight human tasks.
struct Tasks {
    _dir: tempfile::TempDir,
    host: troupe_host::Host,
    store: troupe_store::Store,
    tasks: Vec<troupe_store::TaskRow>,
}

fn tasks() -> &'static Tasks {
    static TASKS: OnceLock<Tasks> = OnceLock::new();
    TASKS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let store = troupe_store::Store::open(
            dir.path().join("troupe.db"),
            troupe_store::Durability::Normal,
        )
        .unwrap();
        let (run, store) = waiting_run(store, dir.path());
        let name = troupe_store::Store::run_name(run);
        let start = Instant::now();
        let tasks = loop {
            let tasks: Vec<_> = store
                .tasks(false)
                .unwrap()
                .into_iter()
                .filter(|t| t.run == name)
                .collect();
            if tasks.len() == 8 {
                break tasks;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the tasks appear"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let host = troupe_host::Host::new(
            store.clone(),
            troupe_host::HostConfig::new(dir.path().to_owned()),
            Arc::new(troupe_host::NoTools),
        );
        Tasks {
            _dir: dir,
            host,
            store,
            tasks,
        }
    })
}

fn check_host_answer((index, a): &(usize, Answer)) -> Result<(), TestCaseError> {
    let t = tasks();
    let task = &t.tasks[index % t.tasks.len()];
    let before = t.store.task(&task.id).unwrap();
    // The task's type, as the workflow declares it.
    let program = &programs().last().unwrap().1;
    let action = program
        .actions
        .iter()
        .find(|x| x.name == task.action)
        .unwrap();
    let ty = action.outputs[0].ty.clone();
    let input = to_input(a, &ty, &program.types);
    match t.host.answer(&task.id, input, "fuzz") {
        Ok(row) => {
            prop_assert_eq!(before.status, troupe_store::TaskStatus::Pending);
            let recorded: J = serde_json::from_str(row.answer.as_deref().unwrap()).unwrap();
            prop_assert!(
                Value::from_json(&recorded, &ty, &program.types).is_ok(),
                "the recorded answer {recorded} is a {ty:?}"
            );
        }
        Err(e) => {
            clear(&e.to_string())?;
            let after = t.store.task(&task.id).unwrap();
            prop_assert_eq!(
                after.status,
                before.status,
                "a refused answer changes nothing"
            );
            prop_assert_eq!(after.answer, before.answer);
        }
    }
    Ok(())
}

#[test]
fn random_answers_through_the_host() {
    fuzz(
        "host-answers",
        600,
        || (any::<usize>(), answer()),
        check_host_answer,
    );
}
