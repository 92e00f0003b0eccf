//! Small SGD schemas shared by the unit tests.

/// A two-intent bank service: a lookup and a transaction.
pub const BANK: &str = r#"[{
    "service_name": "Banks_1", "description": "Manage bank accounts",
    "slots": [
        {"name": "account_type", "description": "The account type", "is_categorical": true,
         "possible_values": ["checking", "savings"]},
        {"name": "amount", "description": "The amount", "is_categorical": false,
         "possible_values": []},
        {"name": "balance", "description": "The balance", "is_categorical": false,
         "possible_values": []},
        {"name": "memo", "description": "A memo", "is_categorical": false,
         "possible_values": []}
    ],
    "intents": [
        {"name": "CheckBalance", "description": "Check the balance of an account",
         "is_transactional": false, "required_slots": ["account_type"],
         "optional_slots": {}, "result_slots": ["account_type", "balance"]},
        {"name": "TransferMoney", "description": "Transfer money to another account",
         "is_transactional": true, "required_slots": ["account_type", "amount"],
         "optional_slots": {"memo": "dontcare"}, "result_slots": ["amount"]}
    ]}]"#;
