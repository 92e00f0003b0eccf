"""Projects workflows with ZipperGen, the reference implementation of the
paper troupe implements, for troupe-project's differential test
(tests/it/zippergen.rs).

Reads from stdin a JSON object {"cases": [case, ...]}, each case a global
workflow of the core constructs both sides share (msg, act, if, while) as
plain JSON trees. For each case it writes the workflow as ZipperGen's Python
DSL (a module with `@workflow`, `Sender(x) >> Receiver(y)`,
`Lifeline: out = action(args)`, `if g @ Owner:`, `while g @ Owner: ... else:`),
imports it so that ZipperGen's own decorator builds the global program, has
`zippergen.projection.project` project it onto every lifeline, and writes the
local programs to stdout in a normal form the Rust side also produces from
troupe's projection:

    ["send", to, items]                 a data send
    ["recv", from, binds]               a data receive
    ["act", outputs, action, args]      an action
    ["if", stmt, guard, then, else]     the owner of `if` stmt
    ["while", stmt, guard, body, exit]  the owner of `while` stmt
    ["ctrl", decision, class, to]       a control send (the owner's broadcast)
    ["branch", class, from, then, else] a lifeline told about an `if`
    ["loop", class, from, body, exit]   a lifeline told about a `while`

Items and binds are "v:name" (a variable), "i:3" (an Int literal) or
"x:text" (an expression ZipperGen's payloads cannot hold, carried as an
opaque text literal: projection copies payloads without looking at them).
A control tag is written as its *class*: ZipperGen keys a tag on the
construct's content, so structurally identical constructs share one; the
class is the smallest statement id of the constructs with that content
(the output's "classes" maps every construct to its class, and the Rust side
writes troupe's tags through the same map). An owner's construct is written
with its own statement id, found through its condition object, which the
projection hands on unchanged, and so the guard it evaluates is the global
construct's (written as the case's guard tree, which the Rust side compares
with the guard troupe's owner evaluates).

Nothing here projects anything itself: the local programs are ZipperGen's.
"""

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

from zippergen.projection import project
from zippergen.syntax import (
    ActStmt,
    EmptyStmt,
    IfRecvStmt,
    IfStmt,
    Lifeline,
    LitExpr,
    MsgStmt,
    RecvStmt,
    SendStmt,
    SeqStmt,
    VarExpr,
    WhileRecvStmt,
    WhileStmt,
    canonical_construct_key,
    is_kappa_ctrl,
)

ACTIONS = ("bump", "think", "store", "ask", "fetch", "expr")


def py_item(item):
    """A payload item, argument or binding as DSL text."""
    if "var" in item:
        return item["var"]
    if "int" in item:
        return repr(item["int"])
    if "opaque" in item:
        return json.dumps(item["opaque"])
    if "discard" in item:
        return "_"
    raise ValueError(f"unknown item {item!r}")


def py_guard(e):
    """A guard as a fully parenthesised Python expression."""
    if "var" in e:
        return e["var"]
    if "int" in e:
        return repr(e["int"])
    if "not" in e:
        return f"(not {py_guard(e['not'])})"
    return f"({py_guard(e['l'])} {e['op']} {py_guard(e['r'])})"


def py_block(stmts, indent, out):
    pad = "    " * indent
    if not stmts:
        out.append(f"{pad}pass")
    for s in stmts:
        k = s["k"]
        if k == "msg":
            send = ", ".join(py_item(i) for i in s["send"])
            recv = ", ".join(py_item(i) for i in s["recv"])
            out.append(f"{pad}{s['from']}({send}) >> {s['to']}({recv})")
        elif k == "act":
            outs = [o if o is not None else "_" for o in s["outs"]]
            target = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
            args = ", ".join(py_item(i) for i in s["args"])
            out.append(f"{pad}{s['at']}: {target} = {s['action']}({args})")
        elif k in ("if", "while"):
            first, second = ("then", "else") if k == "if" else ("body", "exit")
            out.append(f"{pad}{k} {py_guard(s['guard'])} @ {s['owner']}:")
            py_block(s[first], indent + 1, out)
            out.append(f"{pad}else:")
            py_block(s[second], indent + 1, out)
        else:
            raise ValueError(f"not a core construct: {k}")


def module_source(case):
    """The case as a ZipperGen module: lifelines, actions, one workflow."""
    out = ["from zippergen.actions import pure", "from zippergen.builder import workflow",
           "from zippergen.syntax import Lifeline, Var", ""]
    for name in case["lifelines"]:
        out.append(f"{name} = Lifeline({name!r})")
    # `_` is a variable that is bound and never read: troupe's discard.
    out.append("_ = Var('_', int)")
    for a in ACTIONS:
        # Every action is pure here: projection treats every `act` alike,
        # whatever performs it.
        param = "str" if a == "expr" else "int"
        out += ["", "@pure", f"def {a}(x: {param}) -> int:", "    return 0"]
    first = case["lifelines"][0]
    out += ["", "@workflow", f"def random(n: int @ {first}) -> int:"]
    py_block(case["body"], 1, out)
    out.append(f"    return n @ {first}")
    return "\n".join(out) + "\n"


