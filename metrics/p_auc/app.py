"""The p_auc Space: `hoi-bench evaluate p_auc` as a form, on uploaded files.

The page is hoi_bench.space_app's; gradio comes from the Space's sdk_version
(locally: pip install -e '.[space]').
"""

from hoi_bench.space_app import launch

if __name__ == "__main__":
    launch(__file__, ["evaluate", "p_auc"])
