"""HICO-DET-SG and V-COCO-SG: systematic-generalization splits of HICO-DET and V-COCO, as Hugging Face datasets."""
