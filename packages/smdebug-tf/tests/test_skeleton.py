"""smdebug-tf: packaging, discovery, and an entry-point module that never imports tensorflow."""

from smdebug.core.plugins.contract import FrameworkPluginContract


class TestPluginContract(FrameworkPluginContract):
    DIST = "smdebug-tf"
    EP_NAME = "tensorflow"
    MODULE = "smdebug.tensorflow"
    FRAMEWORK_IMPORT = "tensorflow"
    TEST_FILE = __file__
