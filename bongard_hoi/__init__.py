"""Bongard-HOI: 2-way 6-shot episodes of human-object interaction concepts, an episode sampler and accuracy."""
