"""Helpers the repository's tests and benchmarks share (not the plugin contract, which is
``smdebug.core.testing``, shipped with smdebug-core for plugin authors).

- :mod:`smdebug_test_support.s3`: :class:`~smdebug_test_support.s3.MotoServer`, a real moto server on loopback
  behind a TCP forwarder that can be taken down or slowed (outages, latency), and ``apply_env``/``restore_env``.
- :mod:`smdebug_test_support.horovod`: :func:`~smdebug_test_support.horovod.run_horovod_job`, a real
  ``horovodrun`` job on this machine with each worker's JSON report.
- :mod:`smdebug_test_support.threads`: :func:`~smdebug_test_support.threads.one_torch_thread`.
"""
