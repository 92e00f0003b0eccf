; Highlights of the troupe workflow language.
;
; Patterns never capture the same node twice, so the result is the same for
; editors where the first matching pattern wins (Helix, the tree-sitter CLI)
; and where the last one wins (Neovim).

(comment) @comment

; Declarations
[
  "enum"
  "record"
  "workflow"
  "mcp"
  "import"
  "extern"
  "idempotent"
] @keyword

(action_kind) @keyword

; Statements
[
  "lifelines"
  "msg"
  "act"
  "call"
  "return"
] @keyword

[
  "if"
  "else"
  "while"
  "exit"
  "for"
  "in"
  "par"
  "coregion"
] @keyword.control

(par_statement "and" @keyword.control)

; The causal-past forms of guards
(causal_form form: _ @function.builtin)
(causal_form operand: (identifier) @variable)

[
  "and"
  "or"
  "not"
] @keyword.operator

; Names
(type_identifier) @type
(lifeline) @module
(enum_value (identifier) @constant)
(action_declaration name: (identifier) @function)
(workflow_declaration name: (identifier) @function)
(mcp_declaration name: (identifier) @module)
(call action: (identifier) @function.call)
(parameter name: (identifier) @variable.parameter)
(workflow_input name: (identifier) @variable.parameter)
(action_field name: (identifier) @property)
(field_expression field: (identifier) @property)

; Variables: every place an expression or a binding names one.
(act_statement target: (identifier) @variable)
(act_statement value: (identifier) @variable)
(return_item variable: (identifier) @variable)
(message_items (identifier) @variable)
(arguments (identifier) @variable)
(list (identifier) @variable)
(parenthesized (identifier) @variable)
(expression_body (identifier) @variable)
(action_field value: (identifier) @variable)
(parameter default: (identifier) @variable)
(field_expression value: (identifier) @variable)
(unary_expression operand: (identifier) @variable)
(binary_expression left: (identifier) @variable)
(binary_expression right: (identifier) @variable)
(if_statement condition: (identifier) @variable)
(while_statement condition: (identifier) @variable)
(interpolation name: (identifier) @variable)

; Literals
(string) @string
(triple_string) @string
(escape_sequence) @string.escape
(interpolation "}" @punctuation.special)
(integer) @number
(float) @number
(boolean) @boolean

; Operators and punctuation
[
  "=="
  "!="
  "<"
  "<="
  ">"
  ">="
  "+"
  "-"
  "*"
  "/"
  "%"
  "="
  "->"
] @operator

"@" @punctuation.special

[
  "("
  ")"
  "["
  "]"
] @punctuation.bracket

(block ["{" "}"] @punctuation.bracket)
(field_body ["{" "}"] @punctuation.bracket)
(enum_declaration ["{" "}"] @punctuation.bracket)
(record_declaration ["{" "}"] @punctuation.bracket)

[
  ","
  ":"
  ";"
  "."
] @punctuation.delimiter
