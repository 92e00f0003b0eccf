//! Diagnostics as data: a stable code, a severity, a message, a primary span,
//! optional secondary labels and a hint. Rendering happens at the edge (the CLI).

use crate::Span;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One finding about a source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub span: Span,
    /// A short label printed under the primary span.
    pub label: Option<String>,
    /// Other places that explain the finding.
    pub related: Vec<(Span, String)>,
    pub hint: Option<String>,
}

impl Diagnostic {
    pub fn error(code: Code, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            span,
            label: None,
            related: Vec::new(),
            hint: None,
        }
    }

    pub fn warning(code: Code, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, span, message)
        }
    }

    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = Some(label.into());
        self
    }

    #[must_use]
    pub fn with_related(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        self.related.push((span, label.into()));
        self
    }

    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(hint.into());
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

macro_rules! codes {
    ($( $(#[doc = $doc:literal])* $variant:ident = $code:literal, $name:literal; )*) => {
        /// The catalog of diagnostic codes. Codes are stable: a code is never
        /// reused for another meaning.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The stable code, e.g. `E0301`.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code,)* }
            }

            /// A short kebab-case name, e.g. `unbound-variable`.
            pub fn name(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            /// What the code means and how to fix it.
            pub fn explanation(self) -> &'static str {
                match self { $(Code::$variant => concat!($($doc, "\n"),*),)* }
            }

            pub fn from_code(code: &str) -> Option<Code> {
                match code { $($code => Some(Code::$variant),)* _ => None }
            }
        }
    };
}

