//! Schedules: `[[schedule]]` in `troupe.toml` starts a workflow's run at
//! every tick of an interval or a cron expression.
//!
//! ```toml
//! [[schedule]]
//! name = "digest"                 # unique; names the ticks in the store
//! file = "flows/digest.troupe"    # relative to the project directory
//! workflow = "digest"             # optional: one of several in the file
//! cron = "0 7 * * Mon-Fri"        # five fields (minute first), or six/seven with seconds first
//! # every = "15m"                 # or an interval, aligned to the Unix epoch
//! inputs = { topic = "releases" }
//! missed = "latest"               # "skip" | "latest" | "all"
//! ```
//!
//! Every `troupe worker` and `troupe serve` keeps the project's schedules:
//! at a tick, each tries to start its run, and the store lets one of them
//! (`Store::start_tick`: the tick and its run are one transaction, the tick
//! unique), so a tick starts one run however many processes keep it. The
//! run is queued; any worker drives it. Ticks are computed on each
//! process's clock (UTC); a process that looks late only decides whether
//! the tick was missed.
//!
//! Missed ticks (nobody kept the schedule then): `latest` (the default)
//! starts one run for the latest missed tick, `all` one per missed tick
//! (at most [`CATCH_UP`] per round), `skip` none — only a tick at most half
//! a period (and at most a minute) old starts. A schedule never kept before
//! starts at its first tick from now, as `skip` would.

use crate::compile::Compiled;
use crate::{Host, HostError, RunSettings};
use chrono::{DateTime, TimeZone as _, Utc};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::str::FromStr as _;
use std::time::Duration;

/// Missed ticks started in one round at most (`missed = "all"`).
pub const CATCH_UP: usize = 100;

/// The longest a tick may be late and still count as on time.
const GRACE: i64 = 60_000;

/// One `[[schedule]]` of `troupe.toml`, as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSection {
    pub name: String,
    pub file: String,
    pub workflow: Option<String>,
    pub every: Option<String>,
    pub cron: Option<String>,
    #[serde(default)]
    pub inputs: toml::Table,
    #[serde(default)]
    pub missed: Missed,
}

/// What happens to ticks nobody kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Missed {
    Skip,
    #[default]
    Latest,
    All,
}

/// When a schedule ticks.
#[derive(Debug, Clone)]
pub enum When {
    /// Every multiple of the interval since the Unix epoch.
    Every(Duration),
    /// A cron expression (seconds first), in UTC; `text` as written.
    Cron {
        schedule: Box<cron::Schedule>,
        text: String,
    },
}

impl std::fmt::Display for When {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            When::Every(d) => write!(f, "every {}", humantime::format_duration(*d)),
            When::Cron { text, .. } => write!(f, "cron {text}"),
        }
    }
}

/// A checked schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    pub name: String,
    /// The workflow file, resolved against the project directory.
    pub file: PathBuf,
    pub workflow: Option<String>,
    /// The inputs, as a JSON object (what `--input-json` takes).
    pub inputs: serde_json::Value,
    pub when: When,
    pub missed: Missed,
}

impl Schedule {
    /// Checks one `[[schedule]]`: exactly one of `every` and `cron`, a
    /// valid duration or expression. Errors name the schedule.
    pub fn from_section(s: &ScheduleSection, dir: &Path) -> Result<Schedule, HostError> {
        let bad = |what: String| HostError::Config(format!("[[schedule]] {:?}: {what}", s.name));
        if s.name.trim().is_empty() {
            return Err(HostError::Config(
                "a [[schedule]] has an empty `name`".into(),
            ));
        }
        let when = match (&s.every, &s.cron) {
            (Some(every), None) => match humantime::parse_duration(every) {
                Ok(d) if d >= Duration::from_millis(1) => When::Every(d),
                _ => {
                    return Err(bad(format!(
                        "every = {every:?} is not a duration such as \"30s\", \"15m\" or \"1day\""
                    )));
                }
            },
            (None, Some(text)) => {
                // Five fields are crontab's (minute first): at second 0.
                let fields = text.split_whitespace().count();
                let hint = "write five fields (minute hour day-of-month month day-of-week), e.g. \"0 7 * * Mon-Fri\", or six or seven with seconds first";
                let full = match fields {
                    5 => format!("0 {text}"),
                    6 | 7 => text.clone(),
                    n => {
                        return Err(bad(format!("cron = {text:?} has {n} field(s); {hint}")));
                    }
                };
                let schedule = cron::Schedule::from_str(&full).map_err(|e| {
                    // The parser's message ends with its reason, after an
                    // echo of the text and a caret.
                    let e = e.to_string();
                    let why = e.lines().last().unwrap_or("").trim().to_owned();
                    bad(format!(
                        "cron = {text:?} is not a cron expression ({why}); {hint}"
                    ))
                })?;
                When::Cron {
                    schedule: Box::new(schedule),
                    text: text.clone(),
                }
            }
            (Some(_), Some(_)) => return Err(bad("give `every` or `cron`, not both".into())),
            (None, None) => {
                return Err(bad(
                    "needs `every = \"15m\"` or `cron = \"0 7 * * *\"`".into()
                ));
            }
        };
        let inputs = serde_json::to_value(&s.inputs)
            .map_err(|e| bad(format!("inputs cannot be read: {e}")))?;
        Ok(Schedule {
            name: s.name.clone(),
            file: dir.join(&s.file),
            workflow: s.workflow.clone(),
            inputs,
            when,
            missed: s.missed,
        })
    }

