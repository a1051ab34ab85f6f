"""PARL 2.x's own MAPPO code runs unchanged on this project: benchmark/torch/mappo's model (SimpleModel, Actor,
Critic), agent (SimpleAgent) and buffer (SeparatedReplayBuffer), copied verbatim from PARL 2.2.1 (each section names
its source file; only the imports are gathered at the top), driven with parl.algorithms.MAPPO by train.py's loop on
mpe2's simple_spread_v3 (N=3, local_ratio=0) in place of the MAPPO repo's MPE: the one replaced piece is the env
(``PARLVectorEnv`` below has the interface of PARL's ``env_wrappers.VectorEnv``). PARL's MAPPO algorithm itself
(parl/algorithms/torch/mappo.py, verbatim as ``PARLMAPPO`` / ``PARLPopArt``) is the reference of a same-update test."""

# ruff: noqa
import argparse
import math
import os
import sys
import time
from itertools import chain

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

import parl
from parl.utils import logger, summary

import mpe2  # noqa: E402, F401 (parl-core[marl]; missing fails, never skips)
parl.set_backend("torch")  # PARL 2.x torch code; with paddle installed too, PARL's users export PARL_BACKEND=torch


# ---- PARL 2.2.1 parl/algorithms/torch/mappo.py, verbatim (imports gathered above; renamed below) ----



class MAPPO(parl.Algorithm):
    def __init__(self,
                 model,
                 clip_param,
                 value_loss_coef,
                 entropy_coef,
                 initial_lr,
                 huber_delta,
                 eps=None,
                 max_grad_norm=None,
                 use_popart=True,
                 use_value_active_masks=True):
        """  MAPPO algorithm

        Args:
            model (parl.Model): model that contains both value network and policy network
            clip_param (float): the clipping strength for value loss clipping
            value_loss_coef (float): the coefficient for value loss
            entropy_coef (float): the coefficient for entropy
            initial_lr (float): initial learning rate.
            huber_delta (float): coefficience of huber loss
            eps (None or float): epsilon for Adam optimizer
            max_grad_norm (float): threshold for grad norm clipping
            use_popart (bool): whether to use PopArt to normalize rewards
            use_value_active_masks (bool): whether to mask useless data in value loss
        """
        self.model = model
        self.device = torch.device("cuda:0" if torch.cuda.
                                   is_available() else "cpu")
        self.model.to(self.device)
        self.multi_discrete = self.model.actor.multi_discrete
        self.tpdv = dict(dtype=torch.float32, device=self.device)

        self.clip_param = clip_param
        self.value_loss_coef = value_loss_coef
        self.lr = initial_lr
        self.huber_delta = huber_delta
        self.eps = eps
        self.entropy_coef = entropy_coef
        self.max_grad_norm = max_grad_norm
        self._use_popart = use_popart
        self._use_value_active_masks = use_value_active_masks

        if self._use_popart:
            self.value_normalizer = PopArt(self.model.critic.v_out.weight,
                                           self.model.critic.v_out.bias)
        else:
            self.value_normalizer = None

        self.actor_optimizer = torch.optim.Adam(
            self.model.actor.parameters(), lr=self.lr, eps=self.eps)
        self.critic_optimizer = torch.optim.Adam(
            self.model.critic.parameters(), lr=self.lr, eps=self.eps)

    def sample(self, cent_obs, obs, deterministic=False):
        """ Sample action from parameterized policy
        """
        policy = self.model.policy(obs)

        if not self.multi_discrete:
            action_dis = Categorical(logits=policy)
            if deterministic:
                actions = action_dis.probs.argmax(dim=-1, keepdim=True)
            else:
                actions = action_dis.sample().unsqueeze(-1)
            action_log_probs = action_dis.log_prob(actions.squeeze(-1)).view(
                actions.size(0), -1).sum(-1).unsqueeze(-1)
        else:
            actions = []
            action_log_probs = []
            for i in range(len(self.model.act_dim)):
                action_dis = Categorical(logits=policy[i])
                if deterministic:
                    action = action_dis.probs.argmax(dim=-1, keepdim=True)
                else:
                    action = action_dis.sample().unsqueeze(-1)
                action_log_prob = action_dis.log_prob(action.squeeze(-1)).view(
                    action.size(0), -1).sum(-1).unsqueeze(-1)
                actions.append(action)
                action_log_probs.append(action_log_prob)
            actions = torch.cat(actions, -1)
            action_log_probs = torch.cat(action_log_probs, -1)

        values = self.model.value(cent_obs)
        return values, actions, action_log_probs

    def learn(self,
              share_obs_batch,
              obs_batch,
              actions_batch,
              value_preds_batch,
              return_batch,
              old_action_log_probs_batch,
              adv_targ,
              active_masks_batch=None):
        """ update the value network and policy network parameters.
        """
        policy = self.model.policy(obs_batch)
        if not self.multi_discrete:
            action_dis = Categorical(logits=policy)
            action_log_probs = action_dis.log_prob(
                actions_batch.squeeze(-1)).view(actions_batch.size(0),
                                                -1).sum(-1).unsqueeze(-1)
            if active_masks_batch is not None:
                dist_entropy = (action_dis.entropy() * active_masks_batch.
                                squeeze(-1)).sum() / active_masks_batch.sum()
            else:
                dist_entropy = action_dis.entropy().mean()
        else:
            actions_batch = torch.transpose(actions_batch, 0, 1)
            action_log_probs = []
            dist_entropy = []

            for i in range(len(self.model.act_dim)):
                action_dis = Categorical(logits=policy[i])
                action_log_probs.append(
                    action_dis.log_prob(actions_batch[i].squeeze(-1)).view(
                        actions_batch[i].size(0), -1).sum(-1).unsqueeze(-1))
                if active_masks_batch is not None:
                    dist_entropy.append(
                        (action_dis.entropy() * active_masks_batch.squeeze(-1)
                         ).sum() / active_masks_batch.sum())
                else:
                    dist_entropy.append(action_dis.entropy().mean())
            action_log_probs = torch.cat(action_log_probs, -1)
            dist_entropy = sum(dist_entropy) / len(dist_entropy)

        values = self.model.value(share_obs_batch)

        # actor update
        imp_weights = torch.exp(action_log_probs - old_action_log_probs_batch)

        surr1 = imp_weights * adv_targ
        surr2 = torch.clamp(imp_weights, 1.0 - self.clip_param,
                            1.0 + self.clip_param) * adv_targ

        if active_masks_batch is not None:
            policy_action_loss = (
                -torch.sum(torch.min(surr1, surr2), dim=-1, keepdim=True) *
                active_masks_batch).sum() / active_masks_batch.sum()
        else:
            policy_action_loss = -torch.sum(
                torch.min(surr1, surr2), dim=-1, keepdim=True).mean()

        policy_loss = policy_action_loss
        self.actor_optimizer.zero_grad()
        (policy_loss - dist_entropy * self.entropy_coef).backward()
        nn.utils.clip_grad_norm_(self.model.actor.parameters(),
                                 self.max_grad_norm)
        self.actor_optimizer.step()

        # critic update
        value_loss = self.cal_value_loss(values, value_preds_batch,
                                         return_batch, active_masks_batch)
        self.critic_optimizer.zero_grad()
        (value_loss * self.value_loss_coef).backward()
        nn.utils.clip_grad_norm_(self.model.critic.parameters(),
                                 self.max_grad_norm)
        self.critic_optimizer.step()

        return value_loss, policy_loss, dist_entropy

    def cal_value_loss(self,
                       values,
                       value_preds_batch,
                       return_batch,
                       active_masks_batch=None):
        """ Calculate value function loss.
        """
        value_pred_clipped = value_preds_batch + (
            values - value_preds_batch).clamp(-self.clip_param,
                                              self.clip_param)

        if self._use_popart:
            self.value_normalizer.update(return_batch)
            error_clipped = self.value_normalizer.normalize(
                return_batch) - value_pred_clipped
            error_original = self.value_normalizer.normalize(
                return_batch) - values
        else:
            error_clipped = return_batch - value_pred_clipped
            error_original = return_batch - values

        value_loss_clipped = huber_loss(error_clipped, self.huber_delta)
        value_loss_original = huber_loss(error_original, self.huber_delta)

        value_loss = torch.max(value_loss_original, value_loss_clipped)

        if self._use_value_active_masks:
            value_loss = (value_loss *
                          active_masks_batch).sum() / active_masks_batch.sum()
        else:
            value_loss = value_loss.mean()

        return value_loss

    def value(self, cent_obs):
        """ Predict value from parameterized value function
        """
        values = self.model.value(cent_obs)
        return values