codes! {
    /// A character that starts no token of the language.
    InvalidCharacter = "E0001", "invalid-character";
    /// A string literal runs to the end of the line (or of the file, for `"""`).
    UnterminatedString = "E0002", "unterminated-string";
    /// A backslash escape other than `\n \t \" \\`, or a lone `{`/`}` that is
    /// neither a placeholder `{name}` nor an escaped brace `{{ }}`.
    InvalidEscape = "E0003", "invalid-escape";
    /// The parser expected one thing and found another.
    UnexpectedToken = "E0004", "unexpected-token";
    /// A number literal that does not fit its type.
    InvalidNumber = "E0005", "invalid-number";
    /// A form of LANGUAGE.md §6 that this version parses but does not
    /// implement yet. Every form of §6 is implemented in this version; the
    /// code stays reserved (codes are never reused) for forms to come.
    Unsupported = "E0006", "unsupported-form";
    /// Two declarations (types, actions, workflows, enum values, fields,
    /// parameters or inputs) share a name.
    DuplicateDefinition = "E0101", "duplicate-definition";
    /// A type name that is neither built in (`Bool Int Float Text Json`) nor a
    /// declared `enum` or `record`.
    UnknownType = "E0102", "unknown-type";
    /// A field of an action body that its kind does not take, a field with a
    /// value of the wrong kind, or a required field left out.
    InvalidActionField = "E0103", "invalid-action-field";
    /// A `{name}` placeholder in a prompt, system or ask text that names no
    /// parameter of the action.
    UnknownPlaceholder = "E0104", "unknown-placeholder";
    /// An action whose body does not fit its kind, e.g. an `llm` without a
    /// prompt body or a `pure` action with neither `= expr` nor `extern`.
    InvalidActionBody = "E0105", "invalid-action-body";
    /// An `llm` action's `tools:` list names something that is not a
    /// declared `tool` action.
    UnknownTool = "E0106", "unknown-tool";
    /// Rule 1: sender and receiver of a `msg` list a different number of items.
    PayloadArity = "E0201", "payload-arity";
    /// Rule 1: a receiver literal must equal the sender's literal at the same
    /// position.
    PayloadLiteralMismatch = "E0202", "payload-literal-mismatch";
    /// Rule 2: a variable read at a lifeline is not bound there on every path
    /// before the read.
    UnboundVariable = "E0301", "unbound-variable";
    /// Rule 2: a variable is bound with two different types.
    BindingTypeMismatch = "E0302", "binding-type-mismatch";
    /// Rule 3: a call names no declared action.
    UnknownAction = "E0401", "unknown-action";
    /// Rule 3: an action is called with the wrong number of arguments.
    ArgumentCount = "E0402", "argument-count";
    /// Rule 3: a value of one type is used where another is expected.
    TypeMismatch = "E0403", "type-mismatch";
    /// Rule 3: an action call binds a different number of outputs than the
    /// action declares.
    OutputCount = "E0404", "output-count";
    /// Rule 3: the guard of an `if` or `while` is not a `Bool`.
    GuardNotBool = "E0405", "guard-not-bool";
    /// Rule 3: a message from a lifeline to itself.
    SelfMessage = "E0406", "self-message";
    /// Rule 3: a lifeline not listed in the workflow's `lifelines` line.
    UnknownLifeline = "E0407", "unknown-lifeline";
    /// Rule 3: a name that is neither a variable bound at the lifeline nor a
    /// value of a declared enum.
    UnknownEnumValue = "E0408", "unknown-enum-value";
    /// Rule 3: a field access on a record that has no such field, or on a
    /// value that is not a record.
    UnknownField = "E0409", "unknown-field";
    /// Rule 3: an operator applied to operands of types it does not take.
    OperatorTypes = "E0410", "operator-types";
    /// Rule 4: `return` names a variable not bound at that lifeline on every
    /// path to the end of the workflow.
    ReturnUnbound = "E0501", "return-unbound";
        /// Rule 4: `return` anywhere but as the last statement of a workflow body.
    MisplacedReturn = "E0502", "misplaced-return";
    /// Tool contracts: a call of a transactional tool is not guarded, on
    /// every path, by the true branch of a person's confirmation.
    UnconfirmedTransaction = "E0601", "unconfirmed-transaction";
    /// Tool contracts: a `requires` relation of a called tool does not hold on
    /// every path (the required tool was not called before, or with other values).
    MissingRequirement = "E0602", "missing-requirement";
    /// Tool contracts: a called tool documents failure modes that the
    /// workflow never inspects before relying on the result.
    UnhandledFailure = "W0603", "unhandled-failure";
    /// Tool contracts: the contracts of a server cannot be read, or do not
    /// match its declared tools.
    ContractUnavailable = "E0604", "contract-unavailable";
    /// Tool contracts: a called tool has no contract (its server names no
    /// `contracts:` sidecar, or the sidecar has no entry for it), so nothing
    /// about it is verified. A warning; an error when verification runs with
    /// `deny_unverified` (`troupe check --deny-unverified`).
    UnverifiedTool = "W0605", "unverified-tool";
    /// Tool contracts: the sources of a tool's contract (the sidecar, the
    /// contract its server publishes in `_meta`, its MCP annotations)
    /// disagree. The strictest wins; the finding names the source to fix.
    ContractDisagreement = "W0606", "contract-disagreement";
    /// Tool contracts: a tool whose contract says it `precedes` a called
    /// tool is not called before it on every path (with the bound values
    /// equal): `book_ticket precedes email_ticket` and an `email_ticket`
    /// no booking came before.
    MissingPredecessor = "E0607", "missing-predecessor";
    /// An `import` names a file that cannot be read, or is used where no
    /// file system is at hand (checking a text that is not a file).
    ImportUnresolved = "E0701", "import-unresolved";
    /// Files import each other in a cycle; the message shows the chain.
    ImportCycle = "E0702", "import-cycle";
    /// A `call` names no workflow of this file or of the files it imports.
    UnknownWorkflow = "E0703", "unknown-workflow";
    /// A `call`'s lifeline map is wrong: a callee lifeline left unmapped or
    /// mapped twice, a name that is no lifeline of the callee, two callee
    /// lifelines mapped to one caller lifeline, or a result named at another
    /// lifeline than the one the callee returns it at.
    CallLifelines = "E0704", "call-lifelines";
    /// A `call` that cannot be inlined: the workflow calls itself (directly
    /// or through others), or inlining nests or grows beyond the bounds.
    CallNotInlinable = "E0705", "call-not-inlinable";
    /// A `for` over something that is not a list variable of its owner, or
    /// whose list is bound again inside the loop.
    ForList = "E0706", "for-list";
    /// A variable written in one branch of a `par` is read or written in
    /// another branch at the same lifeline: the branches run concurrently,
    /// so the outcome would depend on the schedule. The message points at
    /// both places.
    ParConflict = "E0720", "par-conflict";
    /// A `coregion` that is not a set of messages to one receiver from
    /// distinct senders with disjoint bindings: a statement other than
    /// `msg`, a second receiver, a sender twice, a variable bound twice.
    CoregionForm = "E0721", "coregion-form";
    /// A causal-past form (`prev`, `since`, `once`, `at`, `seen`, `on`;
    /// LANGUAGE.md §7) used wrongly: outside the guard of an `if` or a
    /// `while`, with the wrong operands, `seen(B)` without a field, or a
    /// variable read where no one lifeline's variables are in scope (inside
    /// `once(…)`, name whose variable it is with `at(B, …)` or `seen(B).x`).
    CausalForm = "E0730", "causal-form";
    /// A `planner`'s `actions:` or `lifelines:` list is wrong: empty, naming
    /// no declared action (or a `planner`, which a plan may not call), a
    /// lifeline that is not an identifier, or one entry twice.
    PlannerList = "E0801", "planner-list";
    /// A generated plan is not one `workflow` and nothing else: another
    /// declaration, an `import`, no workflow or several, or a source beyond
    /// the size bound. Reported when a plan is checked at run time.
    PlanShape = "E0802", "plan-shape";
    /// A generated plan uses a lifeline its planner's `lifelines:` does not
    /// list.
    PlanLifeline = "E0803", "plan-lifeline";
    /// A generated plan's inputs or results do not fit its planner: the
    /// inputs must be the planner's parameters (names and types, in order),
    /// the results its outputs (types, in order).
    PlanSignature = "E0804", "plan-signature";
    /// A generated plan calls a declared action that its planner's
    /// `actions:` does not list.
    PlanAction = "E0805", "plan-action";
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_round_trip() {
        let mut seen = std::collections::BTreeSet::new();
        for &code in Code::ALL {
            assert!(seen.insert(code.as_str()), "duplicate {code}");
            assert_eq!(Code::from_code(code.as_str()), Some(code));
            assert!(!code.explanation().trim().is_empty());
        }
    }
}
