"""The check formats (text, JSON, JUnit, GitHub, Markdown, SARIF) under one registry (``formats``),
the words every format shares (``words``) and the rules' and settings' meanings (``meaning``)."""
