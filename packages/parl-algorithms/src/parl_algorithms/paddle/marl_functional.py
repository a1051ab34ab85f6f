"""Pure, shape-checked loss and target functions of the multi-agent algorithms (paddle).

Same contract as :mod:`parl_algorithms.paddle.functional`: tensors in, tensors out, no side effects, a
``ValueError`` naming the expected shapes when inputs do not fit, and each function cites the equation of
its paper. The other backend's module has the same names and is tested against this one on the same inputs.
Sections, one per algorithm: MADDPG, QMIX, MAPPO (with PopArt), COMA.
"""

from __future__ import annotations

import paddle  # noqa: F401


# ======================================================================================================
# MADDPG (Lowe et al. 2017, "Multi-Agent Actor-Critic for Mixed Cooperative-Competitive Environments")
# ======================================================================================================


# (end of MADDPG)


# ======================================================================================================
# QMIX (Rashid et al. 2018, "QMIX: Monotonic Value Function Factorisation for Deep Multi-Agent RL")
# ======================================================================================================


# (end of QMIX)


# ======================================================================================================
# MAPPO (Yu et al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent Games") and PopArt
# (van Hasselt et al. 2016, "Learning values across many orders of magnitude")
# ======================================================================================================


# (end of MAPPO)


# ======================================================================================================
# COMA (Foerster et al. 2018, "Counterfactual Multi-Agent Policy Gradients")
# ======================================================================================================


# (end of COMA)
