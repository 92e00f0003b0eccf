//! "Did you mean …?" suggestions by edit distance.
//!
//! Suggestions are a courtesy, so their cost is bounded: one check compares
//! at most [`SUGGESTION_BUDGET`] candidates in all (a file with 40,000
//! misspelt names among 40,000 variables would otherwise take quadratic
//! time), and names longer than [`MAX_SUGGESTED_LEN`] get none (the edit
//! distance is quadratic in the length).

use crate::Checker;

/// Candidate comparisons one check may spend on suggestions.
pub(crate) const SUGGESTION_BUDGET: usize = 250_000;

/// Names longer than this (in bytes) get no suggestion.
pub(crate) const MAX_SUGGESTED_LEN: usize = 64;

impl Checker<'_> {
    /// The candidate closest to `name`, if it is close enough to be a likely
    /// typo and the check's suggestion budget is not spent.
    pub(crate) fn did_you_mean<S: AsRef<str>>(
        &self,
        name: &str,
        candidates: impl IntoIterator<Item = S>,
    ) -> Option<String> {
        let left = self.suggestion_budget.get();
        let mut used = 0;
        let best = did_you_mean(
            name,
            candidates.into_iter().take(left).inspect(|_| used += 1),
        );
        self.suggestion_budget.set(left - used);
        best
    }

    /// The hint for an unknown `name` among `known` (sorted): the likely
    /// typo, else `none` when there are none, else "the `what` are …".
    pub(crate) fn unknown_name_hint(
        &self,
        name: &str,
        known: &[String],
        what: &str,
        none: &str,
    ) -> String {
        match self.did_you_mean(name, known.iter()) {
            Some(s) => format!("did you mean `{s}`?"),
            None if known.is_empty() => none.to_owned(),
            None => format!(
                "the {what} are {}",
                list_some(known.iter().map(String::as_str))
            ),
        }
    }
}

/// Names listed in a hint: at most this many, then how many more.
const LISTED: usize = 12;

/// `a, b, c` — the first few of `names`, then "and N more", so that a hint
/// stays short however many names there are.
pub(crate) fn list_some<'s>(names: impl ExactSizeIterator<Item = &'s str>) -> String {
    let total = names.len();
    let mut out = names.take(LISTED).collect::<Vec<_>>().join(", ");
    if total > LISTED {
        out.push_str(&format!(" and {} more", total - LISTED));
    }
    out
}

/// The candidate closest to `name`, if it is close enough to be a likely typo.
/// The keys of a name table, sorted, so that suggestions never depend on
/// the hash order of a process.
#[allow(clippy::disallowed_methods)] // sorted before anyone sees the order
pub(crate) fn sorted_keys<V>(map: &std::collections::HashMap<String, V>) -> Vec<String> {
    let mut keys: Vec<String> = map.keys().cloned().collect();
    keys.sort();
    keys
}

pub(crate) fn did_you_mean<S: AsRef<str>>(
    name: &str,
    candidates: impl IntoIterator<Item = S>,
) -> Option<String> {
    if name.len() > MAX_SUGGESTED_LEN {
        return None;
    }
    let len = name.chars().count();
    let limit = (len / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| {
            let c = c.as_ref();
            // An empty name (a slot with no variable) is never a suggestion.
            c != name
                && !c.is_empty()
                && c.len() <= MAX_SUGGESTED_LEN + 4 * limit
                && c.chars().count().abs_diff(len) <= limit
        })
        .map(|c| (levenshtein(name, c.as_ref()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.as_ref().cmp(b.1.as_ref())))
        .map(|(_, c)| c.as_ref().to_owned())
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
    fn the_budget_bounds_suggestions_over_a_whole_check() {
        // As many misspelt reads as variables: quadratic without the budget.
        let n = 1_000;
        let mut src = String::from("workflow w(x: Int @ A) {\n");
        for i in 0..n {
            src.push_str(&format!("act A: value_{i} = x\n"));
        }
        for i in 0..n {
            src.push_str(&format!("act A: z{i} = valeu_{i}\n"));
        }
        src.push('}');
        let (_, diags) = crate::check_text(&src);
        let hinted = diags
            .iter()
            .filter(|d| {
                d.hint
                    .as_deref()
                    .is_some_and(|h| h.starts_with("did you mean"))
            })
            .count();
        assert_eq!(diags.len(), n);
        // The first reads get a suggestion; once the budget is spent, none do.
        assert!(diags[0].hint.as_deref().unwrap().contains("`value_0`"));
        assert!(hinted > 0 && hinted < n, "{hinted}");
        assert!(hinted <= SUGGESTION_BUDGET / n + 1, "{hinted}");
    }

    #[test]
    fn suggests_close_names_only() {
        let names = || ["review_plan", "make_plan"].map(String::from);
        assert_eq!(
            did_you_mean("reveiw_plan", names()),
            Some("review_plan".into())
        );
        assert_eq!(did_you_mean("bake", names()), None);
        // Empty candidates stand for variables of other lifelines.
        assert_eq!(did_you_mean("y", ["", "x"]), Some("x".into()));
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(list_some(["a", "b"].into_iter()), "a, b");
        let many: Vec<String> = (0..100).map(|i| format!("n{i}")).collect();
        let listed = list_some(many.iter().map(String::as_str));
        assert!(listed.ends_with("n11 and 88 more"), "{listed}");
        let long = "a".repeat(MAX_SUGGESTED_LEN + 1);
        assert_eq!(did_you_mean(&long, [format!("{long}b")]), None);
    }
}
