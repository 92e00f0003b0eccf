"""A client of `troupe mcp serve` written with the official Python SDK (PyPI `mcp`).

Usage: python serve_client.py URL
Connects over Streamable HTTP to URL, lists the tools and resources, runs the
counter workflow, starts the local approval workflow (which waits on a
person), answers its task, and reads the run back as resources. Prints one
JSON object with what it saw; exits non-zero (with the reason) on any
mismatch. Run by crates/troupe-mcp/tests/serve.rs.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client



def doc_of(result):
    """A tool result's document: its structured content, or (a workflow
    call's error result: an unfinished or failed run) its JSON text."""
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)

def check(cond, what):
    if not cond:
        raise SystemExit(f"python client: {what}")


async def main(url):
    seen = {}
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            seen["server"] = init.server_info.name
            seen["protocol"] = init.protocol_version

            tools = {t.name: t for t in (await session.list_tools()).tools}
            seen["tools"] = sorted(tools)
            for name in ("counter", "local_approval", "answer_task", "list_tasks"):
                check(name in tools, f"no tool {name}: {sorted(tools)}")
            check(tools["counter"].input_schema["required"] == ["limit"], "counter schema")
            check(tools["counter"].input_schema["properties"]["limit"]["type"] == "integer",
                  "counter limit is not an integer")
            check("Ping and Pong" in (tools["counter"].description or ""), "counter description")

            done = await session.call_tool("counter", {"limit": 4})
            check(not done.is_error, f"counter failed: {done}")
            check(done.structured_content == {"k": 4}, f"counter result {done.structured_content}")
            check(json.loads(done.content[0].text) == {"k": 4}, "counter text content")
            seen["counter"] = done.structured_content

            bad = await session.call_tool("counter", {"limit": "many"})
            check(bad.is_error, "a bad input was accepted")

            waiting = await session.call_tool("local_approval", {"request": "buy a plant"})
            doc = doc_of(waiting)
            check(doc["status"] == "waiting", f"approval did not wait: {doc}")
            check(len(doc["tasks"]) == 1 and doc["tasks"][0]["kind"] == "confirm", f"tasks {doc}")
            run, task = doc["run"], doc["tasks"][0]["task"]
            seen["waiting"] = {"run": run, "task": task}

            listed = await session.call_tool("list_tasks", {"run": run})
            check([t["task"] for t in listed.structured_content["tasks"]] == [task], "list_tasks")

            wrong = await session.call_tool("answer_task", {"task": task, "answer": "maybe"})
            check(wrong.is_error, "a confirm accepted a text")

            answered = await session.call_tool("answer_task", {"task": task, "answer": True, "by": "python"})
            check(not answered.is_error, f"answer failed: {answered}")
            check(answered.structured_content["status"] == "done", f"after the answer: {answered.structured_content}")
            check(answered.structured_content["results"] == {"approved": True}, "approved")

            run_id = run.removeprefix("run-")
            res = await session.read_resource(f"troupe://runs/{run_id}")
            body = json.loads(res.contents[0].text)
            check(body["status"] == "done" and body["results"] == {"approved": True}, f"run {body}")
            seen["run"] = {"status": body["status"], "results": body["results"]}

            chart = await session.read_resource(f"troupe://runs/{run_id}/chart")
            check(chart.contents[0].mime_type == "text/x-mermaid", "chart mime type")
            check(chart.contents[0].text.startswith("sequenceDiagram"), "chart text")
            check("Approver" in chart.contents[0].text, "chart lifelines")

            trace = await session.read_resource(f"troupe://runs/{run_id}/trace")
            check(len(json.loads(trace.contents[0].text)) > 0, "empty trace")

            resources = [str(r.uri) for r in (await session.list_resources()).resources]
            check("troupe://runs" in resources and f"troupe://runs/{run_id}" in resources,
                  f"resources {resources}")
            templates = [t.uri_template for t in (await session.list_resource_templates()).resource_templates]
            check("troupe://runs/{id}/chart" in templates, f"templates {templates}")
            seen["resources"] = len(resources)
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
