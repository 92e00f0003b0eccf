"""Progress notifications from `troupe mcp serve`, seen by the official Python SDK (PyPI `mcp`).

Usage: python progress_client.py TROUPE   (in a project directory with steps.troupe)

Starts `TROUPE mcp serve steps.troupe --store db` over stdio, calls `steps`
(five effects of 0.2 s each) with a progress callback (the SDK then sends a
progressToken), and prints one JSON object: the result and the progress
values and messages received. Run by crates/troupe-cli/tests/mcp_stdio.rs.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(troupe):
    params = StdioServerParameters(
        command=troupe,
        args=["mcp", "serve", "steps.troupe", "--store", "db", "--deadline-ms", "60000"],
    )
    seen = {"progress": [], "messages": []}

    async def on_progress(progress, total, message):
        seen["progress"].append(progress)
        seen["messages"].append(message)

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), 30)
            done = await session.call_tool("steps", {"n": 5}, progress_callback=on_progress)
            seen["error"] = done.is_error
            seen["result"] = done.structured_content
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
