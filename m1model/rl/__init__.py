"""RL for the bundled model (MiniMax-M1, arXiv:2506.13585, section 3).

    losses.policy_loss      CISPO (Eq. 4-5, unified mask Eq. 6-7), GRPO and DAPO behind one interface
    advantages              group-relative advantages (Eq. 2), dynamic sampling, overlong shaping
    rollout.PromptPool      prompts + items + mixture weights; `collate` pads rollouts for the losses
    trainer.RLTrainer       generate -> reward -> advantages -> off-policy minibatch updates; resumable
    mixture_weights         step hook: dynamic mixture weights and rising difficulty (sections 4.3, 5)
    length_bias             step hook and reward wrapper: length-bias monitor and shaping (section 4.2.2)
    sft.sft_warm_start      supervised warm start, loss on answer tokens only
    optim.paper_adamw       AdamW(0.9, 0.95, eps=1e-15) as in section 3.2

Rewards are injected (`reward_fn(items, responses)`): this package never imports verifiers or flows.
"""
