"""People answered in their own MCP client: the official Python SDK (PyPI
`mcp`) on protocol revision 2026-07-28, with an elicitation callback.

Usage: python elicit_client.py TROUPE EXAMPLES   (in a project directory)

Starts `TROUPE mcp serve counter.troupe local_approval.troupe --store db`
over stdio, three times:
- a client that answers every question with yes: `local_approval` asks for
  its approval as an input-required result, the SDK asks the callback and
  retries, and the call returns the run's results;
- a client that declines: the call returns the run waiting, its task
  pending;
- a client without elicitation: the call returns the run waiting;
- an older client (2025-11-25, a session) that answers yes: it is asked
  with `elicitation/create` during the call, which returns the results.
Prints one JSON object with what it saw. Run by
crates/troupe-cli/tests/mcp_stdio.rs.
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters
from mcp import types



def doc(result):
    """A tool result's document: its structured content, or (a workflow
    call's error result: an unfinished or failed run) its JSON text."""
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)

async def main(troupe, examples):
    params = StdioServerParameters(
        command=troupe,
        args=[
            "mcp", "serve",
            os.path.join(examples, "counter.troupe"),
            os.path.join(examples, "local_approval.troupe"),
            "--store", "db", "--mock-externs", "--deadline-ms", "2000",
        ],
    )
    seen = {"asked": []}

    async def yes(context, params):
        seen["asked"].append(params.model_dump(mode="json", by_alias=True))
        return types.ElicitResult(action="accept", content={"answer": True})

    async def no(context, params):
        return types.ElicitResult(action="decline")

    async with Client(params, mode="2026-07-28", elicitation_callback=yes) as c:
        seen["protocol"] = c.protocol_version
        counted = await c.call_tool("counter", {"limit": 3})
        seen["counter"] = counted.structured_content
        approved = await c.call_tool("local_approval", {"request": "a lamp"})
        seen["approved"] = {"error": approved.is_error, "result": approved.structured_content}

    async with Client(params, mode="2026-07-28", elicitation_callback=no) as c:
        declined = await c.call_tool("local_approval", {"request": "a boat"})
        seen["declined"] = doc(declined)

    async with Client(params, mode="2026-07-28") as c:
        plain = await c.call_tool("local_approval", {"request": "a car"})
        seen["plain"] = doc(plain)

    async with Client(params, mode="legacy", elicitation_callback=yes) as c:
        seen["legacy_protocol"] = c.protocol_version
        legacy = await c.call_tool("local_approval", {"request": "a kite"})
        seen["legacy"] = {"error": legacy.is_error, "result": legacy.structured_content}
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
