"""The tests' fakes, one of each: the Docker SDK client (docker.py) and the OpenAI-compatible server
(openai.py). A test that needs either uses these, never a copy of its own."""
