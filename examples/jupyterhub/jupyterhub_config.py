# The hub's side (a fragment of jupyterhub_config.py): tell every student's server where the
# model server is, so notebooks can name just the model (`%%pal --model openai:default`), and keep
# the key, if the model server wants one, out of the notebooks.
import os

c = get_config()  # noqa: F821

c.Spawner.environment = {
    "PAL_JUPYTER_API_BASE": "http://model-server:8000/v1",
    # vLLM started with --api-key checks it on every request; the students' kernels send it.
    "PAL_JUPYTER_API_KEY": os.environ.get("CLASS_MODEL_KEY", ""),
}
