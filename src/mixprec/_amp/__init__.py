"""Automatic mixed precision (the graph rewrite of ``enable_mixed_precision_graph_rewrite``).

``lists`` maps TensorFlow's four op lists (and their environment overrides) onto the C
class table; ``state`` holds the switches (the API flag, ``tf.config.optimizer``'s
options, ``TF_ENABLE_AUTO_MIXED_PRECISION``) and turns autocast on or off in the core;
``rewrite`` is the public API's logic; ``graph_pass`` runs TensorFlow's colouring over a
function's ops and logs the summary. No arithmetic here: casts and the pass are C.
"""
