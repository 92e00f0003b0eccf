//! "Did you mean …?" suggestions by edit distance.

/// The candidate closest to `name`, if it is close enough to be a likely typo.
pub(crate) fn did_you_mean(
    name: &str,
    candidates: impl IntoIterator<Item = String>,
) -> Option<String> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| c != name)
        .map(|c| (levenshtein(name, &c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)))
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let names = || ["review_plan", "make_plan"].map(String::from);
        assert_eq!(
            did_you_mean("reveiw_plan", names()),
            Some("review_plan".into())
        );
        assert_eq!(did_you_mean("bake", names()), None);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
    }
}