class PopArt(torch.nn.Module):
    def __init__(self, weight, bias, norm_axes=1, beta=0.99999, epsilon=1e-5):
        """  PopArt layer use running mean and std to normalize rewards.
             The PopArt code is mainly referenced and copied from https://github.com/marlbenchmark/on-policy/blob/main/onpolicy/algorithms/utils/popart.py

        Args:
            weight (Parameter): output layer weight of critic net
            bias (Parameter): output layer bias of critic net
            norm_axes (float): the number of groups to separate the channels into
            beta (float): the fixed decay rate determining the horizon used to compute the statistics
            epsilon (float): the epsilon value to use to avoid division by zero
        """
        super(PopArt, self).__init__()
        self.beta = beta
        self.epsilon = epsilon
        self.norm_axes = norm_axes
        self.tpdv = dict(
            dtype=torch.float32,
            device=torch.device("cuda:0" if torch.cuda.
                                is_available() else "cpu"))

        self.weight = weight
        self.bias = bias
        output_shape = 1

        self.stddev = nn.Parameter(
            torch.ones(output_shape), requires_grad=False).to(**self.tpdv)
        self.mean = nn.Parameter(
            torch.zeros(output_shape), requires_grad=False).to(**self.tpdv)
        self.mean_sq = nn.Parameter(
            torch.zeros(output_shape), requires_grad=False).to(**self.tpdv)
        self.debiasing_term = nn.Parameter(
            torch.tensor(0.0), requires_grad=False).to(**self.tpdv)

        self.reset_parameters()

    def reset_parameters(self):
        self.mean.zero_()
        self.mean_sq.zero_()
        self.debiasing_term.zero_()

    @torch.no_grad()
    def update(self, input_vector):
        if type(input_vector) == np.ndarray:
            input_vector = torch.from_numpy(input_vector)
        input_vector = input_vector.to(**self.tpdv)

        old_mean, old_var = self.debiased_mean_var()
        old_stddev = torch.sqrt(old_var)

        batch_mean = input_vector.mean(dim=tuple(range(self.norm_axes)))
        batch_sq_mean = (input_vector
                         **2).mean(dim=tuple(range(self.norm_axes)))

        self.mean.mul_(self.beta).add_(batch_mean * (1.0 - self.beta))
        self.mean_sq.mul_(self.beta).add_(batch_sq_mean * (1.0 - self.beta))
        self.debiasing_term.mul_(self.beta).add_(1.0 * (1.0 - self.beta))

        new_mean, new_var = self.debiased_mean_var()
        new_stddev = torch.sqrt(new_var)

        self.weight.data = self.weight * old_stddev / new_stddev
        self.bias.data = (
            old_stddev * self.bias + old_mean - new_mean) / new_stddev

    def debiased_mean_var(self):
        debiased_mean = self.mean / self.debiasing_term.clamp(min=self.epsilon)
        debiased_mean_sq = self.mean_sq / self.debiasing_term.clamp(
            min=self.epsilon)
        debiased_var = (debiased_mean_sq - debiased_mean**2).clamp(min=1e-2)
        return debiased_mean, debiased_var

    def normalize(self, input_vector):
        if type(input_vector) == np.ndarray:
            input_vector = torch.from_numpy(input_vector)
        input_vector = input_vector.to(**self.tpdv)
        mean, var = self.debiased_mean_var()
        out = (input_vector - mean[(None, ) * self.norm_axes]
               ) / torch.sqrt(var)[(None, ) * self.norm_axes]
        return out

    def denormalize(self, input_vector):
        if type(input_vector) == np.ndarray:
            input_vector = torch.from_numpy(input_vector)
        input_vector = input_vector.to(**self.tpdv)
        mean, var = self.debiased_mean_var()
        out = input_vector * torch.sqrt(var)[(None, ) * self.norm_axes] + mean[
            (None, ) * self.norm_axes]
        out = out.cpu().numpy()
        return out


