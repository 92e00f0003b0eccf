//! Name conversions between SGD's `CamelCase` intent names and MCP's conventional
//! `snake_case` tool names.

/// `CheckBalance` → `check_balance`, `GetRide` → `get_ride`, `LookupMusic2` →
/// `lookup_music2`; names already in snake case are kept (lower-cased).
pub fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev = i.checked_sub(1).and_then(|j| chars.get(j)).copied();
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                Some(p) if p.is_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_uppercase() => next.is_some_and(char::is_lowercase),
                _ => false,
            };
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else if c == '-' || c == ' ' {
            if !out.ends_with('_') {
                out.push('_');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `check_balance` → `CheckBalance`, `get-env` → `GetEnv`.
pub fn camel_case(name: &str) -> String {
    name.split(['_', '-', ' ', '.'])
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_sgd_intent_names() {
        assert_eq!(snake_case("CheckBalance"), "check_balance");
        assert_eq!(snake_case("ReserveOnewayFlight"), "reserve_oneway_flight");
        assert_eq!(snake_case("GetHTTPPage"), "get_http_page");
        assert_eq!(snake_case("already_snake"), "already_snake");
        assert_eq!(snake_case("get-env"), "get_env");
        assert_eq!(snake_case(""), "");
    }

    #[test]
    fn converts_tool_names_back() {
        assert_eq!(camel_case("check_balance"), "CheckBalance");
        assert_eq!(camel_case("get-tiny-image"), "GetTinyImage");
        assert_eq!(camel_case("__"), "");
    }
}
