//! Credentials in URLs (`https://user:password@host/…`) are sent, never
//! shown: [`redact_url_credentials`] removes the user-info part of every URL
//! in a text, whatever produced the text (a provider's message, a transport
//! error, a configuration error quoting the URL as it was written).

use std::borrow::Cow;

/// `text` with the user-info of every `scheme://user:password@host` in it
/// replaced by `<redacted>`. Textual, so it also catches URLs that would not
/// parse (a raw `@` in a password, a bad port).
pub fn redact_url_credentials(text: &str) -> Cow<'_, str> {
    if !text.contains("://") || !text.contains('@') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let start = at + 3;
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let end = after
            .find(|c: char| {
                matches!(
                    c,
                    '/' | '?' | '#' | '"' | '\'' | '<' | '>' | '`' | '\\' | '|' | '{' | '}'
                ) || c.is_whitespace()
                    || c.is_control()
            })
            .unwrap_or(after.len());
        let authority = &after[..end];
        match authority.rfind('@') {
            Some(i) => {
                out.push_str("<redacted>");
                out.push_str(&authority[i..]);
            }
            None => out.push_str(authority),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_info_is_removed_from_every_url() {
        let r = |s: &str| redact_url_credentials(s).into_owned();
        assert_eq!(
            r("cannot connect to http://ada:s3cr3t@127.0.0.1:9/v1: refused"),
            "cannot connect to http://<redacted>@127.0.0.1:9/v1: refused"
        );
        assert_eq!(
            r("bad base URL \"https://u:p@ss@[::1]:99999/x\", and ftp://k@h"),
            "bad base URL \"https://<redacted>@[::1]:99999/x\", and ftp://<redacted>@h"
        );
        assert_eq!(
            r("mail a@b, see https://host/a@b"),
            "mail a@b, see https://host/a@b"
        );
        assert_eq!(r("https://u:p@h?x=1#y"), "https://<redacted>@h?x=1#y");
        assert!(matches!(redact_url_credentials("no url"), Cow::Borrowed(_)));
        assert_eq!(r("://@"), "://<redacted>@");
    }
}