def huber_loss(e, d):
    """ Huber loss function
    """
    a = (abs(e) <= d).float()
    b = (e > d).float()
    return a * e**2 / 2 + b * d * (abs(e) - d / 2)

PARLMAPPO, PARLPopArt, parl_huber_loss = MAPPO, PopArt, huber_loss
from parl.algorithms import MAPPO  # this project's, under the name PARL's train.py imports
from parl.algorithms import PopArt as OurPopArt  # (PARL's PopArt keeps its name: its methods call super(PopArt))


# ---- PARL 2.2.1 benchmark/torch/mappo/simple_model.py, verbatim (imports gathered above) ----


class SimpleModel(parl.Model):
    def __init__(self, obs_dim, cent_obs_dim, act_dim):
        super(SimpleModel, self).__init__()
        self.act_dim = act_dim

        self.actor = Actor(obs_dim, self.act_dim)
        self.critic = Critic(cent_obs_dim)

    def policy(self, obs):
        actions = self.actor(obs)
        return actions

    def value(self, cent_obs):
        values = self.critic(cent_obs)
        return values


class Actor(parl.Model):
    def __init__(self, obs_dim, act_dim):
        super(Actor, self).__init__()
        self.multi_discrete = False
        self.ln1 = nn.LayerNorm(obs_dim)
        self.ln2 = nn.LayerNorm(64)
        self.ln3 = nn.LayerNorm(64)
        self.fc1 = nn.Linear(obs_dim, 64)
        self.fc2 = nn.Linear(64, 64)

        if isinstance(act_dim, int):
            self.fc3 = nn.Linear(64, act_dim)
        else:
            self.multi_discrete = True
            self.action_outs = []
            for action_dim in act_dim:
                self.action_outs.append(nn.Linear(64, action_dim))
            self.action_outs = nn.ModuleList(self.action_outs)

    def forward(self, obs):
        x = self.ln1(obs)
        x = F.tanh(self.fc1(x))
        x = self.ln2(x)
        x = F.tanh(self.fc2(x))

        if self.multi_discrete:
            policys = []
            for action_out in self.action_outs:
                policy = action_out(x)
                policys.append(policy)
        else:
            policys = self.fc3(x)
        return policys


class Critic(parl.Model):
    def __init__(self, cent_obs_dim):
        super(Critic, self).__init__()
        self.ln1 = nn.LayerNorm(cent_obs_dim)
        self.ln2 = nn.LayerNorm(64)
        self.ln3 = nn.LayerNorm(64)
        self.fc1 = nn.Linear(cent_obs_dim, 64)
        self.fc2 = nn.Linear(64, 64)
        self.v_out = nn.Linear(64, 1)

    def forward(self, cent_obs):
        x = self.ln1(cent_obs)
        x = F.tanh(self.fc1(x))
        x = self.ln2(x)
        x = F.tanh(self.fc2(x))
        values = self.v_out(x)

        return values

# ---- PARL 2.2.1 benchmark/torch/mappo/simple_agent.py, verbatim (imports gathered above) ----


