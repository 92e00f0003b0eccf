"""A client of `troupe mcp serve` over stdio, written with the official Python SDK (PyPI `mcp`).

Usage: python stdio_client.py TROUPE EXAMPLES STORE

Starts `TROUPE mcp serve EXAMPLES/counter.troupe EXAMPLES/local_approval.troupe
--store STORE --mock-externs` as its child process (as Claude Desktop, VS Code
and Cursor start servers), then: initialize, tools/list, tools/call of the
counter (a run that finishes), of the local approval (a run that waits on a
person), answer_task, and the run read back as resources. Prints one JSON
object with what it saw; exits non-zero (with the reason) on any mismatch.
Run by crates/troupe-cli/tests/mcp_stdio.rs.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client



def doc_of(result):
    """A tool result's document: its structured content, or (a workflow
    call's error result: an unfinished or failed run) its JSON text."""
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)

def check(cond, what):
    if not cond:
        raise SystemExit(f"python stdio client: {what}")


async def main(troupe, examples, store):
    params = StdioServerParameters(
        command=troupe,
        args=["mcp", "serve", f"{examples}/counter.troupe", f"{examples}/local_approval.troupe",
              "--store", store, "--mock-externs", "--deadline-ms", "20000"],
        env={"NO_COLOR": "1"},
    )
    seen = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await asyncio.wait_for(session.initialize(), 30)
            seen["server"] = init.server_info.name
            seen["protocol"] = init.protocol_version
            check(init.capabilities.tools is not None, "no tools capability")
            check(init.capabilities.resources is not None, "no resources capability")

            tools = {t.name: t for t in (await session.list_tools()).tools}
            seen["tools"] = sorted(tools)
            check(tools["counter"].input_schema["required"] == ["limit"], "counter schema")

            done = await session.call_tool("counter", {"limit": 5})
            check(not done.is_error, f"counter failed: {done}")
            check(done.structured_content == {"k": 5}, f"counter result {done.structured_content}")
            seen["counter"] = done.structured_content

            waiting = await session.call_tool("local_approval", {"request": "a new chair"})
            doc = doc_of(waiting)
            check(doc["status"] == "waiting", f"approval did not wait: {doc}")
            check(len(doc["tasks"]) == 1 and doc["tasks"][0]["kind"] == "confirm", f"tasks {doc}")
            run, task = doc["run"], doc["tasks"][0]["task"]
            seen["waiting"] = {"run": run, "task": task, "status": doc["status"]}

            listed = await session.call_tool("list_tasks", {})
            check([t["task"] for t in listed.structured_content["tasks"]] == [task], "list_tasks")

            wrong = await session.call_tool("answer_task", {"task": task, "answer": "perhaps"})
            check(wrong.is_error, "a confirm accepted a text")

            answered = await session.call_tool("answer_task", {"task": task, "answer": True, "by": "stdio"})
            check(not answered.is_error, f"answer failed: {answered}")
            seen["answered"] = {"status": answered.structured_content["status"],
                                "results": answered.structured_content.get("results")}

            run_id = run.removeprefix("run-")
            resources = [str(r.uri) for r in (await session.list_resources()).resources]
            seen["resources"] = resources
            body = json.loads((await session.read_resource(f"troupe://runs/{run_id}")).contents[0].text)
            seen["run"] = {"status": body["status"], "results": body.get("results")}
            chart = (await session.read_resource(f"troupe://runs/{run_id}/chart")).contents[0]
            seen["chart"] = {"mime": chart.mime_type, "first_line": chart.text.splitlines()[0]}
            trace = json.loads((await session.read_resource(f"troupe://runs/{run_id}/trace")).contents[0].text)
            seen["trace_events"] = len(trace)
            tasks = json.loads((await session.read_resource("troupe://tasks")).contents[0].text)
            seen["pending_after"] = len(tasks)
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
