"""Reinforcement learning: rewards, advantages, the loss, methods and the training loop."""
