"""The smoke run's child side: the only code in the package that imports torch.

Each rank of `neuron-migrate smoke` is a `python -m neuron_migrate.smoke.child.bootstrap CONFIG`
process: it emulates the `neuron` device when no hardware is there (`emulate`, `device_module`,
`patches`, `amp`, `process_group`), records ops, collectives and parameters (`recorder`,
`hooks`, `replicas`, `flat`) and writes its report. The parent side (`smoke/runner.py` and the
modules that assemble and render the report) never imports this package; both sides share
`smoke/protocol.py` and `smoke/sites.py`, which import no torch.
"""
