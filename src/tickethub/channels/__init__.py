"""Outside channels. Each one parses inbound traffic into service calls and delivers
outbound events through the durable delivery queue (``channels.worker``)."""
