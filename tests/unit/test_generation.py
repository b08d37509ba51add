"""generate_texts on a tiny random Llama: batching, ordering, stop sequences, cache."""
import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from pipeline.generation import GenerationCache, GenerationError, generate_texts

CORPUS = ["def add(a, b):\n    return a + b\n", "The answer is 42.\n\nQuestion: why?",
          "Translate the following sentences from Polish to English.\n",
          "[BEGIN]\nprint('hello world')\n[DONE]\n"] * 20


@pytest.fixture(scope="module")
def tokenizer():
    backend = Tokenizer(models.BPE(unk_token=None))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=320, special_tokens=["<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<eos>")


@pytest.fixture(scope="module")
def model(tokenizer):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=256, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.eos_token_id)
    # float64: padded and unpadded runs then agree to far below any logit gap.
    return LlamaForCausalLM(config).to(torch.float64).eval()


PROMPTS = ["def add(a, b):", "Question: why?", "The answer", "Translate the following "
           "sentences from Polish to English.\n", "[BEGIN]\nprint(", "x"]


def test_batched_generation_equals_one_by_one_in_the_callers_order(model, tokenizer):
    one_by_one = [generate_texts(model, tokenizer, [p], max_new_tokens=12, progress=False)[0]
                  for p in PROMPTS]
    batched = generate_texts(model, tokenizer, PROMPTS, max_new_tokens=12, batch_size=4,
                             progress=False)
    assert batched == one_by_one
    assert len(set(batched)) > 1  # the prompts really lead to different completions


def test_completion_is_cut_at_the_earliest_stop_sequence(model, tokenizer):
    full = generate_texts(model, tokenizer, PROMPTS, max_new_tokens=24, progress=False)
    # Stop sequences taken from inside the unconstrained completions themselves.
    index, text = max(enumerate(full), key=lambda pair: len(pair[1]))
    late, early = text[len(text) // 2: len(text) // 2 + 2], text[3:5]
    stopped = generate_texts(model, tokenizer, PROMPTS, max_new_tokens=24,
                             stop=[late, early], batch_size=3, progress=False)
    for unconstrained, result in zip(full, stopped):
        cuts = [unconstrained.find(s) for s in (late, early) if s in unconstrained]
        expected = unconstrained[:min(cuts)] if cuts else unconstrained
        assert result == expected
    assert stopped[index] == text[:text.find(early)]


def test_sampling_returns_n_sequences_per_prompt(model, tokenizer):
    samples = generate_texts(model, tokenizer, PROMPTS[:2], max_new_tokens=6, do_sample=True,
                             temperature=1.0, num_return_sequences=3, progress=False)
    assert [len(s) for s in samples] == [3, 3]
    again = generate_texts(model, tokenizer, PROMPTS[:2], max_new_tokens=6, do_sample=True,
                           temperature=1.0, num_return_sequences=3, progress=False)
    assert samples == again  # seeded


def test_cache_returns_stored_completions_without_generating(model, tokenizer, tmp_path):
    cache = GenerationCache(tmp_path / "cache.jsonl", model_id="tiny")
    first = generate_texts(model, tokenizer, PROMPTS, max_new_tokens=8, cache=cache,
                           progress=False)
    reloaded = GenerationCache(tmp_path / "cache.jsonl", model_id="tiny")

    class NoGenerate:
        def generate(self, *args, **kwargs):
            raise AssertionError("generate called despite a cache hit")

        def parameters(self):
            return iter([])

    assert generate_texts(NoGenerate(), tokenizer, PROMPTS, max_new_tokens=8,
                          cache=reloaded, progress=False) == first
    # Other settings are another cache entry.
    assert reloaded.get(PROMPTS[0], {"max_new_tokens": 9}) is None


def test_beam_search_gives_the_best_beam_in_the_callers_order_and_is_its_own_cache_entry(model, tokenizer, tmp_path):
    """num_beams > 1: each completion is the text of transformers' best beam for that prompt alone (batched, sorted
    by length, and left-padded as usual), and a cache keeps beam and greedy completions apart."""
    beams = generate_texts(model, tokenizer, PROMPTS, max_new_tokens=10, num_beams=3, batch_size=4, progress=False)
    for prompt, completion in zip(PROMPTS, beams):
        ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
        best = model.generate(ids, max_new_tokens=10, num_beams=3, do_sample=False, pad_token_id=tokenizer.eos_token_id)
        assert completion == tokenizer.decode(best[0, ids.shape[1]:], skip_special_tokens=True)
    greedy = generate_texts(model, tokenizer, PROMPTS, max_new_tokens=10, progress=False)
    assert beams != greedy  # the search finds other text for some prompt
    cache = GenerationCache(tmp_path / "cache.jsonl", model_id="tiny")
    assert generate_texts(model, tokenizer, PROMPTS, max_new_tokens=10, cache=cache, progress=False) == greedy
    assert generate_texts(model, tokenizer, PROMPTS, max_new_tokens=10, num_beams=3, cache=cache,
                          progress=False) == beams


def test_bad_arguments_are_one_line_errors(model, tokenizer):
    with pytest.raises(GenerationError, match="max_new_tokens"):
        generate_texts(model, tokenizer, PROMPTS, max_new_tokens=0)
    with pytest.raises(GenerationError, match="do_sample"):
        generate_texts(model, tokenizer, PROMPTS, max_new_tokens=4, num_return_sequences=2)
    with pytest.raises(GenerationError, match="num_beams must be >= 1"):
        generate_texts(model, tokenizer, PROMPTS, max_new_tokens=4, num_beams=0)
    with pytest.raises(GenerationError, match="beam search: it takes do_sample=False"):
        generate_texts(model, tokenizer, PROMPTS, max_new_tokens=4, num_beams=2, do_sample=True)
    with pytest.raises(GenerationError, match="list of strings"):
        generate_texts(model, tokenizer, "one prompt", max_new_tokens=4)


def test_generation_stops_early_once_every_row_has_a_stop(model, tokenizer):
    """With a stop sequence found early in every row, generate() must not run to the cap."""
    full = generate_texts(model, tokenizer, PROMPTS[:3], max_new_tokens=40, progress=False)
    stop = [text[1:3] for text in full]  # each row hits its own stop by its 3rd character
    calls = []
    original_forward = model.forward

    def counting_forward(*args, **kwargs):
        calls.append(1)
        return original_forward(*args, **kwargs)

    model.forward = counting_forward
    try:
        stopped = generate_texts(model, tokenizer, PROMPTS[:3], max_new_tokens=40, stop=stop,
                                 batch_size=3, progress=False)
    finally:
        del model.forward
    assert len(calls) < 20  # a few steps, not 40
    for unconstrained, result in zip(full, stopped):
        cuts = [unconstrained.find(s) for s in stop if s in unconstrained]
        assert result == unconstrained[:min(cuts)]
