//! The ledger: users, their accounts' balances, and booked tickets, kept in
//! memory and optionally in a JSON file (written whole to a temporary file and
//! renamed, so a crash leaves the old or the new ledger, never half of one).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

/// A failure to read or write the ledger file.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("cannot read the ledger {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write the ledger {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("the ledger {path} is not a valid ledger: {message}")]
    Invalid { path: String, message: String },
}

/// A registered user.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: String,
    pub name: String,
    pub email: String,
    pub account: String,
}

/// A booked ticket.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticket {
    pub id: String,
    pub user_id: String,
    pub origin: String,
    pub destination: String,
    pub date: String,
    pub class: String,
    /// In cents.
    pub price_cents: i64,
    /// The idempotency key of the call that booked it, if any.
    pub key: Option<String>,
}

impl Ticket {
    /// The ticket as the tools return it (the example's `Ticket` record).
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "origin": self.origin,
            "destination": self.destination,
            "date": self.date,
            "class": self.class,
            "price": cents_to_float(self.price_cents),
        })
    }
}

/// Users, balances (in cents) and tickets.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ledger {
    pub users: BTreeMap<String, User>,
    pub balances: BTreeMap<String, i64>,
    pub tickets: Vec<Ticket>,
}

pub fn cents_to_float(cents: i64) -> f64 {
    cents as f64 / 100.0
}

impl Ledger {
    /// Three users: `u1` Ada (500.00), `u2` Alan (40.00), `u3` Grace (1200.00).
    pub fn seeded() -> Ledger {
        let mut ledger = Ledger::default();
        for (id, name, email, account, balance) in [
            ("u1", "Ada Lovelace", "ada@example.org", "acct-ada", 50_000),
            ("u2", "Alan Turing", "alan@example.org", "acct-alan", 4_000),
            (
                "u3",
                "Grace Hopper",
                "grace@example.org",
                "acct-grace",
                120_000,
            ),
        ] {
            ledger.users.insert(
                id.to_owned(),
                User {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    email: email.to_owned(),
                    account: account.to_owned(),
                },
            );
            ledger.balances.insert(account.to_owned(), balance);
        }
        ledger
    }

    /// The file's ledger, or the seeded one when the file does not exist yet.
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ledger::seeded()),
            Err(source) => {
                return Err(LedgerError::Read {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        let invalid = |message: String| LedgerError::Invalid {
            path: path.display().to_string(),
            message,
        };
        let value: Value = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        Ledger::from_json(&value).map_err(invalid)
    }

    /// Writes the ledger to `path` (via a temporary file and a rename).
    pub fn save(&self, path: &Path) -> Result<(), LedgerError> {
        let write = |source| LedgerError::Write {
            path: path.display().to_string(),
            source,
        };
        let text = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).map_err(write)?;
        std::fs::rename(&tmp, path).map_err(write)
    }

    /// The ledger file's JSON form.
    pub fn to_json(&self) -> Value {
        json!({
            "users": self.users.values().map(|u| json!({
                "id": u.id, "name": u.name, "email": u.email, "account": u.account,
            })).collect::<Vec<_>>(),
            "balances": self.balances.iter().map(|(a, c)| (a.clone(), json!(cents_to_float(*c)))).collect::<serde_json::Map<_, _>>(),
            "tickets": self.tickets.iter().map(|t| json!({
                "id": t.id, "user_id": t.user_id, "origin": t.origin, "destination": t.destination,
                "date": t.date, "class": t.class, "price": cents_to_float(t.price_cents), "key": t.key,
            })).collect::<Vec<_>>(),
        })
    }

    /// Reads the ledger file's JSON form.
    pub fn from_json(value: &Value) -> Result<Ledger, String> {
        let text = |v: &Value, field: &str| -> Result<String, String> {
            v.get(field)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("`{field}` is missing or not a string"))
        };
        let cents = |v: &Value, what: &str| -> Result<i64, String> {
            v.as_f64()
                .filter(|x| x.is_finite() && x.abs() < 1e13)
                .map(|x| (x * 100.0).round() as i64)
                .ok_or_else(|| format!("{what} is not a number"))
        };
        let mut ledger = Ledger::default();
        for u in value
            .get("users")
            .and_then(Value::as_array)
            .ok_or("no `users` list")?
        {
            let user = User {
                id: text(u, "id")?,
                name: text(u, "name")?,
                email: text(u, "email")?,
                account: text(u, "account")?,
            };
            ledger.users.insert(user.id.clone(), user);
        }
        for (account, balance) in value
            .get("balances")
            .and_then(Value::as_object)
            .ok_or("no `balances` object")?
        {
            let c = cents(balance, &format!("the balance of `{account}`"))?;
            ledger.balances.insert(account.clone(), c);
        }
        for t in value
            .get("tickets")
            .and_then(Value::as_array)
            .ok_or("no `tickets` list")?
        {
            ledger.tickets.push(Ticket {
                id: text(t, "id")?,
                user_id: text(t, "user_id")?,
                origin: text(t, "origin")?,
                destination: text(t, "destination")?,
                date: text(t, "date")?,
                class: text(t, "class")?,
                price_cents: cents(t.get("price").unwrap_or(&Value::Null), "a ticket's price")?,
                key: t.get("key").and_then(Value::as_str).map(str::to_owned),
            });
        }
        Ok(ledger)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json() {
        let mut ledger = Ledger::seeded();
        ledger.tickets.push(Ticket {
            id: "T-0001".into(),
            user_id: "u1".into(),
            origin: "Paris".into(),
            destination: "Lyon".into(),
            date: "2026-05-01".into(),
            class: "economy".into(),
            price_cents: 4_250,
            key: Some("k".into()),
        });
        assert_eq!(Ledger::from_json(&ledger.to_json()), Ok(ledger));
    }

    #[test]
    fn rejects_malformed_files() {
        assert!(Ledger::from_json(&json!({})).is_err());
        assert!(
            Ledger::from_json(&json!({"users": [{"id": 1}], "balances": {}, "tickets": []}))
                .is_err()
        );
    }
}