class SimpleAgent(parl.Agent):
    def __init__(self, algorithm):
        self.value_normalizer = algorithm.value_normalizer
        self.device = torch.device("cuda:0" if torch.cuda.
                                   is_available() else "cpu")
        super(SimpleAgent, self).__init__(algorithm)

    def sample(self, share_obs, obs):
        obs = torch.from_numpy(obs).to(self.device)
        share_obs = torch.from_numpy(share_obs).to(self.device)
        value, action, action_log_prob = self.alg.sample(share_obs, obs)
        return value.detach().cpu().numpy(), action.detach().cpu().numpy(
        ), action_log_prob.detach().cpu().numpy()

    def learn(self, buffer, ppo_epoch, num_mini_batch, use_popart):
        if use_popart:
            advantages = buffer.returns[:
                                        -1] - self.value_normalizer.denormalize(
                                            buffer.value_preds[:-1])
        else:
            advantages = buffer.returns[:-1] - buffer.value_preds[:-1]

        advantages_copy = advantages.copy()
        advantages_copy[buffer.active_masks[:-1] == 0.0] = np.nan
        mean_advantages = np.nanmean(advantages_copy)
        std_advantages = np.nanstd(advantages_copy)
        advantages = (advantages - mean_advantages) / (std_advantages + 1e-5)

        train_info = {}
        train_info['value_loss'] = 0
        train_info['policy_loss'] = 0
        train_info['dist_entropy'] = 0

        for _ in range(ppo_epoch):
            data_generator = buffer.sample_batch(advantages, num_mini_batch)
            for sample in data_generator:
                share_obs_batch, obs_batch, actions_batch, value_preds_batch, return_batch, masks_batch, \
                active_masks_batch, old_action_log_probs_batch, adv_targ = sample

                share_obs_batch = torch.from_numpy(share_obs_batch).to(
                    self.device)
                obs_batch = torch.from_numpy(obs_batch).to(self.device)
                actions_batch = torch.from_numpy(actions_batch).to(self.device)
                value_preds_batch = torch.from_numpy(value_preds_batch).to(
                    self.device)
                return_batch = torch.from_numpy(return_batch).to(self.device)
                active_masks_batch = torch.from_numpy(active_masks_batch).to(
                    self.device)
                old_action_log_probs_batch = torch.from_numpy(
                    old_action_log_probs_batch).to(self.device)
                adv_targ = torch.from_numpy(adv_targ).to(self.device)

                value_loss, policy_loss, dist_entropy = self.alg.learn(
                    share_obs_batch, obs_batch, actions_batch,
                    value_preds_batch, return_batch,
                    old_action_log_probs_batch, adv_targ, active_masks_batch)

                train_info['value_loss'] += value_loss.item()
                train_info['policy_loss'] += policy_loss.item()
                train_info['dist_entropy'] += dist_entropy.item()

        num_updates = ppo_epoch * num_mini_batch
        for k in train_info.keys():
            train_info[k] /= num_updates
        return train_info

    def value(self, share_obs):
        share_obs = torch.from_numpy(share_obs).to(self.device)
        next_values = self.alg.value(share_obs).detach().cpu().numpy()
        return next_values

# ---- PARL 2.2.1 benchmark/torch/mappo/mappo_buffer.py, verbatim (imports gathered above) ----


class SeparatedReplayBuffer(object):
    def __init__(self, episode_length, env_num, gamma, gae_lambda, obs_shape,
                 share_obs_shape, act_space, use_popart):
        """  ReplayBuffer for each agent

        Args:
            model (parl.Model): model that contains both value network and policy network
            episode_length (int): max length for any episode
            env_num (int): Number of parallel envs to train
            gamma (float): discount factor for rewards
            gae_lambda (float): gae lambda parameter
            obs_shape (int): obs dim for single agent
            share_obs_shape (int): concatenated obs dim for all agents
            act_space (MultiDiscrete/Discrete): action space for single agent
            use_popart (bool): whether to use PopArt to normalize rewards
        """
        self.episode_length = episode_length
        self.env_num = env_num
        self.gamma = gamma
        self.gae_lambda = gae_lambda
        self._use_popart = use_popart

        self.share_obs = np.zeros(
            (self.episode_length + 1, self.env_num, share_obs_shape),
            dtype=np.float32)
        self.obs = np.zeros((self.episode_length + 1, self.env_num, obs_shape),
                            dtype=np.float32)
        self.value_preds = np.zeros((self.episode_length + 1, self.env_num, 1),
                                    dtype=np.float32)
        self.returns = np.zeros((self.episode_length + 1, self.env_num, 1),
                                dtype=np.float32)

        if act_space.__class__.__name__ == 'Discrete':
            act_shape = 1
        else:
            act_shape = act_space.shape

        self.actions = np.zeros((self.episode_length, self.env_num, act_shape),
                                dtype=np.float32)
        self.action_log_probs = np.zeros(
            (self.episode_length, self.env_num, act_shape), dtype=np.float32)
        self.rewards = np.zeros((self.episode_length, self.env_num, 1),
                                dtype=np.float32)
        self.masks = np.ones((self.episode_length + 1, self.env_num, 1),
                             dtype=np.float32)
        self.active_masks = np.ones_like(self.masks)

        self.step = 0

    def insert(self,
               share_obs,
               obs,
               actions,
               action_log_probs,
               value_preds,
               rewards,
               masks,
               active_masks=None):
        """ insert sample data into buffer
        """
        self.share_obs[self.step + 1] = share_obs.copy()
        self.obs[self.step + 1] = obs.copy()
        self.actions[self.step] = actions.copy()
        self.action_log_probs[self.step] = action_log_probs.copy()
        self.value_preds[self.step] = value_preds.copy()
        self.rewards[self.step] = rewards.copy()
        self.masks[self.step + 1] = masks.copy()
        if active_masks is not None:
            self.active_masks[self.step + 1] = active_masks.copy()

        self.step = (self.step + 1) % self.episode_length

    def after_update(self):
        """ update buffer after learn
        """
        self.share_obs[0] = self.share_obs[-1].copy()
        self.obs[0] = self.obs[-1].copy()
        self.masks[0] = self.masks[-1].copy()
        self.active_masks[0] = self.active_masks[-1].copy()

    def compute_returns(self, next_value, value_normalizer=None):
        """ compute return for each step
        """
        self.value_preds[-1] = next_value
        gae = 0
        for step in reversed(range(self.rewards.shape[0])):
            if self._use_popart:
                delta = self.rewards[step] + self.gamma * value_normalizer.denormalize(self.value_preds[step + 1]) * \
                        self.masks[step + 1] - value_normalizer.denormalize(self.value_preds[step])
                gae = delta + self.gamma * self.gae_lambda * self.masks[
                    step + 1] * gae
                self.returns[step] = gae + value_normalizer.denormalize(
                    self.value_preds[step])
            else:
                delta = self.rewards[step] + self.gamma * self.value_preds[step + 1] * self.masks[step + 1] - \
                        self.value_preds[step]
                gae = delta + self.gamma * self.gae_lambda * self.masks[
                    step + 1] * gae
                self.returns[step] = gae + self.value_preds[step]

    def sample_batch(self, advantages, num_mini_batch=None):
        """sample data from replay memory for training
        """
        episode_length, env_num = self.rewards.shape[0:2]
        batch_size = env_num * episode_length
        mini_batch_size = batch_size // num_mini_batch

        rand = torch.randperm(batch_size).numpy()
        sampler = [
            rand[i * mini_batch_size:(i + 1) * mini_batch_size]
            for i in range(num_mini_batch)
        ]

        share_obs = self.share_obs[:-1].reshape(-1, *self.share_obs.shape[2:])
        obs = self.obs[:-1].reshape(-1, *self.obs.shape[2:])
        actions = self.actions.reshape(-1, self.actions.shape[-1])
        value_preds = self.value_preds[:-1].reshape(-1, 1)
        returns = self.returns[:-1].reshape(-1, 1)
        masks = self.masks[:-1].reshape(-1, 1)
        active_masks = self.active_masks[:-1].reshape(-1, 1)
        action_log_probs = self.action_log_probs.reshape(
            -1, self.action_log_probs.shape[-1])
        advantages = advantages.reshape(-1, 1)

        for indices in sampler:
            share_obs_batch = share_obs[indices]
            obs_batch = obs[indices]
            actions_batch = actions[indices]
            value_preds_batch = value_preds[indices]
            return_batch = returns[indices]
            masks_batch = masks[indices]
            active_masks_batch = active_masks[indices]
            old_action_log_probs_batch = action_log_probs[indices]
            if advantages is None:
                adv_targ = None
            else:
                adv_targ = advantages[indices]

            yield share_obs_batch, obs_batch, actions_batch, value_preds_batch, return_batch, masks_batch, active_masks_batch, old_action_log_probs_batch, adv_targ


