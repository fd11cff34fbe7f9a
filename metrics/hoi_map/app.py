"""Gradio widget of the hoi_map metric, run by its Hugging Face Space (``python app.py``).

Only the Space runs this file: gradio is not a dependency of hoi-bench (the Space's ``sdk_version`` provides it).
"""

from pathlib import Path

import evaluate
from evaluate.utils import launch_gradio_widget

if __name__ == "__main__":
    # the module file by name: on the Space this folder is called "app", not "hoi_map"
    launch_gradio_widget(evaluate.load(str(Path(__file__).resolve().with_name("hoi_map.py"))))