    /// The first tick strictly after `ms` (ms since the Unix epoch).
    pub fn next_after(&self, ms: i64) -> Option<i64> {
        match &self.when {
            When::Every(d) => {
                let every = d.as_millis().max(1) as i64;
                Some((ms.div_euclid(every) + 1) * every)
            }
            When::Cron { schedule, .. } => schedule
                .after(&utc(ms)?)
                .next()
                .map(|t| t.timestamp_millis()),
        }
    }

    /// The latest tick at or before `ms`.
    fn latest_at(&self, ms: i64) -> Option<i64> {
        match &self.when {
            When::Every(d) => {
                let every = d.as_millis().max(1) as i64;
                Some(ms.div_euclid(every) * every)
            }
            When::Cron { schedule, .. } => schedule
                .after(&utc(ms + 1)?)
                .next_back()
                .map(|t| t.timestamp_millis()),
        }
    }

    /// How late tick `tick` may be and still be on time: half a period,
    /// at most a minute.
    fn grace(&self, tick: i64) -> i64 {
        self.next_after(tick)
            .map_or(GRACE, |next| ((next - tick) / 2).clamp(1, GRACE))
    }

    /// The ticks to start at `now`, oldest first, given the latest tick
    /// started (`last`), under the schedule's policy for missed ones.
    pub fn due(&self, last: Option<i64>, now: i64) -> Vec<i64> {
        let Some(latest) = self.latest_at(now) else {
            return Vec::new();
        };
        let on_time = now - latest < self.grace(latest);
        match last {
            Some(l) if latest <= l => Vec::new(),
            None if on_time => vec![latest],
            None => Vec::new(),
            Some(_) if on_time && self.missed != Missed::All => vec![latest],
            Some(_) => match self.missed {
                Missed::Skip => Vec::new(),
                Missed::Latest => vec![latest],
                Missed::All => {
                    let mut ticks = Vec::new();
                    let mut t = last.unwrap_or(latest);
                    while let Some(next) = self.next_after(t) {
                        if next > now || ticks.len() == CATCH_UP {
                            break;
                        }
                        ticks.push(next);
                        t = next;
                    }
                    ticks
                }
            },
        }
    }
}

fn utc(ms: i64) -> Option<DateTime<Utc>> {
    Utc.timestamp_millis_opt(ms).single()
}

/// When to look at `schedules` next: at the soonest next tick, at least
/// 10 ms from now (a clock that reads a tick early looks again) and at
/// most a minute (a clock that jumps is read again).
pub fn next_wake(schedules: &[Schedule]) -> tokio::time::Instant {
    let now = now_ms();
    let next = schedules
        .iter()
        .filter_map(|s| s.next_after(now))
        .min()
        .unwrap_or(now + GRACE);
    tokio::time::Instant::now() + Duration::from_millis((next - now).clamp(10, GRACE) as u64)
}

/// Now, in ms since the Unix epoch, on this process's clock.
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// `2026-12-07T09:00:00Z` for a tick.
pub fn show_tick(ms: i64) -> String {
    utc(ms).map_or_else(
        || ms.to_string(),
        |t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    )
}

/// What keeping a schedule did at one tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fired {
    /// This process started the tick's run.
    Started {
        schedule: String,
        tick: i64,
        run: i64,
    },
    /// The tick could not start (its file does not check, its inputs do
    /// not fit): nothing recorded; the next tick tries again.
    Failed {
        schedule: String,
        tick: i64,
        why: String,
    },
}

impl Host {
    /// Starts the due ticks of `schedules` at `now`; the ticks another
    /// process started are skipped silently.
    pub fn fire_schedules(&self, schedules: &[Schedule], now: i64) -> Vec<Fired> {
        let mut fired = Vec::new();
        for s in schedules {
            let last = match self.store().last_tick(&s.name) {
                Ok(last) => last,
                Err(e) => {
                    fired.push(Fired::Failed {
                        schedule: s.name.clone(),
                        tick: now,
                        why: e.to_string(),
                    });
                    continue;
                }
            };
            for tick in s.due(last, now) {
                match self.start_tick(s, tick) {
                    Ok(Some(run)) => fired.push(Fired::Started {
                        schedule: s.name.clone(),
                        tick,
                        run,
                    }),
                    Ok(None) => {}
                    Err(e) => fired.push(Fired::Failed {
                        schedule: s.name.clone(),
                        tick,
                        why: e.to_string(),
                    }),
                }
            }
        }
        fired
    }