# ---- the replaced piece: PARL's env_wrappers.VectorEnv interface over mpe2 (parl.env.MultiAgentVectorEnv) ----


class Discrete(object):
    """Old gym's Discrete as the MAPPO repo's env gave it to PARL's code: ``n`` a Python int (gymnasium's is a
    numpy int, which PARL's ``isinstance(act_dim, int)`` would take for a MultiDiscrete)."""

    def __init__(self, n):
        self.n = int(n)


class PARLVectorEnv(object):
    """PARL's ``VectorEnv(scenario_name, env_num, seed)`` over mpe2: obs ``[E, n, obs_dim]``, rewards
    ``[E, n, 1]``, dones ``[E, n]`` (True at the 25-step limit, where the env is reset), infos ``[E, n]`` of
    ``{"individual_reward"}``, ``share_observation_space`` (the concatenated observations, mpe2's state).
    Actions: one list per env of every agent's ``[1]`` index (PARL's train.py), one-hot encoding not needed."""

    SCENARIOS = {"simple_spread": ("mpe2:simple_spread_v3", dict(N=3, local_ratio=0.0, max_cycles=25)),
                 "simple_speaker_listener": ("mpe2:simple_speaker_listener_v4", dict(max_cycles=25)),
                 "simple_reference": ("mpe2:simple_reference_v3", dict(max_cycles=25))}

    def __init__(self, scenario_name, env_num, seed):
        import gymnasium
        from parl.env.multiagent import MultiAgentVectorEnv, make_multiagent_env

        env_id, kwargs = self.SCENARIOS[scenario_name]
        self.envs = MultiAgentVectorEnv([lambda: make_multiagent_env(env_id, **kwargs) for _ in range(env_num)])
        self.seed = seed
        self.observation_space = self.envs.observation_spaces
        self.action_space = [Discrete(space.n) for space in self.envs.action_spaces]
        share = gymnasium.spaces.Box(-np.inf, np.inf, (self.envs.state_dim,), np.float32)
        self.share_observation_space = [share] * self.envs.n_agents
        self.num_envs = env_num

    def reset(self):
        obs, _ = self.envs.reset(seed=[self.seed + rank * 1000 for rank in range(self.num_envs)])
        return obs

    def step(self, actions):
        actions = np.asarray(actions).reshape(self.num_envs, self.envs.n_agents)
        obs, rewards, terminated, truncated, _ = self.envs.step(actions)
        dones = np.repeat((terminated | truncated)[:, None], self.envs.n_agents, axis=1)
        infos = np.array([[{"individual_reward": float(r)} for r in env_rewards] for env_rewards in rewards])
        return obs, rewards[..., None], dones, infos

    def close(self):
        self.envs.close()


VectorEnv = PARLVectorEnv  # the name PARL's train.py calls


