"""The bongard_accuracy Space: `hoi-bench evaluate bongard_accuracy` as a form, on uploaded files.
Its --references folder is uploaded as the episode files it holds.

The page is hoi_bench.space_app's; gradio comes from the Space's sdk_version
(locally: pip install -e '.[space]').
"""

from hoi_bench.space_app import launch

if __name__ == "__main__":
    launch(__file__, ["evaluate", "bongard_accuracy"], folders=["references"])