    /// Starts tick `tick` of `s`: its run, queued, unless another process
    /// started the tick first (`None`).
    fn start_tick(&self, s: &Schedule, tick: i64) -> Result<Option<i64>, HostError> {
        let compiled = Compiled::load(&s.file, s.workflow.as_deref())?;
        let inputs = compiled.parse_inputs(&[], Some(&s.inputs))?;
        let settings = RunSettings::default();
        let unbound = self.backends().unbound_externs(&compiled)?;
        if !unbound.is_empty() {
            return Err(HostError::UnboundExterns { names: unbound });
        }
        self.backends().check_models(&settings)?;
        let new = crate::start::new_run(&compiled, inputs, &settings, None)?;
        Ok(self.store().start_tick(&s.name, tick, &new)?)
    }

    /// The project's schedules (`troupe.toml` in the host's directory).
    pub fn schedules(&self) -> Result<Vec<Schedule>, HostError> {
        let dir = &self.config().config_dir;
        crate::ProjectConfig::load(dir)?.schedules(dir)
    }

    /// Keeps `schedules` until dropped: wakes at each next tick and starts
    /// what is due, telling `on_fired`.
    pub async fn keep_schedules(&self, schedules: Vec<Schedule>, on_fired: impl Fn(&Fired)) {
        if schedules.is_empty() {
            return std::future::pending().await;
        }
        loop {
            tokio::time::sleep_until(next_wake(&schedules)).await;
            for f in self.fire_schedules(&schedules, now_ms()) {
                on_fired(&f);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(when: &str, missed: Missed) -> Schedule {
        let (every, cron) = match when.strip_prefix("cron ") {
            Some(c) => (None, Some(c.to_owned())),
            None => (Some(when.to_owned()), None),
        };
        Schedule::from_section(
            &ScheduleSection {
                name: "s".into(),
                file: "f.troupe".into(),
                workflow: None,
                every,
                cron,
                inputs: toml::Table::new(),
                missed,
            },
            Path::new("."),
        )
        .unwrap()
    }

    #[test]
    fn intervals_tick_on_multiples_of_the_epoch_and_missed_ticks_follow_the_policy() {
        let s = schedule("1s", Missed::Latest);
        assert_eq!(s.next_after(1_500), Some(2_000));
        assert_eq!(s.next_after(2_000), Some(3_000));
        // Never kept: only a tick that is on time.
        assert_eq!(s.due(None, 2_100), vec![2_000]);
        // Kept up to 2 s; at 2.5 s nothing new; at 3.2 s the tick of 3 s.
        assert_eq!(s.due(Some(2_000), 2_500), Vec::<i64>::new());
        assert_eq!(s.due(Some(2_000), 3_200), vec![3_000]);
        // Down from 3 s to 7.5 s: latest starts one, all starts each, skip
        // none.
        assert_eq!(s.due(Some(3_000), 7_500), vec![7_000]);
        let all = schedule("1s", Missed::All);
        assert_eq!(
            all.due(Some(3_000), 7_500),
            vec![4_000, 5_000, 6_000, 7_000]
        );
        assert_eq!(all.due(Some(0), 1_000_000).len(), CATCH_UP);
        let skip = schedule("1s", Missed::Skip);
        assert_eq!(skip.due(Some(3_000), 7_500), Vec::<i64>::new());
        assert_eq!(skip.due(Some(3_000), 7_000), vec![7_000]);
    }

    #[test]
    fn cron_expressions_take_five_fields_or_seconds_first() {
        // 2026-12-07 (a Monday) 06:59:30 UTC.
        let monday = Utc
            .with_ymd_and_hms(2026, 12, 7, 6, 59, 30)
            .unwrap()
            .timestamp_millis();
        let at_seven = Utc
            .with_ymd_and_hms(2026, 12, 7, 7, 0, 0)
            .unwrap()
            .timestamp_millis();
        let s = schedule("cron 0 7 * * Mon-Fri", Missed::Latest);
        assert_eq!(s.next_after(monday), Some(at_seven));
        assert_eq!(s.due(None, at_seven + 5_000), vec![at_seven]);
        let every_second = schedule("cron * * * * * *", Missed::Latest);
        assert_eq!(every_second.next_after(at_seven), Some(at_seven + 1_000));
        let e = Schedule::from_section(
            &ScheduleSection {
                name: "bad".into(),
                file: "f.troupe".into(),
                workflow: None,
                every: None,
                cron: Some("at seven".into()),
                inputs: toml::Table::new(),
                missed: Missed::Latest,
            },
            Path::new("."),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("\"bad\"") && e.contains("five fields"), "{e}");
    }
}
