"""A byte-level BPE tokenizer trained on the project's own corpus with Hugging Face `tokenizers`.

Byte-level (as GPT-2 / MiniMax): every string encodes, nothing maps to an unknown token. Special tokens
take the first ids, matching MiniMaxConfig's defaults (pad 0, bos 1, eos 2), so a fresh model config
and the tokenizer agree without bookkeeping. The result is a `transformers.PreTrainedTokenizerFast`,
saved with the model (`model.save_pretrained(dir, tokenizer)`) and loaded with
`AutoTokenizer.from_pretrained(dir)` or `load_tokenizer(dir)`.

Chat: `CHAT_TEMPLATE` (a Jinja template in `tokenizer_config.json`, the place `apply_chat_template` reads
it from) marks each turn with a plain-text role header and ends assistant turns with EOS, so a model
fine-tuned on ``apply_chat_template(..., add_generation_prompt=True)`` + answer + EOS stops by itself.
The headers are ordinary text, not new special tokens: the vocabulary of existing checkpoints stays valid,
and `load_tokenizer` gives checkpoints saved before the template existed the same one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

PAD, BOS, EOS = "<|pad|>", "<|bos|>", "<|eos|>"
# Written with {{ '...' }} literals: transformers renders templates with trim_blocks, which would eat a
# newline that follows a block tag.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] }}"
    "{% if message['role'] == 'assistant' %}{{ eos_token }}{% endif %}"
    "{{ '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)


def train_tokenizer(
    texts: Iterable[str],
    vocab_size: int,
    min_frequency: int = 2,
    additional_special_tokens: Sequence[str] = (),
    add_bos: bool = True,
) -> PreTrainedTokenizerFast:
    """Train byte-level BPE on texts. Ids: pad 0, bos 1, eos 2, then additional_special_tokens, then merges.

    add_bos: encoding prepends <|bos|> (decoding with skip_special_tokens drops it again).
    """
    specials = [PAD, BOS, EOS, *additional_special_tokens]
    base = len(specials) + len(pre_tokenizers.ByteLevel.alphabet())
    if vocab_size < base:
        raise ValueError(
            f"vocab_size must be at least {base} (256 byte symbols + {len(specials)} special tokens)"
        )
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    if add_bos:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, tok.token_to_id(BOS))]
        )
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        additional_special_tokens=list(additional_special_tokens),
        padding_side="left",  # generation batches pad on the left
        chat_template=CHAT_TEMPLATE,
    )


def load_tokenizer(path) -> PreTrainedTokenizerFast:
    """The tokenizer saved in a checkpoint folder (with `CHAT_TEMPLATE` when it was saved without one)."""
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(path))
    if not tokenizer.chat_template:
        tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer
