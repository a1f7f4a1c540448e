"""Hook specifications: everything a smdebug plugin can implement.

A plugin is a module (or any object) whose functions are decorated with
:data:`smdebug.core.plugins.hookimpl` and named like the specs below. It may implement any subset.
pluggy checks the implementations against these signatures when the plugin is registered: an
implementation may accept fewer arguments than the spec, never more.

Plugins are found through two entry-point groups:

* ``smdebug.frameworks``: one plugin per framework (``pytorch = "smdebug.pytorch.plugin"``);
* ``smdebug.rules``: rule packs (``builtin = "smdebug.rules.plugin"``).

The entry-point module must import nothing heavy: declare ``FRAMEWORK_IMPORT = "torch"`` (the
framework's top-level import name) and import the framework inside hook bodies only. smdebug skips the
plugin, quietly, when that module cannot be found.

This module only declares; the types used in annotations are imported for type checkers only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, List, Optional

from smdebug.core.plugins.markers import hookspec

if TYPE_CHECKING:
    import numpy as np

    from smdebug.core.hook import BaseHook
    from smdebug.core.modes import ModeKeys
    from smdebug.core.plugins.info import CommandInfo, FrameworkInfo, RuleInfo, WorkerInfo


# --------------------------------------------------------------------------------------------------
# registration
# --------------------------------------------------------------------------------------------------
@hookspec
def smdebug_register_frameworks(register: Callable[[FrameworkInfo], None]) -> None:
    """Declare the frameworks this plugin adapts.

    Called once after discovery (and again whenever plugins are registered or unregistered).

    :param register: call it with one :class:`~smdebug.core.plugins.FrameworkInfo` per framework.
        A name that another plugin registered first is rejected with a warning; the first stays.

    Use in plugins::

        FRAMEWORK_IMPORT = "torch"

        @hookimpl
        def smdebug_register_frameworks(register):
            register(FrameworkInfo(name="pytorch", module="smdebug.pytorch", import_name="torch",
                                   hook_classes={"Hook": "smdebug.pytorch.hook:Hook"}))
    """


@hookspec
def smdebug_register_rules(register: Callable[[RuleInfo], None]) -> None:
    """Declare the rules of a rule pack.

    :param register: call it with one :class:`~smdebug.core.plugins.RuleInfo` per rule. Rule classes are
        named by ``"module:Class"`` strings and imported only when a rule is used. A name that another
        pack registered first is rejected with a warning; the first stays.

    Use in plugins::

        @hookimpl
        def smdebug_register_rules(register):
            register(RuleInfo(name="LossNotDecreasing", target="my_rules.loss:LossNotDecreasing",
                              pack="my-rules"))
    """


# --------------------------------------------------------------------------------------------------
# conversions and runtime queries
# --------------------------------------------------------------------------------------------------
@hookspec
def smdebug_register_commands(register: Callable[[CommandInfo], None]) -> None:
    """Add subcommands to the ``smdebug`` command line: call ``register(CommandInfo(...))`` for each.

    A command is named with the module that implements it (``add_arguments(parser)``, ``run(args) -> int``),
    which is imported only when that command is used, so ``smdebug --help`` lists every plugin's commands
    without importing them, and a plugin whose module is broken fails its own command only, with a message
    that names the plugin. A name smdebug-core or an earlier plugin already uses is ignored, with a warning.

    :param register: call it once per command with a
        :class:`~smdebug.core.plugins.info.CommandInfo`.

    Use in plugins::

        @hookimpl
        def smdebug_register_commands(register):
            register(CommandInfo("rules", "smdebug.rules.command", "List, describe and run rules over a run."))
    """


@hookspec(firstresult=True)
def smdebug_tensor_to_numpy(value: Any) -> Optional[np.ndarray]:
    """Convert a framework tensor to a numpy array.

    Called for values that are not already numpy arrays, numpy scalars, Python scalars or lists. The
    first plugin to return something other than ``None`` wins.

    :param value: the object to convert; may belong to any framework.
    :return: a numpy array with the tensor's data (detached, on the host), or ``None`` if ``value`` is
        not a type this plugin knows.

    Use in plugins (import the framework inside the function, never at module level)::

        @hookimpl
        def smdebug_tensor_to_numpy(value):
            import sys
            torch = sys.modules.get("torch")
            if torch is None or not isinstance(value, torch.Tensor):
                return None
            return value.detach().cpu().numpy()
    """


@hookspec(firstresult=True)
def smdebug_detect_worker(framework: Optional[str]) -> Optional[WorkerInfo]:
    """Say which worker this process is, when this plugin's distributed runtime is running.

    :param framework: the name of the framework whose hook asks (``"pytorch"``), or ``None`` when
        the question is framework-neutral. A plugin may answer for other frameworks too (a Horovod
        adapter answers for all of them).
    :return: a :class:`~smdebug.core.plugins.WorkerInfo` when a distributed runtime is initialised in this
        process, else ``None``. The first answer wins; with no answer smdebug assumes a single worker
        (``WorkerInfo(0, 1, "worker_0")``).

    Use in plugins::

        @hookimpl
        def smdebug_detect_worker(framework):
            import sys
            dist = getattr(sys.modules.get("torch"), "distributed", None)
            if dist is None or not dist.is_available() or not dist.is_initialized():
                return None
            return WorkerInfo(rank=dist.get_rank(), size=dist.get_world_size())
    """


@hookspec
def smdebug_recommended_collections(framework: str) -> Optional[List[str]]:
    """Name the collections a hook must save for a rule pack's recommended rules to have their data.

    Asked by ``Hook.recommended(out_dir)`` (:meth:`smdebug.core.hook.BaseHook.recommended`), which saves the
    union of every pack's answer on one schedule (:meth:`smdebug.core.save_config.SaveConfig.tapered`).

    :param framework: the framework of the hook being configured (``"pytorch"``, ``"tensorflow"``,
        ``"mxnet"``, ``"xgboost"``).
    :return: collection names (built-in ones such as ``"gradients"``, ``"relu_activations"``), or ``None``
        when this pack recommends nothing for ``framework``.

    Use in plugins::

        @hookimpl
        def smdebug_recommended_collections(framework):
            return ["losses", "gradients"] if framework == "pytorch" else None
    """


# --------------------------------------------------------------------------------------------------
# hook lifecycle notifications (results are ignored; an exception is logged, never raised into training)
# --------------------------------------------------------------------------------------------------
@hookspec
def smdebug_hook_created(hook: BaseHook) -> None:
    """A hook was constructed.

    Only sent once plugins have been discovered (the first step of any hook triggers discovery).

    :param hook: the new hook; its configuration is complete, nothing has been written yet.
    """


@hookspec
def smdebug_step_end(hook: BaseHook, step: int, mode: ModeKeys, mode_step: int) -> None:
    """A hook finished a step.

    :param hook: the hook.
    :param step: the global step that just ended.
    :param mode: the mode the step ran in.
    :param mode_step: the step's number within ``mode``.
    """


@hookspec
def smdebug_hook_closed(hook: BaseHook) -> None:
    """A hook was closed: everything it recorded has been written (or has failed).

    :param hook: the closed hook.
    """
