"""A long workflow call retried with its idempotency key, and its result
fetched with `get_run`, by the official Python SDK (PyPI `mcp`).

Usage: python retry_client.py TROUPE KEY   (in a project directory with steps.troupe)

Starts `TROUPE mcp serve steps.troupe --store db --deadline-ms 300` over
stdio. Calls `steps` (twelve effects of 0.2 s each, longer than the
deadline) with the idempotency key KEY as an argument; calls again with
the same key as an argument and in `_meta`; calls `get_run` until the run is
done; and once more with the key, which then answers with the results.
Prints one JSON object with what it saw. Run by
crates/troupe-cli/tests/mcp_stdio.rs.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client



def doc(result):
    """A tool result's document: its structured content, or (a workflow
    call's error result: an unfinished or failed run) its JSON text."""
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)

async def main(troupe, key):
    params = StdioServerParameters(
        command=troupe,
        args=["mcp", "serve", "steps.troupe", "--store", "db", "--deadline-ms", "300"],
    )
    seen = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), 30)
            tools = {t.name: t for t in (await session.list_tools()).tools}
            seen["get_run_read_only"] = tools["get_run"].annotations.read_only_hint
            seen["key_in_schema"] = "idempotency_key" in tools["steps"].input_schema["properties"]
            first = await session.call_tool("steps", {"n": 12, "idempotency_key": key})
            seen["first"] = doc(first)
            again = await session.call_tool("steps", {"n": 12, "idempotency_key": key})
            seen["again"] = doc(again)
            by_meta = await session.call_tool("steps", {"n": 12}, meta={"idempotencyKey": key})
            seen["by_meta"] = doc(by_meta)
            run = doc(first)["run"]
            polls = 0
            while True:
                polls += 1
                got = await session.call_tool("get_run", {"run": run})
                if got.structured_content["status"] in ("done", "failed") or polls > 200:
                    break
            seen["get_run"] = got.structured_content
            last = await session.call_tool("steps", {"n": 12, "idempotency_key": key})
            seen["last"] = {"error": last.is_error, "result": last.structured_content}
            unknown = await session.call_tool("get_run", {"run": "run-99"})
            seen["unknown_is_error"] = unknown.is_error
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
