"""Length bias of generative rewards during RL: a monitor, reward shaping, and what to do on an alarm.

M1 (section 4.2.2): offline GenRM debiasing did not stop length bias during RL, so the run watches for
"length seeking" (responses growing while task success does not) and corrects the reward. Both halves
live in one `LengthBias` object, wired into a stage in two places:

    lb = LengthBias(settings, decode=tokenizer.decode, encode=..., success=...)
    trainer = RLTrainer(..., reward_fn=lb.wrap(reward_fn), step_hooks=[lb.hook])

`wrap` sees every scored response (every dynamic-sampling round) and applies, in this order, to the
domains scored by a judge (``settings.domains``):

1. length-normalised shaping past the reference's length (L tokens, reference R tokens, slack s, coef c):
       r <- r - c * min(1, max(0, L - s R) / (s R))
   a response up to s times the reference's length is untouched; the penalty grows to c at twice that;
2. per-group normalisation, r <- (r - mean_g) / (std_g + 1e-6) over the G responses of a prompt: puts
   judged rewards on the same scale as rule rewards when advantages are not std-normalised; with
   std-normalised advantages it changes nothing by itself, but it makes 3. scale-free;
3. value clipping to [clip_min, clip_max]: one outlying judgment cannot dominate a group.

It records (domain, length, raw reward, success) for the monitor. The monitor (`hook`, called after each
step's rollouts) logs per domain: mean length, the mean reward before and after mitigation (``reward_raw``,
``reward``), the Spearman correlation between length and the reward trained on (``corr``; the judge's
own, before mitigation: ``corr_raw``), and success, the rule-verified success rate (from ``success``,
where the item can be checked); then fits least-squares trends over the last ``window`` steps. Length
growth (``length_trend``) is relative:
the least-squares slope of the steps' mean lengths over the window divided by the mean of those means
(+5 tokens a step on responses of about 100 is 0.05). The alarm: that growth is above ``length_growth``
while success grows by less than ``success_growth`` (its slope, per step),
reward and length correlate (mean Spearman > ``min_corr``), and responses are already longer than
``alarm_ratio`` times their reference (where it can be measured: growing towards a good answer's length is
learning, not length seeking). On an alarm, ``on_alarm``: "log" (a
warning and the metric), "lower_weight" (halve, by ``weight_factor``, that domain's sampling weight in the
prompt pool; scaling the reward itself would be undone by std-normalised advantages), or "stop" (raise
`LengthSeeking`, which ends the stage).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Literal

import numpy as np

RewardFn = Callable[[Sequence[Mapping[str, Any]], Sequence[Sequence[int]]], Sequence[float]]
# success(items, texts) -> per response: 1.0/0.0 where a rule can tell, None where it cannot
SuccessFn = Callable[[Sequence[Mapping[str, Any]], Sequence[str]], Sequence[float | None]]
log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class LengthBiasSettings:
    """What `LengthBias` does, field by field as in the module's docstring. No defaults here: the
    pipeline's `train.length_bias` section (flows.config.LengthBiasConfig) holds them and its
    descriptions, and `flows.curriculum.settings.length_bias_settings` passes them on."""

    enabled: bool  # monitor (the metrics and the alarm); shaping, normalisation and clipping apply anyway
    domains: Sequence[str]  # the domains scored by a judge: only their rewards are touched
    window: int
    length_growth: float
    success_growth: float
    min_corr: float
    alarm_ratio: float
    on_alarm: Literal["log", "lower_weight", "stop"]
    weight_factor: float
    shaping: bool
    shaping_coef: float
    shaping_slack: float
    group_normalize: bool
    clip_min: float | None
    clip_max: float | None


class LengthSeeking(RuntimeError):
    """The monitor's alarm with on_alarm = "stop": the stage ends here, with this message."""


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Rank correlation; 0 when either side is constant (no evidence either way)."""
    from scipy.stats import spearmanr

    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return 0.0
    return float(spearmanr(x, y).statistic)


def slope(values: Sequence[float]) -> float:
    """Least-squares slope per step."""
    if len(values) < 2:
        return 0.0
    return float(np.polyfit(np.arange(len(values)), np.asarray(values, dtype=float), 1)[0])


@dataclass
class _Record:
    domain: str
    length: int
    raw: float
    reward: float  # after shaping, normalisation and clipping: what the policy is trained on
    success: float | None
    ref_len: int | None
    group: int  # responses to the same prompt share it: the judge's order is compared within a group


@dataclass
class DomainTrend:
    lengths: list[float] = field(default_factory=list)
    successes: list[float] = field(default_factory=list)
    corrs: list[float] = field(default_factory=list)
    alarms: int = 0


class LengthBias:
    def __init__(
        self,
        config: LengthBiasSettings,
        *,
        decode: Callable[[Sequence[int]], str] | None = None,
        encode: Callable[[str], Sequence[int]] | None = None,
        success: SuccessFn | None = None,
    ) -> None:
        if config.shaping and encode is None:
            raise ValueError("length shaping needs `encode` to measure the reference in tokens")
        if success is not None and decode is None:
            raise ValueError("the success rule needs `decode` to read the responses")
        self.config, self.decode, self.encode, self.success = config, decode, encode, success
        self.trends: dict[str, DomainTrend] = defaultdict(DomainTrend)
        self._records: list[_Record] = []
        self._ref_len: dict[str, int] = {}
        self._groups_seen = 0

    # -- the reward side ---------------------------------------------------------------------------------

    def wrap(self, reward_fn: RewardFn) -> RewardFn:
        cfg = self.config

        def shaped(items: Sequence[Mapping[str, Any]], responses: Sequence[Sequence[int]]) -> list[float]:
            raw = [float(r) for r in reward_fn(items, responses)]
            out = list(raw)
            judged = [i for i, item in enumerate(items) if item.get("domain") in cfg.domains]
            if cfg.shaping:
                for i in judged:
                    out[i] -= self.penalty(items[i], len(responses[i]))
            if cfg.group_normalize:
                for group in _groups(items, judged):
                    vals = np.asarray([out[i] for i in group])
                    for i, v in zip(group, (vals - vals.mean()) / (vals.std() + 1e-6), strict=True):
                        out[i] = float(v)
            if cfg.clip_min is not None or cfg.clip_max is not None:
                for i in judged:
                    out[i] = float(np.clip(out[i], cfg.clip_min, cfg.clip_max))
            if cfg.enabled:
                self._record(items, responses, raw, out)
            return out

        return shaped

    def reference_length(self, item: Mapping[str, Any]) -> int | None:
        """The item's reference in tokens (cached), or None without a reference or an encoder."""
        ref = item.get("reference")
        if not ref or self.encode is None:
            return None
        key = str(ref)
        if key not in self._ref_len:
            self._ref_len[key] = max(1, len(self.encode(key)))
        return self._ref_len[key]

    def penalty(self, item: Mapping[str, Any], length: int) -> float:
        """c * min(1, max(0, L - s R) / (s R)); 0 for items without a reference."""
        ref_len = self.reference_length(item)
        if ref_len is None:
            return 0.0
        free = self.config.shaping_slack * ref_len
        return self.config.shaping_coef * min(1.0, max(0.0, length - free) / free)

    def _record(self, items, responses, raw: list[float], shaped: list[float]) -> None:
        successes: Sequence[float | None] = [None] * len(items)
        if self.success is not None:
            successes = self.success(items, [self.decode(r) for r in responses])
        groups = {i: n for n, group in enumerate(_groups(items, list(range(len(items))))) for i in group}
        for i, (item, resp, r, s, ok) in enumerate(
            zip(items, responses, raw, shaped, successes, strict=True)
        ):
            self._records.append(
                _Record(
                    str(item.get("domain", "?")),
                    len(resp),
                    r,
                    s,
                    ok,
                    self.reference_length(item),
                    self._groups_seen + groups[i],
                )
            )
        self._groups_seen += len(items)

    # -- the monitor ------------------------------------------------------------------------------------

    def hook(self, trainer, batch) -> dict[str, float]:
        """The RLTrainer step hook: per-domain metrics of this step's responses, trends, the alarm."""
        if not self.config.enabled:
            return {}
        records, self._records = self._records, []
        by_domain: dict[str, list[_Record]] = defaultdict(list)
        for rec in records:
            by_domain[rec.domain].append(rec)
        metrics: dict[str, float] = {}
        for domain, recs in sorted(by_domain.items()):
            metrics |= self._domain_step(trainer, domain, recs)
        return metrics

    def _domain_step(self, trainer, domain: str, recs: list[_Record]) -> dict[str, float]:
        cfg, t = self.config, self.trends[domain]
        lengths = [r.length for r in recs]
        raw = [r.raw for r in recs]
        checked = [r.success for r in recs if r.success is not None]
        success = float(np.mean(checked)) if checked else float("nan")
        corr = spearman([r.reward for r in recs], lengths)
        ratios = [r.length / r.ref_len for r in recs if r.ref_len]
        ratio = float(np.mean(ratios)) if ratios else None
        t.lengths.append(float(np.mean(lengths)))
        t.successes.append(success)
        t.corrs.append(corr)
        p = f"length_bias/{domain}"
        m = {
            f"{p}/length": t.lengths[-1],
            f"{p}/reward_raw": float(np.mean(raw)),
            f"{p}/reward": float(np.mean([r.reward for r in recs])),  # after shaping: what is trained on
            f"{p}/corr": corr,
            f"{p}/corr_raw": spearman(raw, lengths),  # the judge's own bias, before any mitigation
        }
        if checked:
            m[f"{p}/success"] = success
            right, wrong, tied = rule_order(recs)
            m |= {f"{p}/pairs_right": right, f"{p}/pairs_wrong": wrong, f"{p}/pairs_tied": tied}
        if ratio is not None:
            m[f"{p}/length_ratio"] = ratio
        if len(t.lengths) >= cfg.window:
            lens = t.lengths[-cfg.window :]
            growth = slope(lens) / max(float(np.mean(lens)), 1e-9)
            succ = [s for s in t.successes[-cfg.window :] if not np.isnan(s)]
            success_trend = slope(succ) if len(succ) >= 2 else 0.0
            corr_mean = float(np.mean(t.corrs[-cfg.window :]))
            m |= {
                f"{p}/length_trend": growth,
                f"{p}/success_trend": success_trend,
                f"{p}/corr_mean": corr_mean,
            }
            alarm = (
                domain in cfg.domains
                and growth > cfg.length_growth
                and success_trend < cfg.success_growth
                and corr_mean > cfg.min_corr
                and (ratio is None or ratio > cfg.alarm_ratio)
            )
            m[f"{p}/alarm"] = float(alarm)
            if alarm:
                t.alarms += 1
                self._on_alarm(trainer, domain, growth, success_trend, corr_mean)
        return m

    def _on_alarm(self, trainer, domain: str, growth: float, success_trend: float, corr: float) -> None:
        cfg = self.config
        what = (
            f"length seeking in domain {domain!r} at step {trainer.step + 1}: mean length +{growth:.1%}/step "
            f"while success {success_trend:+.3f}/step, reward-length Spearman {corr:.2f}"
        )
        log.warning(what)
        if cfg.on_alarm == "stop":
            raise LengthSeeking(what + " (length_bias.on_alarm = stop)")
        if cfg.on_alarm == "lower_weight":
            lower_domain_weight(trainer, domain, cfg.weight_factor)


