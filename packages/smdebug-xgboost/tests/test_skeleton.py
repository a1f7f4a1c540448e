"""smdebug-xgboost: packaging, discovery, and an entry-point module that never imports xgboost."""

from smdebug.core.plugins.contract import FrameworkPluginContract


class TestPluginContract(FrameworkPluginContract):
    DIST = "smdebug-xgboost"
    EP_NAME = "xgboost"
    MODULE = "smdebug.xgboost"
    FRAMEWORK_IMPORT = "xgboost"
    TEST_FILE = __file__
