"""SportsHHI: video human-human interaction detection keyframes with temporal context, HHI mAP, Recall@K."""