# ---- PARL 2.2.1 benchmark/torch/mappo/train.py: constants and main(), verbatim (args set by the test) ----
LR = 7e-4  # learning rate
VALUE_LOSS_COEF = 1  # Value loss coefficient (ie. c_1 in the paper)
ENTROPY_COEF = 0.01  # Entropy coefficient (ie. c_2 in the paper)
HUBER_DELTA = 10.0  # coefficience of huber loss
EPS = 1e-5  # Adam optimizer epsilon (default: 1e-5)
MAX_GRAD_NORM = 10.0  # Max gradient norm for gradient clipping
EPISODE_LENGTH = 25  # Max length for any episode
GAMMA = 0.99  # discount factor for rewards (default: 0.99)
GAE_LAMBDA = 0.95  # gae lambda parameter (default: 0.95)
LOG_INTERVAL_EPISODES = 5  # time duration between contiunous twice log printing
CLIP_PARAM = 0.2  # ppo clip parameter, suggestion 4 in the paper (default: 0.2)
PPO_EPOCH = 15  # number of epochs for updating using each T data, suggestion 3 in the paper (default: 15)
NUM_MINI_BATCH = 1  # number of batches for ppo, suggestion 3 in the paper (default: 1)


def get_act_dim_from_act_space(action_space):
    if action_space.__class__.__name__ == "Discrete":
        act_dim = action_space.n
    else:
        act_dim = action_space.high - action_space.low + 1
    return act_dim


def main():
    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(1)

    envs = VectorEnv(args.env_name, args.env_num, args.seed)

    agent_num = len(envs.observation_space)
    env_num = args.env_num

    agents = []
    buffers = []
    for agent_id in range(agent_num):
        share_observation_space = envs.share_observation_space[agent_id] if args.use_centralized_V else \
            envs.observation_space[agent_id]

        obs_dim = envs.observation_space[agent_id].shape[0]
        cent_obs_dim = share_observation_space.shape[0]
        act_dim = get_act_dim_from_act_space(envs.action_space[agent_id])

        model = SimpleModel(obs_dim, cent_obs_dim, act_dim)
        algorithm = MAPPO(model, CLIP_PARAM, VALUE_LOSS_COEF, ENTROPY_COEF, LR,
                          HUBER_DELTA, EPS, MAX_GRAD_NORM, args.use_popart,
                          args.use_value_active_masks)
        agent = SimpleAgent(algorithm)
        # buffer
        bu = SeparatedReplayBuffer(
            EPISODE_LENGTH, env_num, GAMMA, GAE_LAMBDA, obs_dim, cent_obs_dim,
            envs.action_space[agent_id], args.use_popart)
        agents.append(agent)
        buffers.append(bu)

    if args.restore:
        # restore model
        for i in range(len(agents)):
            model_file = args.model_dir + '/' + args.env_name + '/agent_' + str(
                i)
            if not os.path.exists(model_file):
                raise Exception(
                    'model file {} does not exits'.format(model_file))
            agents[i].restore(model_file)

    start = time.time()
    obs = envs.reset()
    share_obs = []
    for o in obs:
        share_obs.append(list(chain(*o)))
    share_obs = np.array(share_obs)
    for agent_id in range(agent_num):
        if not args.use_centralized_V:
            share_obs = np.array(list(obs[:, agent_id]))
        buffers[agent_id].share_obs[0] = share_obs.copy()
        buffers[agent_id].obs[0] = np.array(list(obs[:, agent_id])).copy()

    episodes = int(args.train_total_steps) // EPISODE_LENGTH // args.env_num
    for episode in range(episodes):
        for step in range(EPISODE_LENGTH):
            # Sample actions
            values = []
            actions = []
            action_log_probs = []
            for agent_id in range(agent_num):
                value, action, action_log_prob = agents[agent_id].sample(
                    buffers[agent_id].share_obs[step],
                    buffers[agent_id].obs[step])
                values.append(value)
                actions.append(action)
                action_log_probs.append(action_log_prob)

            actions_batch = []
            for env_id in range(actions[0].shape[0]):
                env_actions = []
                for agent_id in range(len(actions)):
                    env_actions.append(actions[agent_id][env_id])
                actions_batch.append(env_actions)

            obs, rewards, dones, infos = envs.step(actions_batch)

            masks = np.ones((args.env_num, agent_num, 1), dtype=np.float32)
            masks[dones == True] = np.zeros(((dones == True).sum(), 1),
                                            dtype=np.float32)

            share_obs = []
            for o in obs:
                share_obs.append(list(chain(*o)))
            share_obs = np.array(share_obs)
            for agent_id in range(agent_num):
                if not args.use_centralized_V:
                    share_obs = np.array(list(obs[:, agent_id]))

                buffers[agent_id].insert(
                    share_obs, np.array(list(obs[:, agent_id])),
                    actions[agent_id], action_log_probs[agent_id],
                    values[agent_id], rewards[:, agent_id], masks[:, agent_id])

            # show animation
            if args.show:
                time.sleep(0.1)
                envs.raw_env.render()

        # compute return and update network
        with torch.no_grad():
            for agent_id in range(agent_num):
                next_values = agents[agent_id].value(
                    buffers[agent_id].share_obs[-1])
                buffers[agent_id].compute_returns(
                    next_values, agents[agent_id].value_normalizer)

        # learn
        train_infos = []
        for agent_id in range(agent_num):
            train_info = agents[agent_id].learn(
                buffers[agent_id], PPO_EPOCH, NUM_MINI_BATCH, args.use_popart)
            train_infos.append(train_info)
            buffers[agent_id].after_update()

        # log information
        total_num_steps = (episode + 1) * EPISODE_LENGTH * args.env_num
        if episode % LOG_INTERVAL_EPISODES == 0:
            end = time.time()
            agent_rewards = []
            for agent_id in range(agent_num):
                idv_rews = []
                for info in infos:
                    if 'individual_reward' in info[agent_id].keys():
                        idv_rews.append(info[agent_id]['individual_reward'])
                individual_rewards = round(np.mean(idv_rews), 3)
                average_episode_rewards = round(
                    np.mean(buffers[agent_id].rewards) * EPISODE_LENGTH, 3)
                agent_rewards.append(individual_rewards)
                train_infos[agent_id].update({
                    'individual_rewards':
                    individual_rewards
                })
                train_infos[agent_id].update({
                    "average_episode_rewards":
                    average_episode_rewards
                })

            use_time = round(end - start, 3)
            logger.info(
                'Steps: {}, Episodes: {}/{}, Mean episode reward: {}, mean agents rewards {}, Time: {}'
                .format(total_num_steps, episode, episodes,
                        average_episode_rewards, agent_rewards, use_time))

            for agent_id in range(agent_num):
                for k, v in train_infos[agent_id].items():
                    agent_k = "agent%i/" % agent_id + k
                    summary.add_scalar(agent_k, v, total_num_steps)

            # save model
            if not args.restore:
                model_dir = args.model_dir + '/' + args.env_name
                os.makedirs(os.path.dirname(model_dir), exist_ok=True)
                for i in range(len(agents)):
                    model_name = '/agent_' + str(i)
                    agents[i].save(model_dir + model_name)

    envs.close()




