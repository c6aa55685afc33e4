"""What each platform sends to its hook, as its documentation shows it: one module per
platform, used by the per-platform tests and by the chat transport contract's kits
(``tests/channels/chat_kits.py``)."""
