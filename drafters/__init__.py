"""tracedraft ML library: traces, rendering, the DSpark drafter, training, speculative decoding, evaluation."""
