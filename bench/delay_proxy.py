#!/usr/bin/env python3
"""A TCP proxy that holds every chunk for RTT/2 in each direction, in order,
so an application round trip through it takes RTT longer: a stand-in for a
delayed path where the kernel has no netem and the lab no delay line.

It terminates TCP, so the client's TCP handshake and windows see the proxy,
not the delay: the smb driver's default call size (chosen from the handshake)
then picks the short-path size; give `--option io_size=...` to compare.

    ip netns exec cp-client python3 bench/delay_proxy.py 4450 198.18.0.1 445 10
    # then smb://127.0.0.1:4450/ram, or smbclient //127.0.0.1/ram -p 4450
"""
import asyncio
import sys
import time

LISTEN_PORT, HOST, PORT = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
RTT = float(sys.argv[4]) / 1000  # milliseconds on the command line


async def pipe(reader, writer):
    queue = asyncio.Queue()

    async def send():
        while True:
            due, data = await queue.get()
            if data is None:
                writer.close()
                return
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()

    sender = asyncio.ensure_future(send())
    while True:
        data = await reader.read(1 << 18)
        await queue.put((time.monotonic() + RTT / 2, data or None))
        if not data:
            break
    await sender


async def handle(client_reader, client_writer):
    server_reader, server_writer = await asyncio.open_connection(HOST, PORT)
    await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer),
                         return_exceptions=True)


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", LISTEN_PORT)
    print("ready", flush=True)
    await server.serve_forever()


asyncio.run(main())
