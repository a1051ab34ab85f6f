"""Test-only ``smac``: ``smac.env.StarCraft2Env``'s interface on Level-Based Foraging, for PARL's QMIX example.

StarCraft II cannot be installed here. ``smac.env.StarCraft2Env`` serves the LBF env named by
``SMAC_SHIM_ENV`` (default ``Foraging-8x8-2p-2f-coop-v3``) through ``parl.env.make_multiagent_env``.
"""