@dataclass(frozen=True)
class RuleOrder:
    """How a judge orders the responses to one prompt beside a rule: of the pairs the rule tells apart,
    ``right`` (as the rule), ``wrong`` (the other way), ``tied``; of the pairs the rule ties, ``split``:
    the judge tells them apart anyway (an advantage the rule would not give)."""

    right: int = 0
    wrong: int = 0
    tied: int = 0
    split: int = 0

    def __add__(self, other: RuleOrder) -> RuleOrder:
        return RuleOrder(
            self.right + other.right,
            self.wrong + other.wrong,
            self.tied + other.tied,
            self.split + other.split,
        )

    @property
    def share(self) -> float:
        """Pairs the rule tells apart that the judge orders as the rule does, ties as half (0.5: chance)."""
        n = self.right + self.wrong + self.tied
        return (self.right + self.tied / 2) / n if n else float("nan")


def order_against_rule(groups: Iterable[Sequence[tuple[float, float]]]) -> RuleOrder:
    """Each group's (rule score, judge score) per response, every pair within a group compared."""
    right = wrong = tied = split = 0
    for group in groups:
        for (ra, ja), (rb, jb) in combinations(group, 2):
            if ra == rb:
                split += ja != jb
                continue
            d = (ja - jb) * (ra - rb)
            right, wrong, tied = right + (d > 0), wrong + (d < 0), tied + (d == 0)
    return RuleOrder(right, wrong, tied, split)


