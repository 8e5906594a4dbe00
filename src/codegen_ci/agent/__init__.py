"""The model and its tools: the model adapter (the only `openai` import), the context
policy, the first prompt, the six tools, and the loop that runs one turn.

Takes a `Spec`, a `Worktree` and a conversation; returns when the model answers without tool
calls or a limit is reached. It never validates and never publishes.
"""
