/**
 * @file Tree-sitter grammar of the troupe workflow language (LANGUAGE.md and
 * the extensions of docs/language.md: `else if`, `_`, `Enum.value`, list
 * literals, `{x}` interpolation, expressions as message items and arguments,
 * `mcp` servers and `tool` actions).
 */

/// <reference types="tree-sitter-cli/dsl" />
// @ts-check

const PREC = {
  or: 1,
  and: 2,
  compare: 3,
  add: 4,
  multiply: 5,
  unary: 6,
  field: 7,
};

const commaSep = (rule) => optional(commaSep1(rule));
const commaSep1 = (rule) => seq(rule, repeat(seq(',', rule)), optional(','));

module.exports = grammar({
  name: 'troupe',

  extras: ($) => [/\s/, $.comment],

  word: ($) => $.identifier,

  rules: {
    source_file: ($) => repeat($._item),

    _item: ($) =>
      choice(
        $.enum_declaration,
        $.record_declaration,
        $.action_declaration,
        $.mcp_declaration,
        $.workflow_declaration,
        $.import_declaration,
      ),

    import_declaration: ($) => seq('import', field('path', $.string)),

    comment: (_) => token(seq('//', /[^\n]*/)),

    identifier: (_) => /[A-Za-z_][A-Za-z0-9_]*/,

    _type_name: ($) => alias($.identifier, $.type_identifier),
    _lifeline: ($) => alias($.identifier, $.lifeline),

    // ---- declarations -------------------------------------------------

    enum_declaration: ($) =>
      seq('enum', field('name', $._type_name), '{', commaSep($.enum_value), '}'),

    enum_value: ($) => $.identifier,

    record_declaration: ($) =>
      seq('record', field('name', $._type_name), '{', commaSep($.parameter), '}'),

    parameter: ($) =>
      seq(
        field('name', $.identifier),
        ':',
        field('type', $._type),
        optional(seq('=', field('default', $._expression))),
      ),

    _type: ($) => choice($._type_name, $.list_type),

    list_type: ($) => seq('[', $._type, ']'),

    action_declaration: ($) =>
      seq(
        field('kind', $.action_kind),
        field('name', $.identifier),
        field('parameters', $.parameter_list),
        optional(seq('->', field('outputs', choice($._type, $.parameter_list)))),
        optional(field('body', choice($.extern_body, $.expression_body, $.field_body))),
      ),

    action_kind: (_) => choice('llm', 'pure', 'effect', 'human', 'tool', 'planner'),

    parameter_list: ($) => seq('(', commaSep($.parameter), ')'),

    extern_body: (_) => seq('extern', optional('idempotent')),

    expression_body: ($) => seq('=', $._expression),

    field_body: ($) => seq('{', repeat(seq($.action_field, optional(choice(',', ';')))), '}'),

    // `lifelines:` of a `planner` is the one keyword that names a field.
    action_field: ($) =>
      seq(field('name', choice($.identifier, alias('lifelines', $.identifier))), ':', field('value', $._expression)),

    mcp_declaration: ($) => seq('mcp', field('name', $.identifier), field('body', $.field_body)),

    workflow_declaration: ($) =>
      seq(
        'workflow',
        field('name', $.identifier),
        '(',
        commaSep($.workflow_input),
        ')',
        field('body', $.block),
      ),

    workflow_input: ($) =>
      seq(field('name', $.identifier), ':', field('type', $._type), '@', field('lifeline', $._lifeline)),

    // ---- statements ---------------------------------------------------

    block: ($) => seq('{', repeat($._statement), '}'),

    _statement: ($) =>
      choice(
        $.lifelines_statement,
        $.msg_statement,
        $.act_statement,
        $.if_statement,
        $.while_statement,
        $.for_statement,
        $.par_statement,
        $.coregion_statement,
        $.call_statement,
        $.return_statement,
        ';',
      ),

    lifelines_statement: ($) => seq('lifelines', $._lifeline, repeat(seq(',', $._lifeline))),

    msg_statement: ($) =>
      seq(
        'msg',
        field('sender', $._lifeline),
        field('sent', $.message_items),
        '->',
        field('receiver', $._lifeline),
        field('received', $.message_items),
      ),

    message_items: ($) => seq('(', commaSep($._expression), ')'),

    act_statement: ($) =>
      seq(
        'act',
        field('lifeline', $._lifeline),
        ':',
        choice(
          seq(commaSep1(field('target', $.identifier)), '=', field('value', choice($.call, $._expression))),
          field('value', $.call),
        ),
      ),

    call: ($) => seq(field('action', $.identifier), field('arguments', $.arguments)),

    arguments: ($) => seq('(', commaSep($._expression), ')'),

    if_statement: ($) =>
      seq(
        'if',
        field('condition', $._expression),
        '@',
        field('owner', $._lifeline),
        field('then', $.block),
        optional(seq('else', field('else', choice($.block, $.if_statement)))),
      ),

    while_statement: ($) =>
      seq(
        'while',
        field('condition', $._expression),
        '@',
        field('owner', $._lifeline),
        field('body', $.block),
        optional(seq('exit', field('exit', $.block))),
      ),

    for_statement: ($) =>
      seq(
        'for',
        field('variable', $.identifier),
        'in',
        field('list', $.identifier),
        '@',
        field('owner', $._lifeline),
        field('body', $.block),
      ),

    par_statement: ($) =>
      seq('par', field('branch', $.block), repeat(seq('and', field('branch', $.block)))),

    coregion_statement: ($) => seq('coregion', field('body', $.block)),

    call_statement: ($) =>
      seq(
        'call',
        field('workflow', $.identifier),
        '[',
        commaSep($.lifeline_map),
        ']',
        field('arguments', $.arguments),
        optional(
          seq('->', choice($.return_item, seq('(', commaSep($.return_item), ')'))),
        ),
      ),

    lifeline_map: ($) =>
      seq(field('callee', $._lifeline), '=', field('caller', $._lifeline)),

    return_statement: ($) =>
      seq('return', choice($.return_item, seq('(', commaSep1($.return_item), ')'))),

    return_item: ($) => seq(field('variable', $.identifier), '@', field('lifeline', $._lifeline)),

    // ---- expressions --------------------------------------------------

    _expression: ($) =>
      choice(
        $.identifier,
        $.integer,
        $.float,
        $.boolean,
        $.string,
        $.triple_string,
        $.list,
        $.parenthesized,
        $.field_expression,
        $.unary_expression,
        $.binary_expression,
        $.causal_form,
      ),

    // The causal-past forms of guards (`prev(φ)`, `since(φ, ψ)`, `once(φ)`,
    // `at(B, φ)`, `seen(B)`, `on(B)`); the checker accepts them only in the
    // guards of `if` and `while`. The name and its `(` are one token, so
    // that the names stay ordinary identifiers elsewhere (`-> A(seen)`).
    causal_form: ($) =>
      choice(
        seq(field('form', causal($, 'prev', 'once')), field('operand', $._expression), ')'),
        seq(
          field('form', causal($, 'since')),
          field('operand', $._expression),
          ',',
          field('operand', $._expression),
          ')',
        ),
        seq(
          field('form', causal($, 'at')),
          field('lifeline', $._lifeline),
          ',',
          field('operand', $._expression),
          ')',
        ),
        seq(field('form', causal($, 'seen', 'on')), field('lifeline', $._lifeline), ')'),
      ),

    integer: (_) => /\d+/,
    float: (_) => /\d+\.\d+/,
    boolean: (_) => choice('true', 'false'),

    list: ($) => seq('[', commaSep($._expression), ']'),

    parenthesized: ($) => seq('(', $._expression, ')'),

    field_expression: ($) =>
      prec(PREC.field, seq(field('value', $._expression), '.', field('field', $.identifier))),

    unary_expression: ($) =>
      prec(PREC.unary, seq(field('operator', choice('not', '-')), field('operand', $._expression))),

    binary_expression: ($) => {
      const table = [
        [PREC.or, 'or'],
        [PREC.and, 'and'],
        [PREC.compare, choice('==', '!=', '<', '<=', '>', '>=')],
        [PREC.add, choice('+', '-')],
        [PREC.multiply, choice('*', '/', '%')],
      ];
      return choice(
        ...table.map(([p, op]) =>
          prec.left(
            /** @type {number} */ (p),
            seq(
              field('left', $._expression),
              // @ts-ignore
              field('operator', op),
              field('right', $._expression),
            ),
          ),
        ),
      );
    },

    string: ($) =>
      seq(
        '"',
        repeat(
          choice(
            $.string_content,
            $.escape_sequence,
            $.interpolation,
          ),
        ),
        token.immediate('"'),
      ),

    string_content: (_) => token.immediate(prec(1, /[^"\\{}\n]+/)),

    triple_string: ($) =>
      seq(
        '"""',
        repeat(
          choice(
            alias($._triple_content, $.string_content),
            $.escape_sequence,
            $.interpolation,
          ),
        ),
        token.immediate('"""'),
      ),

    _triple_content: (_) =>
      choice(token.immediate(prec(1, /[^"\\{}]+/)), token.immediate('"'), token.immediate('""')),

    escape_sequence: (_) => choice(token.immediate(/\\[nt"\\]/), token.immediate('{{'), token.immediate('}}')),

    interpolation: ($) => seq(token.immediate('{'), field('name', $.identifier), '}'),
  },
});

/** The name of a causal form with its opening parenthesis, as one token. */
function causal($, ...names) {
  const name = names.length === 1 ? names[0] : choice(...names);
  return alias(token(seq(name, /\s*/, '(')), $.causal_name);
}