def rule_order(recs: Sequence[_Record]) -> tuple[int, int, int]:
    """Of the pairs of responses to one prompt that the success rule tells apart, how many the judge's
    raw reward orders as the rule does, the other way, or ties: whether the group-relative advantages the
    policy trains on point where the rule does, which a mean reward rising beside success cannot show."""
    by_group: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for r in recs:
        if r.success is not None:
            by_group[r.group].append((r.success, r.raw))
    o = order_against_rule(by_group.values())
    return o.right, o.wrong, o.tied


def lower_domain_weight(trainer, domain: str, factor: float) -> None:
    """Scale the sampling weight of one domain's items for the later steps: through the stage's mixture
    hook when it has one (it sets the pool's weights every step and keeps the factor), else directly."""
    for hook in trainer.step_hooks:
        if hasattr(hook, "scale_domain"):
            hook.scale_domain(domain, factor)
            return
    pool = trainer.pool
    weights = list(pool.weights) if pool.weights is not None else [1.0] * len(pool.items)
    scaled = [
        w * factor if item.get("domain") == domain else w for w, item in zip(weights, pool.items, strict=True)
    ]
    if sum(scaled) > 0:
        pool.set_weights(scaled)


def _groups(items: Sequence[Mapping[str, Any]], indices: list[int]) -> list[list[int]]:
    """Runs of consecutive responses to the same item (the trainer scores a prompt's G responses together)."""
    out: list[list[int]] = []
    for i in indices:
        if out and out[-1][-1] == i - 1 and items[i] is items[i - 1]:
            out[-1].append(i)
        else:
            out.append([i])
    return out
