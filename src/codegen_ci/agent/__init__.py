"""The model and its tools: the model adapter (the only `openai` import), the context
policy, the first prompt, the six tools, and the loop that runs one turn.

Takes a `Spec`, a `Worktree` and a conversation; returns when the model answers without tool
calls or a limit is reached. It never validates and never publishes.

The rooms: `model.py` (the adapter, its retries, usage fields and prices), `tools.py` (the six
tools, their schemas and bounds), `context.py` (what the model is sent, and compaction),
`prompt.py` (the first messages, the maintainers' instructions, the briefing), `budget.py`
(the whole-run limits), `conversation.py` (the transcript, and loading it on resume) and
`loop.py` (the agent loop).
"""
