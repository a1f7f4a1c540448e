"""Legacy module (smdebug 1.0.x's ``smdebug.tensorflow.constants``).

``TF_DEFAULT_SAVED_COLLECTIONS``: the collections a TensorFlow hook saves when the user names none
(the hooks' ``default_include_collections`` come from here). Importing it does not import TensorFlow.
"""

from smdebug.core.collection import CollectionKeys

TF_DEFAULT_SAVED_COLLECTIONS = [CollectionKeys.METRICS, CollectionKeys.LOSSES, CollectionKeys.SM_METRICS]