# ---- the tests ----


def record(monkeypatch):
    """Wrap PARL's SimpleAgent and SeparatedReplayBuffer in place (their code unchanged) to keep what train.py's
    loop does with them: the agents and buffers it makes, each learn's train_info, each update's mean return."""
    made = {"agents": [], "buffers": []}
    agent_init, agent_learn = SimpleAgent.__init__, SimpleAgent.learn
    buffer_init, compute_returns = SeparatedReplayBuffer.__init__, SeparatedReplayBuffer.compute_returns

    def init_agent(self, algorithm):
        agent_init(self, algorithm)
        self.infos = []
        made["agents"].append(self)

    def learn(self, buffer, ppo_epoch, num_mini_batch, use_popart):
        info = agent_learn(self, buffer, ppo_epoch, num_mini_batch, use_popart)
        self.infos.append(dict(info))
        return info

    def init_buffer(self, *args, **kwargs):
        buffer_init(self, *args, **kwargs)
        self.return_means, self.reward_means = [], []
        made["buffers"].append(self)

    def returns(self, next_value, value_normalizer=None):
        compute_returns(self, next_value, value_normalizer)
        self.return_means.append(float(self.returns[:-1].mean()))
        self.reward_means.append(float(self.rewards.mean()))

    monkeypatch.setattr(SimpleAgent, "__init__", init_agent)
    monkeypatch.setattr(SimpleAgent, "learn", learn)
    monkeypatch.setattr(SeparatedReplayBuffer, "__init__", init_buffer)
    monkeypatch.setattr(SeparatedReplayBuffer, "compute_returns", returns)
    return made


def test_parl2_mappo_benchmark_code_runs_unchanged_on_mpe2_spread(tmp_path, monkeypatch):
    global args
    made = record(monkeypatch)
    summary.set_logdir(str(tmp_path / "train_log"))
    episodes, env_num = 6, 8  # train.py saves the agents every 5 episodes: after the first and the last
    args = argparse.Namespace(env_name="simple_spread", seed=1, env_num=env_num,
                              train_total_steps=episodes * EPISODE_LENGTH * env_num, restore=False, show=False,
                              model_dir=str(tmp_path / "model"), use_popart=True, use_centralized_V=True,
                              use_value_active_masks=True)
    main()  # PARL's train.py main(), verbatim

    agents, buffers = list(made["agents"]), list(made["buffers"])
    assert len(agents) == len(buffers) == 3  # one per agent, as PARL's example
    for agent, buffer in zip(agents, buffers):
        assert isinstance(agent.alg, MAPPO) and agent.value_normalizer is agent.alg.value_normalizer
        assert buffer.share_obs.shape == (EPISODE_LENGTH + 1, env_num, 54) and buffer.obs.shape[-1] == 18
        assert len(agent.infos) == episodes
        for info in agent.infos:
            assert set(info) >= {"value_loss", "policy_loss", "dist_entropy"}
            assert 0.0 < info["dist_entropy"] <= math.log(5) + 1e-6 and math.isfinite(info["value_loss"])
        assert agent.infos[0]["dist_entropy"] > 1.5  # nearly uniform over 5 actions at the start
        # one PopArt update per learn call: 15 epochs x 1 minibatch per episode
        popart = agent.value_normalizer
        assert float(popart.debiasing_term) == pytest.approx(1 - 0.99999 ** (PPO_EPOCH * episodes), rel=1e-4)
        # beta ~ 1: the debiased mean is the average of the batches' mean returns (each batch fed 15 times)
        mean, _ = popart.debiased_mean_var()
        assert float(mean) == pytest.approx(np.mean(buffer.return_means), rel=1e-3)
        # mpe2 spread with local_ratio=0: every agent gets the same global, negative reward each step
        assert all(-10.0 < r < 0.0 for r in buffer.reward_means)
    np.testing.assert_array_equal(buffers[0].rewards, buffers[2].rewards)

    # PARL's restore path of train.py (args.restore): the saved agents load into fresh ones
    share_obs = buffers[0].share_obs[-1]
    for i, agent in enumerate(agents):
        fresh = SimpleAgent(MAPPO(SimpleModel(18, 54, 5), CLIP_PARAM, VALUE_LOSS_COEF, ENTROPY_COEF, LR,
                                  HUBER_DELTA, EPS, MAX_GRAD_NORM, True, True))
        fresh.restore(str(tmp_path / "model" / "simple_spread" / f"agent_{i}"))
        np.testing.assert_array_equal(fresh.value(share_obs), agent.value(share_obs))
        assert float(fresh.value_normalizer.debiasing_term) == float(agent.value_normalizer.debiasing_term)


