//! Output reporting behind one trait: local JSON sink.