def flatten(stmt):
    if isinstance(stmt, EmptyStmt):
        return []
    if isinstance(stmt, SeqStmt):
        return flatten(stmt.first) + flatten(stmt.second)
    return [stmt]


def index_constructs(global_stmt, block, by_cond, keys, guards):
    """Pairs ZipperGen's global program with the case it was built from:
    each construct's condition object and content key, by statement id.
    Fails when the two do not have the same shape (a translation error)."""
    stmts = flatten(global_stmt)
    if len(stmts) != len(block):
        raise AssertionError(f"{len(block)} statements sent, ZipperGen built {len(stmts)}")
    for z, s in zip(stmts, block):
        want = {"msg": MsgStmt, "act": ActStmt, "if": IfStmt, "while": WhileStmt}[s["k"]]
        if not isinstance(z, want):
            raise AssertionError(f"statement {s['s']} is a {s['k']}, ZipperGen built {z!r}")
        if s["k"] in ("if", "while"):
            by_cond[id(z.condition)] = s["s"]
            guards[s["s"]] = s["guard"]
            keys.setdefault(canonical_construct_key(z), []).append(s["s"])
        if s["k"] == "if":
            index_constructs(z.branch_true, s["then"], by_cond, keys, guards)
            index_constructs(z.branch_false, s["else"], by_cond, keys, guards)
        elif s["k"] == "while":
            index_constructs(z.body, s["body"], by_cond, keys, guards)
            index_constructs(z.exit_body, s["exit"], by_cond, keys, guards)


def expr_text(e):
    if isinstance(e, VarExpr):
        return "v:" + e.var.name
    if isinstance(e, LitExpr):
        if isinstance(e.value, bool):
            raise AssertionError(f"a Bool literal in a data message: {e!r}")
        if isinstance(e.value, int):
            return f"i:{e.value}"
        if isinstance(e.value, str):
            return "x:" + e.value
    raise AssertionError(f"unexpected expression {e!r}")


def normal(stmt, by_cond, guards, tag_class):
    """A local program in the normal form (see the module docs)."""
    out = []
    for s in flatten(stmt):
        if isinstance(s, SendStmt):
            if len(s.payload) == 2 and is_kappa_ctrl(s.payload[1]):
                decision = s.payload[0]
                if not (isinstance(decision, LitExpr) and isinstance(decision.value, bool)):
                    raise AssertionError(f"a control send without a decision: {s!r}")
                out.append(["ctrl", decision.value, tag_class(s.payload[1]), s.receiver.name])
            else:
                out.append(["send", s.receiver.name, [expr_text(e) for e in s.payload]])
        elif isinstance(s, RecvStmt):
            out.append(["recv", s.sender.name, [expr_text(e) for e in s.bindings]])
        elif isinstance(s, ActStmt):
            out.append(["act", [v.name for v in s.outputs], s.action.name,
                        [expr_text(e) for e in s.inputs]])
        elif isinstance(s, IfStmt):
            sid = by_cond[id(s.condition)]
            out.append(["if", sid, guards[sid],
                        normal(s.branch_true, by_cond, guards, tag_class),
                        normal(s.branch_false, by_cond, guards, tag_class)])
        elif isinstance(s, WhileStmt):
            sid = by_cond[id(s.condition)]
            out.append(["while", sid, guards[sid],
                        normal(s.body, by_cond, guards, tag_class),
                        normal(s.exit_body, by_cond, guards, tag_class)])
        elif isinstance(s, IfRecvStmt):
            out.append(["branch", tag_class(s.bindings[1]), s.sender.name,
                        normal(s.branch_true, by_cond, guards, tag_class),
                        normal(s.branch_false, by_cond, guards, tag_class)])
        elif isinstance(s, WhileRecvStmt):
            out.append(["loop", tag_class(s.bindings[1]), s.sender.name,
                        normal(s.body, by_cond, guards, tag_class),
                        normal(s.exit_body, by_cond, guards, tag_class)])
        else:
            raise AssertionError(f"unexpected local statement {s!r}")
    return out


def project_case(case, workdir):
    name = f"case_{case['id']}"
    path = Path(workdir) / f"{name}.py"
    path.write_text(module_source(case))
    # A real file: the @workflow decorator reads the function's source.
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    wf = module.random
    by_cond, keys, guards = {}, {}, {}
    index_constructs(wf.body, case["body"], by_cond, keys, guards)
    classes = {str(s): min(ids) for ids in keys.values() for s in ids}
    by_key = {k: min(ids) for k, ids in keys.items()}

    def tag_class(tag):
        return by_key[tag.value.construct]

    locals_ = {
        l: normal(project(wf, Lifeline(l)), by_cond, guards, tag_class) for l in case["lifelines"]
    }
    del sys.modules[name]
    return {"id": case["id"], "locals": locals_, "classes": classes}


def main():
    cases = json.load(sys.stdin)["cases"]
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for case in cases:
            try:
                results.append(project_case(case, workdir))
            except Exception as e:  # reported per case, with the module it wrote
                source = module_source(case)
                results.append({"id": case["id"], "error": f"{type(e).__name__}: {e}\n{source}"})
    json.dump({"results": results}, sys.stdout)


if __name__ == "__main__":
    main()
