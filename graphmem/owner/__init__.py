"""One process owns a store and serves its verbs over a Unix socket to the same user.

server: the owner (socket server, idle exit, warm-up, background ingest);
client: `RemoteMemory` and `open_memory` (start or reach the owner), the hooks' single-shot ask;
codec: how arguments and results cross the socket.
"""