def _batch(rng, n=32, error_scale=1.0):
    obs = rng.normal(size=(n, 18)).astype(np.float32)
    share_obs = rng.normal(size=(n, 54)).astype(np.float32)
    actions = rng.integers(0, 5, size=(n, 1)).astype(np.float32)  # PARL's buffer stores float32 indices
    value_preds = rng.normal(size=(n, 1)).astype(np.float32) * 0.1
    returns = (rng.normal(size=(n, 1)) * error_scale).astype(np.float32)
    old_log_probs = (np.log(0.2) + 0.1 * rng.normal(size=(n, 1))).astype(np.float32)
    adv = rng.normal(size=(n, 1)).astype(np.float32)
    active = np.ones((n, 1), np.float32)
    return [torch.from_numpy(x) for x in (share_obs, obs, actions, value_preds, returns, old_log_probs, adv, active)]


@pytest.mark.parametrize("use_popart", [False, True])
def test_same_update_as_parls_mappo(use_popart):
    """PARL's MAPPO (verbatim above) and this project's, same SimpleModel weights, same batches (errors within
    huber_delta, where the two Huber losses agree): the same actor updates; without PopArt the same critic updates;
    with PopArt the same statistics (the critic step differs by design: PARL forwards the critic before PopArt
    rescales its output layer, ours after, van Hasselt et al. 2016's order)."""
    torch.manual_seed(0)
    ours_model = SimpleModel(18, 54, 5)
    parl_model = SimpleModel(18, 54, 5)
    parl_model.load_state_dict(ours_model.state_dict())
    hp = (CLIP_PARAM, VALUE_LOSS_COEF, ENTROPY_COEF, LR, HUBER_DELTA, EPS, MAX_GRAD_NORM, use_popart, True)
    ours, theirs = MAPPO(ours_model, *hp, device="cpu"), PARLMAPPO(parl_model, *hp)
    rng = np.random.default_rng(0)
    for _ in range(4):
        batch = _batch(rng, error_scale=3.0 if use_popart else 1.0)
        a = [float(x) for x in ours.learn(*batch)]
        b = [float(x.detach()) for x in theirs.learn(*batch)]
        assert a[1:] == pytest.approx(b[1:], rel=1e-5, abs=1e-6)  # policy loss, entropy
        assert a[0] == pytest.approx(b[0], rel=1e-5) or use_popart  # value loss
        assert math.isfinite(a[0]) and math.isfinite(b[0])
    for name, value in parl_model.state_dict().items():
        if use_popart and name.startswith("critic."):
            continue
        np.testing.assert_allclose(ours_model.state_dict()[name].numpy(), value.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=name)
    if use_popart:
        for name in ("mean", "mean_sq", "debiasing_term"):
            np.testing.assert_allclose(getattr(ours.value_normalizer, name).numpy(),
                                       getattr(theirs.value_normalizer, name).numpy(), rtol=1e-6)
    # PARL's Huber loss gives an error below -delta no loss; ours is symmetric
    e = torch.tensor([-12.0, 12.0])
    assert parl_huber_loss(e, 10.0).tolist() == [0.0, 70.0]
    from parl_algorithms.torch.marl_functional import huber_loss as ours_huber

    assert ours_huber(e, 10.0).tolist() == [70.0, 70.0]


def test_popart_as_parls():
    """PopArt: PARL's class and ours give the same statistics, rescaled output layer and (de)normalised values."""
    torch.manual_seed(1)
    ours_layer, parl_layer = nn.Linear(4, 1), nn.Linear(4, 1)
    parl_layer.load_state_dict(ours_layer.state_dict())
    ours, theirs = OurPopArt(ours_layer.weight, ours_layer.bias), PARLPopArt(parl_layer.weight, parl_layer.bias)
    rng = np.random.default_rng(1)
    for scale in (1.0, 10.0, 100.0):
        returns = (rng.normal(size=(32, 1)) * scale + scale).astype(np.float32)
        ours.update(returns)
        theirs.update(returns)
        for name in ("mean", "mean_sq", "debiasing_term"):
            np.testing.assert_allclose(getattr(ours, name).numpy(), getattr(theirs, name).numpy(), rtol=1e-6)
        np.testing.assert_allclose(ours_layer.weight.detach().numpy(), parl_layer.weight.detach().numpy(), rtol=1e-5)
        np.testing.assert_allclose(ours_layer.bias.detach().numpy(), parl_layer.bias.detach().numpy(), rtol=1e-5)
        np.testing.assert_allclose(ours.normalize(returns).numpy(), theirs.normalize(returns).numpy(), rtol=1e-5)
        np.testing.assert_allclose(ours.denormalize(returns[:4]), theirs.denormalize(returns[:4]), rtol=1e-5)
