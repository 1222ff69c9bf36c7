"""The main job's demo (`python -m qplugin`): a procedurally generated image set (data.py), a
small ResNet-style CNN (model.py), the train -> calibrate -> convert -> compare -> save pipeline
(run.py), and the op-level agreement report (`python -m qplugin check`, check.py)."""
